"""Address sampling without a PMU: `kairos collect memory-access` against
`perf record -e cpu-clock --user-regs` at the same interval (see bench/README.md).

Called by bench/memory_access.sh as: memory_access.py KAIROS SAMPLES_DIR.
For each repetition, in a seeded random order: false_sharing alone, under perf record
(then `perf report --stdio`, perf's way to a first look), under kairos with the allocation
tracker off (sampling alone, what perf does) and on (the full collection), and the full
collection with watchpoints (`-k watchpoints=on`, duty-cycled to a 5% budget). The target's
own loop time (it prints elapsed_s) gives the slowdown each tool causes; the wall time
after the loop ended gives the time from the end of the run to the report.
Python 3 standard library only.
"""
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

from benchlib import CpuMeter, env_reps, log, run_main, scratch_dir, wait_for_binary

KAIROS, SAMPLES = sys.argv[1], sys.argv[2]
REPS = env_reps("memory_access")
INTERVAL_US = int(os.environ.get("BENCH_INTERVAL_US", "250"))
ITERATIONS = os.environ.get("BENCH_ITERATIONS", "3000000000")
SEED = int(os.environ.get("BENCH_SEED", "1"))
TIMEOUT = 600
REGS = "ax,bx,cx,dx,si,di,bp,sp,ip,r8,r9,r10,r11,r12,r13,r14,r15"


def run(cmd, cwd):
    """(wall seconds, the target's loop seconds) of one command."""
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    m = re.search(r"elapsed_s ([0-9.]+)", r.stdout)
    return wall, (float(m.group(1)) if m else None)


def watch_estimate(result):
    """The rotation's estimated slowdown recorded in a result's manifest, if any."""
    try:
        with open(os.path.join(result, "manifest.json")) as f:
            return json.load(f)["memory_access"]["watch"]["estimated_slowdown"]
    except (OSError, KeyError, ValueError):
        return None


def main():
    # Sampling overhead on padded counters: without a shared line the loop's speed is
    # steady (an unpadded loop runs *faster* under a profiler, whose interrupts ease the
    # line's bouncing). Watchpoints need the shared line: unpadded, with and without them.
    padded = [os.path.join(SAMPLES, "false_sharing"), "--padded", "2", ITERATIONS]
    shared = [os.path.join(SAMPLES, "false_sharing"), "2", ITERATIONS]
    modes = ["plain", "perf", "kairos-sampling", "kairos-full", "kairos-unpadded", "kairos-watch"]
    loop = {m: [] for m in modes}
    after = {m: [] for m in modes}
    estimates = []
    rng = random.Random(SEED)
    with scratch_dir("kairos-bench-ma-") as tmp:
        meter = CpuMeter()
        for rep in range(REPS):
            order = modes[:]
            rng.shuffle(order)
            for m in order:
                wait_for_binary(KAIROS)
                out = os.path.join(tmp, f"{m}-{rep}")
                prog = shared if m in ("kairos-unpadded", "kairos-watch") else padded
                if m == "plain":
                    wall, inner = run(prog, tmp)
                    extra = 0.0
                elif m == "perf":
                    wall, inner = run(["perf", "record", "-q", "-e", "cpu-clock", "-c", str(INTERVAL_US * 1000),
                                       f"--user-regs={REGS}", "-g", "-o", out] + prog, tmp)
                    report, _ = run(["perf", "report", "--stdio", "-i", out, "--sort", "sym"], tmp)
                    wall += report
                else:
                    track = "off" if m == "kairos-sampling" else "on"
                    watch = "on" if m == "kairos-watch" else "off"
                    wall, inner = run([KAIROS, "collect", "memory-access", "-q", "-r", out,
                                       "-k", f"sampling-interval-us={INTERVAL_US}", "-k", f"track-allocations={track}",
                                       "-k", f"watchpoints={watch}", "--"] + prog, tmp)
                    if m == "kairos-watch":
                        estimates.append(watch_estimate(out))
                loop[m].append(inner)
                after[m].append(wall - inner)
            log(f"repetition {rep + 1}/{REPS} done")
        busy, steal = meter.stop()
    med = {m: statistics.median(loop[m]) for m in modes}
    post = {m: statistics.median(after[m]) for m in modes}
    print(f"false_sharing 2 threads, {ITERATIONS} iterations (--padded, except kairos-unpadded and kairos-watch); "
          f"interval {INTERVAL_US} us; {REPS} repetitions (medians)")
    print(f"{'mode':<16} {'loop s':>8} {'slowdown':>9} {'start+after s':>14}")
    for m in modes:
        print(f"{m:<16} {med[m]:>8.3f} {med[m] / med['plain']:>8.3f}x {post[m]:>14.3f}")
    # The loop time under each tool, side by side: what the target feels. (The time each
    # adds to the plain run is often within the noise of this program, even negative.)
    ratio = med["kairos-sampling"] / med["perf"]
    print(f"address sampling: the loop takes {ratio:.3f}x as long under kairos as under perf record --user-regs "
          f"(goal at most 1.1x: {'met' if ratio <= 1.1 else 'not met'}); with the allocation tracker "
          f"{med['kairos-full'] / med['perf']:.3f}x")
    # Watchpoints against the same collection without them: what the traps cost the loop.
    watch = med["kairos-watch"] / med["kairos-unpadded"] - 1
    est = statistics.median(e for e in estimates if e is not None) if any(e is not None for e in estimates) else None
    print(f"watchpoints: the loop takes {watch * 100:+.1f}% longer with -k watchpoints=on than without "
          f"(goal at most 5%: {'met' if watch <= 0.05 else 'not met'}); the rotation's own estimate "
          f"{'n/a' if est is None else f'{est * 100:.1f}%'}")
    print(f"end of run to report: kairos {post['kairos-full']:.3f} s (collect prints the report), "
          f"perf {post['perf']:.3f} s (record's end plus perf report --stdio)")
    print(f"machine: {busy * 100:.0f}% busy, {steal * 100:.1f}% stolen by the hypervisor during the runs")


run_main("memory_access", main)
