#!/usr/bin/env bash
# Builds everything and runs every test: unit, golden, fixture (perf script as oracle),
# and integration tests that really collect on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# have TOOL: whether `cargo TOOL` runs, after asking rustup for it once if it does not.
have() {
    cargo "$1" --version >/dev/null 2>&1 && return 0
    rustup component add "$1" >/dev/null 2>&1 || true
    cargo "$1" --version >/dev/null 2>&1
}
# Formatting first: it takes a second and says exactly which lines differ.
if have fmt; then
    cargo fmt --all --check
else
    echo "FORMATTING NOT CHECKED: rustfmt is not installed and rustup could not add it" >&2
fi
# The agent's tests need an OpenTelemetry Collector built from its Go modules: built
# beside the Rust build, whose last steps leave a CPU free (the tests wait on its lock,
# and build it themselves, saying why, if this one failed).
mkdir -p "${CARGO_TARGET_DIR:-target}"
nice -n 10 bash scripts/otelcol/build.sh > "${CARGO_TARGET_DIR:-target}/otelcol-build.log" 2>&1 &
otelcol_build=$!
trap 'kill "$otelcol_build" 2>/dev/null || true' EXIT
# Tests run on the release build so that one compilation serves the binary and the tests.
cargo build --release --workspace --locked
# Lints on every target, tests included (clippy.toml lets tests unwrap and panic); a
# warning fails the run.
if have clippy; then
    cargo clippy --release --workspace --all-targets --locked -- -D warnings
else
    echo "LINTS NOT CHECKED: clippy is not installed and rustup could not add it" >&2
fi
# The fuzzer's regression inputs and seeds, replayed without AFL (fuzz/ is its own workspace).
cargo test --release --manifest-path fuzz/Cargo.toml
# Every test binary runs even after one fails (--no-fail-fast), so that one run shows every
# failure; cargo's verdict is the script's.
wait "$otelcol_build" || true
cargo test --release --workspace --locked --no-fail-fast 2>&1 | tee target/test.log
exit "${PIPESTATUS[0]}"
