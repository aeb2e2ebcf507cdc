#!/usr/bin/env bash
# The agent's own cost on a busy machine: `kairos agent` at 19 Hz per CPU (windows of 10 s,
# sent to an HTTP server on 127.0.0.1) side by side with `perf record -a -g -F 19` over
# the same time, each tool's CPU time as a share of one CPU, while every CPU runs a busy
# program. See bench/README.md. Environment: BENCH_REPS (default 2), BENCH_SECONDS
# (default 40), BENCH_HZ (default 19), KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"
samples="${KAIROS_SAMPLES:-$root/target/release/samples}"

die() { echo "agent_overhead: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 not found (the benchmark logic is Python 3, stdlib only)"
command -v perf >/dev/null || die "perf not found; install it (e.g. apt-get install linux-perf) to compare against it"
[[ -x "$kairos" ]] || die "kairos binary not found at $kairos; build it first: (cd $root && cargo build --release)"
[[ -x "$samples/shares" ]] || die "sample program $samples/shares not found; build it first: (cd $root && cargo build --release)"
[[ "$(id -u)" -eq 0 ]] || die "run as root: sampling every process needs it"
exec python3 -B "$here/lib/agent_overhead.py" "$kairos" "$samples" "$root/crates/cli/tests/support/http_sink.py" "$@"
