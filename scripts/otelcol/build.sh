#!/usr/bin/env bash
# Builds the OpenTelemetry Collector that the agent's tests send profiles to, or finds it
# in the cache: the collector builder and the core modules (the OTLP receiver, the OTLP/HTTP
# exporter that hands what it received on to the test, the debug exporter), all from the Go
# module proxy at one version. See README.md beside this file.
#
# usage: build.sh
# Prints the collector binary's path as the last line of stdout. Exit status 0; 3 when it
# cannot be built here (the reason on stderr).
#
# Environment: CARGO_TARGET_DIR; KAIROS_OTELCOL_CACHE (default <target>/otelcol);
# KAIROS_OTELCOL_VERSION (default 0.165.0).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
cache=${KAIROS_OTELCOL_CACHE:-$target/otelcol}
version=${KAIROS_OTELCOL_VERSION:-0.165.0}
dist=$cache/otelcol-kairos-$version
bin=$dist/otelcol-kairos

fail() { echo "otelcol: cannot build the collector: $*" >&2; exit 3; }
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || fail "Go is not installed (it builds the collector from its modules; install Go 1.24 or newer)"
mkdir -p "$cache/bin" "$cache/gocache"
# One build at a time (tests run in parallel); who waited finds the binary made.
exec 9>"$cache/.build-lock"
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
export GOBIN=$cache/bin GOFLAGS=-mod=mod
# Go's build cache is the user's unless set; the module cache stays the user's (shared).
export GOCACHE=${GOCACHE:-$cache/gocache}
echo "otelcol: building OpenTelemetry Collector $version (about 2 minutes on 2 cores, once)" >&2
go install "go.opentelemetry.io/collector/cmd/builder@v$version" >&2 \
    || fail "the collector builder v$version did not install from the Go module proxy"
cat > "$cache/builder-$version.yaml" <<YAML
dist:
  name: otelcol-kairos
  description: OpenTelemetry Collector for the tests of kairos agent
  output_path: $dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$version
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v$version
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter v$version
YAML
"$cache/bin/builder" --config="$cache/builder-$version.yaml" >&2 \
    || fail "the collector builder failed (its output is above)"
[ -x "$bin" ] || fail "the builder finished without writing $bin"
echo "$bin"
