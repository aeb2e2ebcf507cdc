#!/usr/bin/env bash
# Installs what building and testing need and a fresh machine may lack. Idempotent and
# quiet when everything is there already.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
command -v perf >/dev/null || need_apt+=(linux-perf)
command -v objcopy >/dev/null || need_apt+=(binutils)
# The trace tests compare `kairos collect trace` with uftrace call for call.
command -v uftrace >/dev/null || need_apt+=(uftrace)
# The latency tests put request boundaries on the orders sample's USDT probes (sys/sdt.h).
echo '#include <sys/sdt.h>' | cc -E -x c - >/dev/null 2>&1 || need_apt+=(systemtap-sdt-dev)
# The memory-consumption tests compare the allocation tracker with valgrind DHAT.
command -v valgrind >/dev/null || need_apt+=(valgrind)
# Symbols from debuginfod are tested against elfutils' own server.
command -v debuginfod >/dev/null || need_apt+=(debuginfod)
# The page of `kairos view` is TypeScript built with npm packages, and its tests drive
# Debian's Chromium headless (never a downloaded browser).
command -v npm >/dev/null || need_apt+=(nodejs npm)
command -v chromium >/dev/null || need_apt+=(chromium)
# The NUMA test machine (scripts/numa-vm): QEMU, and a static busybox for its initramfs.
command -v qemu-system-x86_64 >/dev/null || need_apt+=(qemu-system-x86)
{ [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || need_apt+=(busybox-static)
# The agent's tests build an OpenTelemetry Collector from its Go modules (scripts/otelcol);
# an older Go fetches the toolchain the modules ask for from the module proxy by itself.
command -v go >/dev/null || need_apt+=(golang-go)
# The agent's clock-jump test moves its wall clock with libfaketime.
command -v faketime >/dev/null || need_apt+=(faketime)
# The fleet tests read the published layout with Spark (pyspark runs on a Java 17 or newer).
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing ${need_apt[*]}; run this script as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The export tests validate speedscope files against speedscope's JSON schema.
if ! python3 -c 'import jsonschema' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check jsonschema
fi
# DuckDB reads the Parquet tables in a test, proving they are usable without Kairos.
if ! python3 -c 'import duckdb' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check duckdb
fi
# The fleet tests: Spark (pyspark, local mode) runs the same views over the layout, and
# moto's S3 server on 127.0.0.1 stands for object storage.
if ! python3 -c 'import pyspark' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check 'pyspark==4.3.0'
fi
if ! python3 -c 'import moto.server' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check 'moto[server]'
fi
# The page's build tools and the browser-test driver (web/package-lock.json).
if [ ! -d web/node_modules/playwright-core ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi
