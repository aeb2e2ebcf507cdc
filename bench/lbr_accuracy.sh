#!/bin/sh
# LBR accuracy benchmark (issues 3 and 14): every time-assignment method x emulated LBR
# depth (16, 32) x sampling interval (1000, 100, 10000 us) x cycles (LBR's 16-bit
# counts, none) on exact traces of `transitions` and `spikes` made by
# `kairos collect trace`, each cell emulated with several seeds (sampling phases).
# Prints a markdown table (mean ±sd over seeds) headed by the date, machine, trace
# length and seeds: what crates/lab/README.md shows under "Last measured".
#
# Goals (issue 14) for the default method (`covered`): never worse than `none` in a cell
# beyond that cell's noise (last column says **worse**), 2x better where the records
# cover >= 10% of the interval, >= 90% recall of the 100 us delays at 1 ms.
#
# usage: bench/lbr_accuracy.sh [SECONDS] [SEEDS]     (defaults: 2 s, seeds 1,2,3,4,5)
# Needs `cargo build --release` (kairos, samples) first; builds the lab example itself.
# KAIROS=path overrides the binary. Traces take wall time for thread time: run it on an
# idle machine, as preemption stretches the traced calls.
# The synthetic table (same on every machine):
#   cargo run --release -p kairos-lab --example lbr_accuracy
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
k="${KAIROS:-$root/target/release/kairos}"
samples="$root/target/release/samples"
secs=${1:-2}
seeds=${2:-1,2,3,4,5}
[ -x "$k" ] || { echo "lbr_accuracy: $k not found; run cargo build --release first" >&2; exit 2; }
[ -x "$samples/spikes-instrumented" ] || { echo "lbr_accuracy: $samples/spikes-instrumented not found; run cargo build --release first" >&2; exit 2; }
(cd "$root" && cargo build --release -q -p kairos-lab --example lbr_accuracy)
work=$(mktemp -d "${TMPDIR:-/tmp}/kairos-lbr-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$k" collect trace -q -r "$work/t_spikes" -- "$samples/spikes-instrumented" "$work/delays.txt" "$secs" >/dev/null
"$k" collect trace -q -r "$work/t_transitions" -- "$samples/transitions-instrumented" $(awk "BEGIN{print int($secs*1650)}") >/dev/null
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n) ($(nproc) CPUs, ${cpu:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg)),"
echo "kairos $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'): real traces of ${secs} s, \`bench/lbr_accuracy.sh $secs $seeds\`."
echo
"$root/target/release/examples/lbr_accuracy" --seeds "$seeds" --cycles yes,no \
  --trace "transitions=$work/t_transitions" --trace "spikes=$work/t_spikes"
