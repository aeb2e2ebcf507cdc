#!/usr/bin/env bash
# kairos view at scale: a 10-million-sample result's first view and zoom/filter answers,
# and, side by side with perf report, the way from a perf.data to a first look.
# See bench/README.md. Environment: BENCH_REPS (default 5), BENCH_SAMPLES (10000000),
# BENCH_FUNCTIONS (5000), BENCH_PERF_ITER (transitions iterations recorded, 10000),
# KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"
samples="${KAIROS_SAMPLES:-$root/target/release/samples}"

die() { echo "view_scale: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 not found (the benchmark logic is Python 3, stdlib only)"
command -v perf >/dev/null || die "perf not found; install it (e.g. apt-get install linux-perf) to compare against it"
[[ -x "$kairos" ]] || die "kairos binary not found at $kairos; build it first: (cd $root && cargo build --release)"
[[ -x "$samples/transitions" ]] || die "sample program $samples/transitions not found; build it first: (cd $root && cargo build --release)"
exec python3 "$here/lib/view_scale.py" "$kairos" "$samples" "$root/web" "$@"
