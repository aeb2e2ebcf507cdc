#!/usr/bin/env bash
# Address sampling (`kairos collect memory-access`, no PMU) versus
# `perf record -e cpu-clock --user-regs` at the same interval, side by side.
# See bench/README.md. Environment: BENCH_REPS (default 5), BENCH_INTERVAL_US (default 250),
# BENCH_ITERATIONS (false_sharing's, default 3000000000), KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"
samples="${KAIROS_SAMPLES:-$root/target/release/samples}"

die() { echo "memory_access: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 not found (the benchmark logic is Python 3, stdlib only)"
command -v perf >/dev/null || die "perf not found; install it (e.g. apt-get install linux-perf) to compare against it"
[[ -x "$kairos" ]] || die "kairos binary not found at $kairos; build it first: (cd $root && cargo build --release)"
[[ -x "$samples/false_sharing" ]] || die "sample program $samples/false_sharing not found; build it first: (cd $root && cargo build --release)"
exec python3 -B "$here/lib/memory_access.py" "$kairos" "$samples" "$@"
