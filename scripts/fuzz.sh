#!/usr/bin/env bash
# Coverage-guided fuzzing of the perf.data reader and the converter with AFL++ (cargo-afl,
# stable Rust). See fuzz/README.md.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET]     # TARGET: reader, convert or all (default)
#
# Installs what it needs (build tools, cargo-afl and its AFL++), builds the instrumented
# targets, fuzzes each target for SECONDS (default 600) with one niced afl-fuzz process,
# prints executions, speed, crashes and hangs, and copies new crash inputs (minimised with
# afl-tmin) into fuzz/regressions/TARGET/ and hangs into fuzz/hangs/TARGET/.
# The corpus is kept in fuzz/out/TARGET/ and resumed by the next run (FUZZ_FRESH=1 starts
# over from fuzz/seeds/). Exits 1 when a crash or hang was found.
#
# Environment: FUZZ_MEM_MB (afl-fuzz -m, default 512), FUZZ_TIMEOUT_MS (-t, default 1000),
# FUZZ_FRESH=1, FUZZ_RESEED=1 (remake fuzz/seeds/ from the shared fixtures and fresh
# recordings), FUZZ_TMIN=0 (do not minimise crashes), KAIROS_SHARED (default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
seconds=${1:-600}
which=${2:-all}
mem_mb=${FUZZ_MEM_MB:-512}
timeout_ms=${FUZZ_TIMEOUT_MS:-1000}
cargo_afl_version=0.18.2
targets=(reader convert)
case "$which" in
  all) ;;
  reader|convert) targets=("$which") ;;
  *) echo "fuzz.sh: unknown target '$which' (reader, convert or all)" >&2; exit 2 ;;
esac
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a number, not '$seconds'" >&2; exit 2; }

# Politeness on a shared 2-core machine: builds use one job, everything runs niced.
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
nice_run() { nice -n 10 "$@"; }

# --- What it needs -------------------------------------------------------------------
# AFL++ is built from the source that cargo-afl ships (no download); without LLVM plugins
# (they need nightly), so it needs only make and a C compiler. Coverage then comes from
# rustc's own SanitizerCoverage, which works on stable.
need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
command -v make >/dev/null || need_apt+=(make)
command -v python3 >/dev/null || need_apt+=(python3)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "fuzz.sh: missing ${need_apt[*]}; run as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
if ! cargo afl --version 2>/dev/null | grep -q "cargo-afl $cargo_afl_version"; then
  echo "fuzz.sh: installing cargo-afl $cargo_afl_version (builds AFL++ too; a few minutes)"
  nice_run cargo install cargo-afl --locked --version "$cargo_afl_version" --force
fi
# Builds AFL++ and its runtime for the current rustc when they are missing (a rustc update
# needs a new runtime); says "already built" otherwise.
if ! out=$(nice_run cargo afl config --build 2>&1); then
  if ! grep -q "already built" <<<"$out"; then
    echo "$out" >&2
    echo "fuzz.sh: building AFL++ failed" >&2
    exit 1
  fi
fi

