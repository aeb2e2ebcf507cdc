#!/usr/bin/env bash
# kairos query over a fleet root, side by side with DuckDB (the engine a user would
# otherwise point at the same Parquet files): the same views, defined from
# crates/fleet/src/views.sql over the same layout, the same query text, each a fresh
# process per run (start-up included, as a user runs them), answers compared. See
# bench/README.md. Environment: BENCH_REPS (default 5), BENCH_RESULTS (4),
# BENCH_SAMPLES (samples per result, 2500000), BENCH_FUNCTIONS (5000), KAIROS (binary).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
kairos="${KAIROS:-$root/target/release/kairos}"

die() { echo "query_fleet: $*" >&2; exit 2; }
command -v python3 >/dev/null || die "python3 not found"
python3 -c 'import duckdb' 2>/dev/null || die "the duckdb Python module is missing (bash scripts/install-deps.sh installs it)"
[[ -x "$kairos" ]] || die "kairos binary not found at $kairos; build it first: (cd $root && cargo build --release)"
exec python3 -B "$here/lib/query_fleet.py" "$kairos" "$root/crates/fleet/src/views.sql" "$@"
