#!/usr/bin/env bash
# Allocation-tracking overhead: Kairos' tracker versus heaptrack (Debian package) on
# samples/mallocs (2,000,000 malloc/free pairs), side by side in one run.
#
# Per repetition, in an order that rotates so no tool always runs first (cache, CPU
# frequency), it times:
#   plain     the program alone
#   tracker   the program with only libkairos_memtrack.so preloaded (the recording itself)
#   kairos    `kairos collect memory-consumption` (recording + decoding, symbolisation,
#             Parquet tables, summary)
#   heaptrack `heaptrack -o FILE PROGRAM` (recording + its interpreter + compression)
# and prints the median wall time of each, the time each adds to the plain run, the ratio
# to heaptrack's added time, and the peak memory of each run's largest process (GNU time's
# maximum resident set: the program itself for plain, the collector or heaptrack's
# interpreter when they are larger).
# Goals, end to end (recording, decoding, tables and summary: nothing left for `report`):
#   kairos adds at most heaptrack's time, and peaks at no more memory than heaptrack;
#   the tracker alone adds at most a quarter of heaptrack's time.
#
# Environment: BENCH_REPS (default 5), BENCH_PAIRS (default 2000000), KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"
prog="${KAIROS_SAMPLES:-$root/target/release/samples}/mallocs"
lib="$(dirname "$kairos")/lib/libkairos_memtrack.so"
reps="${BENCH_REPS:-5}"
pairs="${BENCH_PAIRS:-2000000}"

die() { echo "memtrack_vs_heaptrack: $*" >&2; exit 2; }
if ! command -v heaptrack >/dev/null; then
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "installing heaptrack (apt-get install heaptrack) ..." >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq heaptrack >/dev/null || die "could not install heaptrack"
    else
        die "heaptrack not found; install it (Debian/Ubuntu: apt-get install heaptrack)"
    fi
fi
if [[ ! -x /usr/bin/time ]]; then
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null || die "could not install GNU time"
    else
        die "GNU time (/usr/bin/time) not found; install it (Debian/Ubuntu: apt-get install time)"
    fi
fi
[[ -x "$kairos" ]] || die "kairos not found at $kairos; build it first: (cd $root && cargo build --release)"
[[ -x "$prog" ]] || die "$prog not found; build it first: (cd $root && cargo build --release)"
[[ -f "$lib" ]] || die "$lib not found; build it first: (cd $root && cargo build --release)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

now() { date +%s%N; }
# time_one NAME CMD...: runs CMD quietly, appends its wall time (ns) to $work/NAME and the
# largest maximum resident set of it and its children (KiB) to $work/NAME.rss.
time_one() {
    local name="$1"; shift
    local t0 t1
    t0=$(now)
    /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; die "$name run failed: $*"; }
    t1=$(now)
    echo $((t1 - t0)) >>"$work/$name"
    tail -n 1 "$work/rss" >>"$work/$name.rss"
}

run() {
    local name="$1" i="$2"
    case "$name" in
        plain) time_one plain "$prog" "$pairs" ;;
        tracker)
            mkdir -p "$work/t$i"
            time_one tracker env LD_PRELOAD="$lib" KAIROS_MEMTRACK_DIR="$work/t$i" "$prog" "$pairs"
            rm -rf "$work/t$i" ;;
        kairos)
            time_one kairos "$kairos" collect memory-consumption -q -r "$work/k$i" -- "$prog" "$pairs"
            rm -rf "$work/k$i" ;;
        heaptrack)
            time_one heaptrack heaptrack -o "$work/h$i" "$prog" "$pairs"
            rm -f "$work/h$i"* ;;
    esac
}

tools=(plain tracker kairos heaptrack)
echo "memtrack_vs_heaptrack: $pairs malloc/free pairs, $reps repetitions, $(nproc) CPUs" >&2
run plain 0; : >"$work/plain"   # warm-up (page cache, binaries), not counted
for ((i = 0; i < reps; i++)); do
    for ((j = 0; j < ${#tools[@]}; j++)); do
        run "${tools[$(((i + j) % ${#tools[@]}))]}" "$i"
    done
done

median() { sort -n "$work/$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }
base=$(median plain)
heap=$(median heaptrack)
heap_added=$((heap - base))
printf '\n%-10s %12s %12s %18s %14s\n' "run" "median (s)" "added (s)" "added / heaptrack" "peak (MiB)"
for t in "${tools[@]}"; do
    m=$(median "$t")
    added=$((m - base))
    awk -v n="$t" -v m="$m" -v a="$added" -v h="$heap_added" -v r="$(median "$t.rss")" \
        'BEGIN { q = (n == "plain") ? "-" : sprintf("%.3f", (h > 0) ? a / h : 0);
                 printf "%-10s %12.3f %12.3f %18s %14.1f\n", n, m / 1e9, a / 1e9, q, r / 1024 }'
done
awk -v a="$(($(median kairos) - base))" -v t="$(($(median tracker) - base))" -v h="$heap_added" \
    -v km="$(median kairos.rss)" -v hm="$(median heaptrack.rss)" -v p="$pairs" \
    'BEGIN { printf "\nper malloc/free pair added: kairos %.0f ns, tracker %.0f ns, heaptrack %.0f ns\n", a / p, t / p, h / p;
             printf "peak memory: kairos %.1f MiB, heaptrack %.1f MiB (%.2fx)\n", km / 1024, hm / 1024, (hm > 0) ? km / hm : 0;
             ok = (h > 0 && a <= h); printf "goal %s: kairos end to end adds %s heaptrack'"'"'s time (%.2fx)\n", ok ? "met" : "NOT met", ok ? "at most" : "more than", (h > 0) ? a / h : 0;
             ok = (hm > 0 && km <= hm); printf "goal %s: kairos peaks at %s memory than heaptrack\n", ok ? "met" : "NOT met", ok ? "no more" : "more";
             ok = (h > 0 && t <= h / 4); printf "goal %s: the tracker alone adds %s a quarter of heaptrack'"'"'s time (%.2fx)\n", ok ? "met" : "NOT met", ok ? "at most" : "more than", (h > 0) ? t / h : 0 }'
