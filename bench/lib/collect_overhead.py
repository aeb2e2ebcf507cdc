"""Collection overhead of `kairos collect hotspots` versus `perf record` (see bench/README.md).

Called by bench/collect_overhead.sh as: collect_overhead.py KAIROS SAMPLES_DIR.
Python 3 standard library only.
"""
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

from benchlib import CpuMeter, env_reps, log, perf_stats, run_main, scratch_dir, wait_for_binary

KAIROS, SAMPLES = sys.argv[1], sys.argv[2]
REPS = env_reps("collect_overhead")
INTERVALS = [int(x) for x in os.environ.get("BENCH_INTERVALS_US", "1000 100 10").split()]
PROGRAMS = os.environ.get("BENCH_PROGRAMS", "transitions matrix").split()
SEED = int(os.environ.get("BENCH_SEED", "1"))
TIMEOUT = 600

# Arguments chosen for about 2 s of baseline run time on a 2-core KVM guest.
PROGRAM_ARGS = {
    "transitions": os.environ.get("BENCH_TRANSITIONS_ARGS", "3000").split(),
    "matrix": os.environ.get("BENCH_MATRIX_ARGS", "1100 interchange").split(),
}

for p in PROGRAMS:
    if p not in PROGRAM_ARGS:
        sys.exit(f"collect_overhead: unknown program {p!r} (known: transitions, matrix)")


def parse_program_output(prog, out):
    """Return (self-reported seconds, work units) from the target's stdout.

    transitions calibrates its busy loops against the clock at start-up (ITER x 600 us of
    busy work at the *measured* speed), so a profiler that slows the whole process
    uniformly shrinks the work and leaves the printed elapsed time unchanged.  Its work is
    ITER x 600 x calibration busy-loop iterations; the cost per unit of work
    (elapsed / calibration) is what reveals the overhead.  matrix does fixed work.
    """
    if prog == "transitions":
        m_el = re.search(r"^transitions: elapsed ([0-9.]+) s", out, re.M)
        m_cal = re.search(r"^transitions: calibration ([0-9.]+) busy-loop", out, re.M)
        if not (m_el and m_cal):
            raise RuntimeError("cannot find 'elapsed' / 'calibration' in transitions output")
        return float(m_el.group(1)), float(m_cal.group(1))
    m = re.search(r"^matrix: (?:interchange|naive) \S+ ([0-9.]+) s", out, re.M)
    if not m:
        raise RuntimeError("cannot find the multiply time in matrix output")
    return float(m.group(1)), 1.0


def run_once(tmp, mode, interval_us, prog, tag):
    """One run of PROG alone (`base`), under kairos or under perf. Returns a dict."""
    tfile = os.path.join(tmp, f"time-{tag}.txt")
    target = ["/usr/bin/time", "-f", "%e %U %S", "-o", tfile,
              os.path.join(SAMPLES, prog)] + PROGRAM_ARGS[prog]
    rdir = os.path.join(tmp, f"res-{tag}")
    pfile = os.path.join(tmp, f"perf-{tag}.data")
    if mode == "base":
        cmd = target
    elif mode == "kairos":
        cmd = [KAIROS, "collect", "hotspots", "-q", "-r", rdir,
               "-k", f"sampling-interval-us={interval_us}", "--"] + target
    else:
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(interval_us * 1000),
               "-g", "-o", pfile, "--"] + target
    if mode == "kairos":
        wait_for_binary(KAIROS)
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=TIMEOUT)
    tool_wall = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stderr[-3000:]}")
    prog_s, work = parse_program_output(prog, r.stdout)
    with open(tfile) as f:
        fields = f.read().split()
    # GNU time may prepend "Command exited with non-zero status"; the last 3 fields are ours.
    wall, user, sys_ = (float(x) for x in fields[-3:])
    res = {"prog_s": prog_s, "work": work, "cost": prog_s / work, "cpu": (user + sys_) / work,
           "target_wall": wall, "tool_wall": tool_wall, "samples": None, "lost": 0}
    if mode == "kairos":
        with open(os.path.join(rdir, "manifest.json")) as f:
            counts = json.load(f).get("counts", {})
        res["samples"] = counts.get("samples")
        res["lost"] = counts.get("lost_samples", 0) + counts.get("lost_records", 0)
        shutil.rmtree(rdir, ignore_errors=True)
    elif mode == "perf":
        res["samples"], res["lost"] = perf_stats(pfile, TIMEOUT)
        os.unlink(pfile)
    os.unlink(tfile)
    return res


