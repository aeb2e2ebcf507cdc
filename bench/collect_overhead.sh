#!/usr/bin/env bash
# Collection overhead of `kairos collect hotspots` versus `perf record`, side by side.
# See bench/README.md. Environment: BENCH_REPS (default 5), BENCH_INTERVALS_US
# (default "1000 100 10"), BENCH_PROGRAMS (default "transitions matrix"), KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"
samples="${KAIROS_SAMPLES:-$root/target/release/samples}"

die() { echo "collect_overhead: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 not found (the benchmark logic is Python 3, stdlib only)"
command -v perf >/dev/null || die "perf not found; install it (e.g. apt-get install linux-perf) to compare against it"
[[ -x /usr/bin/time ]] || die "/usr/bin/time (GNU time) not found; install it (apt-get install time)"
[[ -x "$kairos" ]] || die "kairos binary not found at $kairos; build it first: (cd $root && cargo build --release)"
for p in transitions matrix; do
    [[ -x "$samples/$p" ]] || die "sample program $samples/$p not found; build it first: (cd $root && cargo build --release)"
done
exec python3 -B "$here/lib/collect_overhead.py" "$kairos" "$samples" "$@"
