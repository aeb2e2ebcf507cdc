#!/usr/bin/env bash
# Overhead of `kairos collect latency` side by side with perf doing the same: each request
# boundary source per request against the program alone, the off-CPU tracing per context
# switch against `perf record -e sched:sched_switch -g`, and the whole collection at 1 and
# 10 kHz against perf record of the same events. See bench/README.md. Environment:
# BENCH_REPS (default 5), BENCH_REQUESTS (default 6000), KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"
samples="${KAIROS_SAMPLES:-$root/target/release/samples}"

die() { echo "latency_overhead: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 not found (the benchmark logic is Python 3, stdlib only)"
command -v perf >/dev/null || die "perf not found; install it (e.g. apt-get install linux-perf) to compare against it"
[[ -x "$kairos" ]] || die "kairos binary not found at $kairos; build it first: (cd $root && cargo build --release)"
[[ -x "$samples/orders" ]] || die "sample program $samples/orders not found; build it first: (cd $root && cargo build --release)"
[[ "$(id -u)" -eq 0 ]] || die "run as root: uprobes, USDT and the scheduler's tracepoints need it"
exec python3 -B "$here/lib/latency_overhead.py" "$kairos" "$samples" "$@"
