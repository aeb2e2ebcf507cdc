#!/usr/bin/env bash
# Import + report of a >= 1M-sample perf.data: kairos versus perf report, side by side.
# See bench/README.md. Environment: BENCH_REPS (default 5), BENCH_MIN_SAMPLES (default
# 1000000), BENCH_RECORD_SECONDS (default 10), BENCH_PERF_DATA (use this file instead of
# recording one), KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"
samples="${KAIROS_SAMPLES:-$root/target/release/samples}"

die() { echo "import_report: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 not found (the benchmark logic is Python 3, stdlib only)"
command -v perf >/dev/null || die "perf not found; install it (e.g. apt-get install linux-perf) to compare against it"
[[ -x /usr/bin/time ]] || die "/usr/bin/time (GNU time) not found; install it (apt-get install time)"
[[ -x "$kairos" ]] || die "kairos binary not found at $kairos; build it first: (cd $root && cargo build --release)"
[[ -x "$samples/transitions" ]] || die "sample program $samples/transitions not found; build it first: (cd $root && cargo build --release)"
exec python3 "$here/lib/import_report.py" "$kairos" "$samples" "$@"
