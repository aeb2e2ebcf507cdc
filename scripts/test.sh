#!/usr/bin/env bash
# Builds everything and runs every test: unit, golden, fixture (perf script as oracle),
# and integration tests that really collect on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Formatting first: it takes a second and says exactly which lines differ.
if ! cargo fmt --version >/dev/null 2>&1; then
    rustup component add rustfmt >/dev/null 2>&1 || true
fi
if cargo fmt --version >/dev/null 2>&1; then
    cargo fmt --all --check
else
    echo "FORMATTING NOT CHECKED: rustfmt is not installed and rustup could not add it" >&2
fi
# Tests run on the release build so that one compilation serves the binary and the tests.
cargo build --release --workspace --locked
# The fuzzer's regression inputs and seeds, replayed without AFL (fuzz/ is its own workspace).
cargo test --release --manifest-path fuzz/Cargo.toml
# Every test binary runs even after one fails (--no-fail-fast), so that one run shows every
# failure; cargo's verdict is the script's.
cargo test --release --workspace --locked --no-fail-fast 2>&1 | tee target/test.log
exit "${PIPESTATUS[0]}"