def pct(x):
    return f"{x * 100:+.1f}"


LOAD = {}


def main():
    meter = CpuMeter()
    rng = random.Random(SEED)
    # results[(prog, N)][mode] = list over reps (same index = same repetition block)
    results = {(p, n): {"base": [], "kairos": [], "perf": []} for p in PROGRAMS for n in INTERVALS}
    started = time.monotonic()
    with scratch_dir("kairos-bench-collect-") as tmp:
        for rep in range(REPS):
            blocks = [(p, n) for p in PROGRAMS for n in INTERVALS]
            rng.shuffle(blocks)
            for (prog, n) in blocks:
                modes = ["base", "kairos", "perf"]
                rng.shuffle(modes)  # interleaved, in a random order in every block
                for mode in modes:
                    tag = f"{rep}-{prog}-{n}-{mode}"
                    res = run_once(tmp, mode, n, prog, tag)
                    results[(prog, n)][mode].append(res)
                    log(f"[{time.monotonic() - started:6.0f}s] rep {rep + 1}/{REPS} {prog:11s} "
                        f"{n:5d} us {mode:6s}: program {res['prog_s']:.3f} s, cpu "
                        f"{res['cpu'] * res['work']:.2f} s, end-to-end {res['tool_wall']:.2f} s"
                        + (f", {res['samples']} samples" if res["samples"] is not None else ""))
    LOAD["busy"], LOAD["steal"] = meter.stop()
    with open("/proc/loadavg") as f:
        LOAD["loadavg"] = " ".join(f.read().split()[:3])
    report(results)


def paired_overhead(base, tool, key):
    """Median over repetitions of tool/base - 1, each pair from the same block."""
    ratios = [t[key] / b[key] for b, t in zip(base, tool)]
    return statistics.median(ratios) - 1, min(ratios) - 1, max(ratios) - 1


