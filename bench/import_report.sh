#!/usr/bin/env bash
# Import + report of >= 1M-sample perf.data files (system-wide and deep call chains):
# kairos versus perf report, side by side. See bench/README.md. Environment: BENCH_REPS
# (default 5), BENCH_FILES ("system deep"), BENCH_MIN_SAMPLES (1000000),
# BENCH_RECORD_SECONDS (10), BENCH_PERF_DATA / BENCH_DEEP_PERF_DATA (use these files
# instead of recording), BENCH_PERF_DEFAULT=1 (also perf's default report), KAIROS (binary),
# BENCH_KAIROS_BASE (another kairos build timed alongside, e.g. before a change).
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
if [[ " ${BENCH_FILES:-system deep} " == *" deep "* && -z "${BENCH_DEEP_PERF_DATA:-}" ]]; then
    command -v "${CC:-cc}" >/dev/null || die "no C compiler (${CC:-cc}) to build bench/lib/deep.c; install gcc or set CC"
fi
exec python3 -B "$here/lib/import_report.py" "$kairos" "$samples" "$here/lib/deep.c" "$@"
