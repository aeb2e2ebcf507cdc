#!/bin/sh
# The cache-allocation recipe (SYSTEM.md section 5, issue 13): a real-time loop that reads
# a 128 KB buffer every 10 ms (samples/rt_loop), measured
#   1. alone,
#   2. with a noisy neighbour streaming a large buffer (samples/cache_thrash),
#   3. with the neighbour and N cache ways of its own (kairos run --cache-ways),
#   4. with the neighbour and its ways pseudo-locked (--lock; few CPUs support it),
# then each step's latency against step 1 as ratios. Steps that this machine cannot run
# (no resctrl, no pseudo-locking) say why and are left out of the comparison: nothing
# is estimated in their place.
#
# usage: scripts/cache-recipe.sh [--ways N] [--level L2|L3] [--iterations N]
#                                [--rt-cpu C] [--noisy-cpu C] [--out DIR]
#   defaults: 4 ways, L3, 300 iterations (3 s per step), CPUs 0 and 1, a temp dir.
# Environment: KAIROS (default target/release/kairos); the samples are next to it.
set -eu

ways=4 level=L3 iterations=300 rt_cpu=0 noisy_cpu=1 out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --ways) ways=$2; shift 2 ;;
        --level) level=$2; shift 2 ;;
        --iterations) iterations=$2; shift 2 ;;
        --rt-cpu) rt_cpu=$2; shift 2 ;;
        --noisy-cpu) noisy_cpu=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--ways N] [--level L2|L3] [--iterations N] [--rt-cpu C] [--noisy-cpu C] [--out DIR]" >&2; exit 2 ;;
    esac
done
kairos=${KAIROS:-target/release/kairos}
samples=$(dirname "$kairos")/samples
[ -x "$kairos" ] && [ -x "$samples/rt_loop" ] && [ -x "$samples/cache_thrash" ] || {
    echo "cache-recipe: build first (cargo build --release): need $kairos and $samples/rt_loop, cache_thrash" >&2; exit 1; }
[ -n "$out" ] || out=$(mktemp -d /tmp/kairos-cache-recipe.XXXXXX)
mkdir -p "$out"
# The neighbour runs longer than any step; it is stopped after each.
noisy_s=$(( iterations / 50 + 30 ))
rt="$samples/rt_loop --iterations $iterations --cpu $rt_cpu"

neighbour_pid=""
start_neighbour() {
    "$samples/cache_thrash" --cpu "$noisy_cpu" --seconds "$noisy_s" > "$out/neighbour-$1.txt" &
    neighbour_pid=$!
    sleep 0.3 # let it fill the cache first
}
stop_neighbour() {
    [ -n "$neighbour_pid" ] && kill "$neighbour_pid" 2>/dev/null && wait "$neighbour_pid" 2>/dev/null || true
    neighbour_pid=""
}
trap stop_neighbour EXIT INT TERM

echo "cache-recipe: results in $out"
echo "step 1: rt_loop alone on CPU $rt_cpu"
$rt > "$out/1-alone.txt"
echo "step 2: rt_loop with cache_thrash on CPU $noisy_cpu"
start_neighbour 2; $rt > "$out/2-neighbour.txt"; stop_neighbour
echo "step 3: rt_loop with the neighbour and $ways $level ways of its own"
start_neighbour 3
if ! "$kairos" run --cache-ways "$ways" --level "$level" --cpus "$rt_cpu" -r "$out/3-ways.result" -- $rt > "$out/3-ways.txt" 2> "$out/3-ways.err"; then
    echo "step 3 not measured here: $(cat "$out/3-ways.err")"; rm -f "$out/3-ways.txt"
fi
stop_neighbour
echo "step 4: rt_loop with the neighbour and its $ways ways pseudo-locked"
start_neighbour 4
if ! "$kairos" run --cache-ways "$ways" --level "$level" --cpus "$rt_cpu" --lock -- $rt > "$out/4-locked.txt" 2> "$out/4-locked.err"; then
    echo "step 4 not measured here: $(cat "$out/4-locked.err")"; rm -f "$out/4-locked.txt"
fi
stop_neighbour

echo
echo "step          median_ns    p99_ns   mean_ns  p99 vs alone  mean vs alone"
base=$(grep '^rt_loop: iterations' "$out/1-alone.txt")
for f in 1-alone 2-neighbour 3-ways 4-locked; do
    [ -f "$out/$f.txt" ] || { printf '%-12s  not measured here (see above)\n' "$f"; continue; }
    grep '^rt_loop: iterations' "$out/$f.txt" | awk -v name="$f" -v base="$base" '
        function field(s, key,   n, a, i) { n = split(s, a, " "); for (i = 1; i < n; i++) if (a[i] == key) return a[i + 1]; return 0 }
        { p99 = field($0, "p99_ns"); mean = field($0, "mean_ns"); bp = field(base, "p99_ns"); bm = field(base, "mean_ns")
          printf "%-12s %10d %9d %9d %12.2fx %13.2fx\n", name, field($0, "median_ns"), p99, mean, p99 / bp, mean / bm }'
done
echo
echo "LLC misses of rt_loop (the recipe's LLC Miss Count) need a hardware PMU; see kairos info (hardware_pmu)."