def report(results):
    med = statistics.median
    print()
    print(f"Collection overhead, kairos collect hotspots vs perf record -e cpu-clock -g "
          f"(cpu-clock, frame pointers)")
    print(f"{REPS} repetitions; baseline, kairos and perf runs interleaved in random order "
          f"within each (program, interval) block; medians of per-block paired ratios.")
    print("Overhead = cost under the tool / cost of the baseline run of the same block - 1; cost = "
          "the program's own timing of its work (matrix: multiply time; transitions: elapsed per "
          "unit of calibrated work).")
    print()
    verdicts = []
    for key, title in (("cost", "by the program's own timing of its work (as a user sees it; "
                                "includes time the target waited for a CPU)"),
                       ("cpu", "by the target's CPU time (user+sys from wait4; less sensitive to "
                               "other load on the machine)")):
        print(f"Overhead {title}:")
        hdr = (f"{'program':<12} {'interval':>8} {'baseline s':>10} {'kairos ovh %':>12} "
               f"{'perf ovh %':>10} {'kairos/perf':>11} {'kairos samples':>14} {'perf samples':>12}")
        print(hdr)
        print("-" * len(hdr))
        for (prog, n), arms in results.items():
            base, k, p = arms["base"], arms["kairos"], arms["perf"]
            ko, _, _ = paired_overhead(base, k, key)
            po, _, _ = paired_overhead(base, p, key)
            ratio = f"{ko / po:.2f}" if po > 0.005 else "n/a"
            ks = int(med([r["samples"] for r in k]))
            ps = int(med([r["samples"] or 0 for r in p]))
            bs = med([r["prog_s"] if key == "cost" else r["cpu"] * r["work"] for r in base])
            print(f"{prog:<12} {str(n) + ' us':>8} {bs:>10.3f} "
                  f"{pct(ko):>12} {pct(po):>10} {ratio:>11} {ks:>14} {ps:>12}")
            verdicts.append((key, prog, n, ko, po))
        print()
    print("Detail: range (min..max) of the per-block ratios (program timing, CPU time), and "
          "end-to-end wall time of the whole "
          "command (tool start to exit, including kairos' import/symbolisation and perf's build-id pass).")
    print()
    hdr2 = (f"{'program':<12} {'interval':>8} {'kairos range %':>16} {'perf range %':>16} "
            f"{'kairos cpu range':>16} {'perf cpu range':>16} {'base wall s':>11} {'kairos e2e s':>12} "
            f"{'perf e2e s':>10} {'k lost':>6} {'p lost':>6}")
    print(hdr2)
    print("-" * len(hdr2))
    for (prog, n), arms in results.items():
        base, k, p = arms["base"], arms["kairos"], arms["perf"]
        _, kclo, kchi = paired_overhead(base, k, "cpu")
        _, pclo, pchi = paired_overhead(base, p, "cpu")
        _, klo, khi = paired_overhead(base, k, "cost")
        _, plo, phi = paired_overhead(base, p, "cost")
        print(f"{prog:<12} {str(n) + ' us':>8} "
              f"{pct(klo) + '..' + pct(khi):>16} {pct(plo) + '..' + pct(phi):>16} "
              f"{pct(kclo) + '..' + pct(kchi):>16} {pct(pclo) + '..' + pct(pchi):>16} "
              f"{med([r['tool_wall'] for r in base]):>11.2f} {med([r['tool_wall'] for r in k]):>12.2f} "
              f"{med([r['tool_wall'] for r in p]):>10.2f} {max(r['lost'] for r in k):>6} "
              f"{max(r['lost'] for r in p):>6}")
    # Noise floor: spread of the baseline runs of one program (they span all blocks).
    print()
    noise = {}
    for prog in PROGRAMS:
        for key, name in (("cost", "program timing"), ("cpu", "CPU time")):
            costs = [r[key] for n in INTERVALS for r in results[(prog, n)]["base"]]
            m = med(costs)
            mad = med([abs(c - m) for c in costs]) / m
            noise[(prog, key)] = mad
            print(f"noise: {prog} baseline {name}: median absolute deviation {mad * 100:.1f}% "
                  f"over {len(costs)} runs (smaller differences are not resolved)")
    print(f"machine: {LOAD['busy'] * 100:.0f}% of all CPU time was busy during the benchmark "
          f"(ours and anything else running), {LOAD['steal'] * 100:.1f}% stolen by the hypervisor; "
          f"load average at the end {LOAD['loadavg']}")
    print()
    print("Goals: (1) kairos overhead no higher than perf's at every interval; "
          "(2) kairos overhead at most 1% at 100 us.")
    print("('within noise': the difference is below twice the baseline's median absolute deviation)")
    for key, prog, n, ko, po in verdicts:
        what = "program timing" if key == "cost" else "CPU time"
        line = (f"  {what:<14} {prog:<11} {n:>5} us: kairos {pct(ko):>6}% vs perf {pct(po):>6}%: "
                f"(1) {'met' if ko <= po else 'NOT met'}"
                + (" (within noise)" if abs(ko - po) < 2 * noise[(prog, key)] else ""))
        if n == 100:
            line += (f"; (2) {'met' if ko <= 0.01 else 'NOT met'}"
                     + (" (within noise)" if abs(ko - 0.01) < 2 * noise[(prog, key)] else ""))
        print(line)


if __name__ == "__main__":
    run_main("collect_overhead", main)
