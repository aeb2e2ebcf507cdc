"""Overhead of `kairos collect latency` side by side with perf (see bench/README.md).

Called by bench/latency_overhead.sh as: latency_overhead.py KAIROS SAMPLES_DIR.
Python 3 standard library only.

The workload is the orders sample with a fixed amount of work per request
(ORDERS_ITERS_PER_US, measured once alone), so a tool that slows the process cannot shrink
the work; each request's duration is the program's own (CLOCK_MONOTONIC around the
markers, the USDT probes and the probed function), from its log. The figure compared is
the mean duration of the requests it logged as normal (~30 us of work).
"""
import os
import random
import re
import statistics
import subprocess
import sys

from benchlib import CpuMeter, env_reps, log, run_main, scratch_dir, wait_for_binary

KAIROS, SAMPLES = sys.argv[1], sys.argv[2]
ORDERS = os.path.join(SAMPLES, "orders")
REPS = env_reps("latency_overhead")
REQUESTS = os.environ.get("BENCH_REQUESTS", "6000")
SEED = int(os.environ.get("BENCH_SEED", "1"))
PIPE_LOOPS = os.environ.get("BENCH_PIPE_LOOPS", "50000")
TIMEOUT = 600
PERF_EVENTS = ["-e", "sched:sched_switch", "-e", "sched:sched_waking", "-e", "raw_syscalls:sys_enter",
               "-e", "raw_syscalls:sys_exit", "-e", "exceptions:page_fault_user", "-e", "minor-faults",
               "-e", "major-faults"]


def run(cmd, env=None):
    wait_for_binary(KAIROS)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    return r.stdout + r.stderr


def normal_mean_us(logfile):
    """Mean duration (us) of the requests the program logged as normal."""
    d = []
    with open(logfile) as f:
        for line in f:
            if line.startswith("#"):
                continue
            w = line.split()
            if len(w) >= 5 and w[4] == "normal":
                d.append((int(w[3]) - int(w[2])) / 1e3)
    if not d:
        raise RuntimeError(f"{logfile}: no normal request")
    return statistics.fmean(d)


def calibration():
    out = run([ORDERS, "/dev/null", "200"])
    m = re.search(r"calibration (\d+) iterations per us", out)
    if not m:
        raise RuntimeError("orders printed no calibration")
    return m.group(1)


def orders_configs(tmp):
    """name -> command prefix (the orders command line is appended)."""
    k = lambda name, *knobs: [KAIROS, "collect", "latency", "-q", "-r", os.path.join(tmp, name)] + \
        [a for kv in knobs for a in ("-k", kv)] + ["--"]
    return {
        "alone": [],
        "kairos, log boundaries (no probe), 1 kHz": k("log", "requests-from=LOG", "sampling-interval-us=1000"),
        "kairos, marker, 1 kHz": k("marker1", "request=marker", "sampling-interval-us=1000"),
        "kairos, uprobes, 1 kHz": k("uprobes", "request=process_order", "sampling-interval-us=1000"),
        "kairos, USDT, 1 kHz": k("usdt", "request=usdt:orders:request_begin,request_end", "sampling-interval-us=1000"),
        "kairos, marker, 10 kHz": k("marker10", "request=marker", "sampling-interval-us=100"),
        "perf record, cpu-clock alone (no stacks), 1 kHz": ["perf", "record", "-q", "-o", os.path.join(tmp, "p0.data"),
                                                           "-e", "cpu-clock", "-c", "1000000", "--"],
        "perf record -g + the same tracepoints, 1 kHz": ["perf", "record", "-q", "-o", os.path.join(tmp, "p1.data"),
                                                        "-g", "-e", "cpu-clock", "-c", "1000000"] + PERF_EVENTS + ["--"],
        "perf record -g + the same tracepoints, 10 kHz": ["perf", "record", "-q", "-o", os.path.join(tmp, "p10.data"),
                                                         "-g", "-e", "cpu-clock", "-c", "100000"] + PERF_EVENTS + ["--"],
    }


def switch_configs(tmp, empty):
    return {
        "alone": [],
        "kairos collect latency (switch, wake-up, syscalls, stacks)": [KAIROS, "collect", "latency", "-q", "-r",
                                                                       os.path.join(tmp, "sw"), "-k", f"requests-from={empty}",
                                                                       "-k", "sampling-interval-us=1000000", "--"],
        "perf record -e sched:sched_switch -g": ["perf", "record", "-q", "-o", os.path.join(tmp, "sw.data"),
                                                 "-e", "sched:sched_switch", "-g", "--"],
    }


