"""The agent's own cost on a busy machine, beside perf record (see bench/README.md).

Called by bench/agent_overhead.sh as: agent_overhead.py KAIROS SAMPLES_DIR HTTP_SINK.
Python 3 standard library only.

Every CPU runs the shares sample; each configuration runs for BENCH_SECONDS and its CPU
time (user + system, of the tool and its threads, from wait4) is divided by the wall time:
the share of one CPU the tool took. The configurations are interleaved in a seeded random
order; medians over the repetitions. The agent also reports its own figure every window in
its log, which is printed beside.
"""
import os
import random
import re
import statistics
import subprocess
import sys
import time

from benchlib import CpuMeter, env_reps, log, run_main, scratch_dir, wait_for_binary

KAIROS, SAMPLES, SINK = sys.argv[1], sys.argv[2], sys.argv[3]
REPS = env_reps("agent_overhead", "2")
SECONDS = float(os.environ.get("BENCH_SECONDS", "40"))
HZ = os.environ.get("BENCH_HZ", "19")
SEED = int(os.environ.get("BENCH_SEED", "1"))


def start_sink(tmp):
    port_file = os.path.join(tmp, "sink.port")
    sink = subprocess.Popen(["python3", SINK, port_file, os.path.join(tmp, "got")])
    for _ in range(500):
        if os.path.exists(port_file):
            with open(port_file) as f:
                return sink, int(f.read())
        time.sleep(0.02)
    sink.kill()
    raise RuntimeError("the HTTP sink did not start")


def measured(cmd, stop_after=None):
    """(CPU seconds of the command and its threads, wall seconds, stderr, peak resident MB)."""
    wait_for_binary(KAIROS)
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if stop_after is not None:
        time.sleep(stop_after)
        p.send_signal(2)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) not in (0, -2, 130):
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed: {err.strip()[-300:]}")
    return ru.ru_utime + ru.ru_stime, wall, err, ru.ru_maxrss / 1024


def main():
    rng = random.Random(SEED)
    meter = CpuMeter()
    cpus = os.cpu_count() or 1
    with scratch_dir("kairos-agent-bench-") as tmp:
        sink, port = start_sink(tmp)
        busy = [subprocess.Popen([os.path.join(SAMPLES, "shares"), str(SECONDS * (2 * REPS + 1) + 60), "1:1:1"],
                                 stdout=subprocess.DEVNULL) for _ in range(cpus)]
        try:
            configs = {
                f"kairos agent -F {HZ} (windows of 10 s, sent)": [
                    KAIROS, "agent", "-F", HZ, "-d", str(SECONDS), "--otlp", f"http://127.0.0.1:{port}",
                    "--spool", os.path.join(tmp, "spool")],
                f"perf record -a -g -F {HZ}": [
                    "perf", "record", "-q", "-a", "-g", "-F", HZ, "-o", os.path.join(tmp, "perf.data"),
                    "--", "sleep", str(SECONDS)],
            }
            shares = {name: [] for name in configs}
            peaks = {name: [] for name in configs}
            reported = []
            for rep in range(REPS):
                order = list(configs)
                rng.shuffle(order)
                for name in order:
                    cpu, wall, err, peak = measured(configs[name])
                    shares[name].append(100 * cpu / wall)
                    peaks[name].append(peak)
                    reported += [float(x) for x in re.findall(r"agent ([0-9.]+)% of one CPU", err)[1:]]
                log(f"  repetition {rep + 1}/{REPS} done")
        finally:
            for b in busy:
                b.kill()
            sink.kill()
    busy_share, steal = meter.stop()
    print(f"\nCPU time of each tool as a share of one CPU, {SECONDS:.0f} s each, every CPU busy "
          f"(median of {REPS})")
    for name, v in shares.items():
        print(f"  {name:48} {statistics.median(v):6.2f}%   peak resident {max(peaks[name]):5.0f} MB")
    if reported:
        print(f"  the agent's own figure per window (after the first): median {statistics.median(reported):.2f}%, "
              f"max {max(reported):.2f}% over {len(reported)} windows")
    agent = statistics.median(shares[f"kairos agent -F {HZ} (windows of 10 s, sent)"])
    if HZ == "19":
        print(f"\nGoal (under 1% of one CPU at 19 Hz on a busy machine): {agent:.2f}%: "
              f"{'met' if agent < 1.0 else 'NOT met'}")
    print(f"Machine during the run: {100 * busy_share:.0f}% busy, {100 * steal:.1f}% stolen by the hypervisor")


if __name__ == "__main__":
    run_main("agent_overhead", main)