# --- Seeds ---------------------------------------------------------------------------
shopt -s nullglob
seeds=(fuzz/seeds/*)
if [ "${FUZZ_RESEED:-0}" = 1 ] || [ ${#seeds[@]} -eq 0 ]; then
  shared=${KAIROS_SHARED:-$repo/../shared}
  rm -rf fuzz/seeds
  python3 fuzz/make_seeds.py --record fuzz/seeds "$shared"/fixtures/*/*.perf.data
fi

# --- Build ---------------------------------------------------------------------------
# A target directory of its own: cargo-afl's RUSTFLAGS would otherwise make every plain
# `cargo test` here rebuild everything.
bins=()
for t in "${targets[@]}"; do bins+=(--bin "fuzz_$t"); done
(cd fuzz && CARGO_TARGET_DIR=target/afl nice_run cargo afl build --release --features afl "${bins[@]}")

# --- Fuzz ----------------------------------------------------------------------------
export AFL_SKIP_CPUFREQ=1                       # a VM: no governor to check
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1  # core_pattern is the machine's, left alone
export AFL_NO_AFFINITY=1                        # do not pin a core others' builds need
export AFL_NO_UI=1                              # plain status lines into the log
export AFL_SKIP_CRASHES=1                       # a seed that crashes is reported, not fatal
stat_of() { if [ -f "$1" ]; then sed -n "s/^$2 *: *//p" "$1" | head -n1; fi; }
found=0
summary=()
for t in "${targets[@]}"; do
  out_dir=fuzz/out/$t
  bin=fuzz/target/afl/release/fuzz_$t
  stats=$out_dir/default/fuzzer_stats
  if [ "${FUZZ_FRESH:-0}" = 1 ]; then rm -rf "$out_dir"; fi
  mkdir -p "$out_dir"
  before_execs=$(stat_of "$stats" execs_done); before_execs=${before_execs:-0}
  # afl-fuzz takes AFL_AUTORESUME as set whatever its value: set it only to resume.
  resume=()
  if [ -d "$out_dir/default/queue" ]; then resume=(AFL_AUTORESUME=1); fi
  echo "fuzz.sh: $t for ${seconds}s (-m ${mem_mb} MB, -t ${timeout_ms} ms)${resume:+, resuming $out_dir}; log in $out_dir/afl.log"
  start=$(date +%s)
  set +e
  env "${resume[@]}" nice -n 10 cargo afl fuzz -i fuzz/seeds -o "$out_dir" -x fuzz/perf.dict \
    -m "$mem_mb" -t "$timeout_ms" -V "$seconds" -- "$bin" >"$out_dir/afl.log" 2>&1
  rc=$?
  set -e
  elapsed=$(( $(date +%s) - start ))
  if [ ! -f "$stats" ]; then
    tail -n 30 "$out_dir/afl.log" >&2
    echo "fuzz.sh: afl-fuzz did not start (exit $rc)" >&2
    exit 1
  fi
  execs=$(stat_of "$stats" execs_done)
  run_execs=$(( execs - before_execs ))
  speed=$(( run_execs / (elapsed > 0 ? elapsed : 1) ))
  # This run's finds; on resume afl-fuzz moves earlier ones to crashes.DATE/ and hangs.DATE/.
  crash_files=("$out_dir"/default/crashes/id:*)
  hang_files=("$out_dir"/default/hangs/id:*)
  all_crashes=("$out_dir"/default/crashes*/id:*)
  all_hangs=("$out_dir"/default/hangs*/id:*)

  # Save every crash (deduplicated by content, minimised when afl-tmin manages within a
  # minute) where the plain regression test replays it, and every hang beside it.
  mkdir -p "fuzz/regressions/$t"
  for f in "${all_crashes[@]}"; do
    sum=$(sha1sum "$f" | cut -c1-12)
    dest=fuzz/regressions/$t/crash-$sum
    saved=(fuzz/regressions/"$t"/crash-"$sum"*)   # nullglob: empty when not saved yet
    [ ${#saved[@]} -eq 0 ] || continue
    if [ "${FUZZ_TMIN:-1}" = 1 ] && timeout 60 nice -n 10 cargo afl tmin -m "$mem_mb" -t "$timeout_ms" \
         -i "$f" -o "$dest.min" -- "$bin" >/dev/null 2>&1 && [ -s "$dest.min" ]; then
      mv "$dest.min" "$dest"
    else
      rm -f "$dest.min"
      cp "$f" "$dest"
    fi
    echo "fuzz.sh: $t crash saved as $dest"
  done
  for f in "${all_hangs[@]}"; do
    mkdir -p "fuzz/hangs/$t"
    sum=$(sha1sum "$f" | cut -c1-12)
    [ -e "fuzz/hangs/$t/hang-$sum" ] || cp "$f" "fuzz/hangs/$t/hang-$sum"
  done
  found=$(( found + ${#crash_files[@]} + ${#hang_files[@]} ))
  line="$t: ${run_execs} execs in ${elapsed}s (${speed}/s; ${execs} in all runs), corpus $(stat_of "$stats" corpus_count), edges $(stat_of "$stats" bitmap_cvg), stability $(stat_of "$stats" stability), crashes ${#crash_files[@]} (${#all_crashes[@]} in all runs), hangs ${#hang_files[@]} (${#all_hangs[@]} in all runs)"
  echo "fuzz.sh: $line"
  summary+=("$line")
done
echo
echo "== fuzzing summary (-m ${mem_mb} MB, -t ${timeout_ms} ms) =="
printf '%s\n' "${summary[@]}"
if [ "$found" -gt 0 ]; then
  echo "Crash inputs are in fuzz/regressions/, hangs in fuzz/hangs/. Locate one with:"
  echo "  cd fuzz && cargo run --release --bin replay -- TARGET regressions/TARGET/"
  exit 1
fi