def rm_results(tmp):
    for f in os.listdir(tmp):
        p = os.path.join(tmp, f)
        if os.path.isdir(p):
            subprocess.run(["rm", "-rf", p], check=False)
        elif f.endswith(".data"):
            os.remove(p)


def orders_part(tmp, rng, iters):
    configs = orders_configs(tmp)
    env = dict(os.environ, ORDERS_ITERS_PER_US=iters)
    means = {name: [] for name in configs}
    for rep in range(REPS):
        order = list(configs)
        rng.shuffle(order)
        for name in order:
            logfile = os.path.join(tmp, "orders.log")
            cmd = [a.replace("LOG", logfile) if a.startswith("requests-from=") else a for a in configs[name]]
            run(cmd + [ORDERS, logfile, REQUESTS, str(SEED)], env=env)
            means[name].append(normal_mean_us(logfile))
            rm_results(tmp)
        log(f"  orders repetition {rep + 1}/{REPS} done")
    return means


def switch_part(tmp, rng):
    empty = os.path.join(tmp, "empty.log")
    open(empty, "w").close()
    configs = switch_configs(tmp, empty)
    per_op = {name: [] for name in configs}
    for rep in range(REPS):
        order = list(configs)
        rng.shuffle(order)
        for name in order:
            out = run(configs[name] + ["perf", "bench", "sched", "pipe", "-l", PIPE_LOOPS])
            m = re.search(r"([0-9.]+) usecs/op", out)
            if not m:
                raise RuntimeError(f"perf bench sched pipe printed no usecs/op under {name}")
            per_op[name].append(float(m.group(1)))
            rm_results(tmp)
        log(f"  context-switch repetition {rep + 1}/{REPS} done")
    return per_op


def main():
    rng = random.Random(SEED)
    meter = CpuMeter()
    with scratch_dir("kairos-latency-bench-") as tmp:
        iters = calibration()
        log(f"orders: {REQUESTS} requests, {iters} iterations per us (fixed), {REPS} repetitions")
        means = orders_part(tmp, rng, iters)
        per_op = switch_part(tmp, rng)
    busy, steal = meter.stop()
    med = {k: statistics.median(v) for k, v in means.items()}
    alone = med["alone"]
    base = med["kairos, log boundaries (no probe), 1 kHz"]
    print(f"\nRequests of orders (mean of the requests it logged as normal, median of {REPS} runs)")
    print(f"{'configuration':48} {'mean us':>9} {'vs alone':>9}")
    for name, v in med.items():
        print(f"{name:48} {v:9.3f} {100 * (v / alone - 1):+8.2f}%")
    print("\nEach boundary source per request (against the same collection with log boundaries):")
    for name in ("marker", "uprobes", "USDT"):
        v = med[f"kairos, {name}, 1 kHz"]
        print(f"  {name:8} {1000 * (v - base):+9.0f} ns per request")
    sw = {k: statistics.median(v) for k, v in per_op.items()}
    a = sw["alone"]
    print(f"\nContext switches (perf bench sched pipe -l {PIPE_LOOPS}: two switches per op; median of {REPS})")
    for name, v in sw.items():
        extra = "" if name == "alone" else f"  {1000 * (v - a) / 2:+7.0f} ns per switch"
        print(f"  {name:58} {v:8.3f} us/op{extra}")
    goal = 100 * (med["kairos, marker, 1 kHz"] / alone - 1)
    verdict = "met" if goal < 1.0 else "NOT met"
    floor = 100 * (med["perf record, cpu-clock alone (no stacks), 1 kHz"] / alone - 1)
    print(f"\nGoal (marker, 1 kHz sampling, ~30 us request, under 1%): {goal:+.2f}%: {verdict}")
    print(f"Floor on this machine: the timer sampling alone, by perf with no stacks and no tracepoints: {floor:+.2f}%")
    print(f"Machine during the run: {100 * busy:.0f}% busy, {100 * steal:.1f}% stolen by the hypervisor")


if __name__ == "__main__":
    run_main("latency_overhead", main)
