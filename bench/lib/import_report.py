"""Import + report of large perf.data files: kairos versus perf report (see bench/README.md).

Called by bench/import_report.sh as: import_report.py KAIROS SAMPLES_DIR DEEP_SOURCE.
Python 3 standard library only.

Two kinds of recording, each of at least BENCH_MIN_SAMPLES samples with call chains:
  system  perf record -a -g while one busy `transitions` runs per CPU (many processes,
          shallow and varied stacks, kernel frames);
  deep    perf record -g of `deep` (bench/lib/deep.c): recursion 40-125 frames deep.
"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

from benchlib import CpuMeter, env_reps, log, perf_stats, run_main, scratch_dir, wait_for_binary

KAIROS, SAMPLES, DEEP_SOURCE = sys.argv[1], sys.argv[2], sys.argv[3]
REPS = env_reps("import_report")
MIN_SAMPLES = int(os.environ.get("BENCH_MIN_SAMPLES", "1000000"))
RECORD_SECONDS = float(os.environ.get("BENCH_RECORD_SECONDS", "10"))
FILES = os.environ.get("BENCH_FILES", "system deep").split()
GIVEN = {"system": os.environ.get("BENCH_PERF_DATA"), "deep": os.environ.get("BENCH_DEEP_PERF_DATA")}
PERF_DEFAULT = os.environ.get("BENCH_PERF_DEFAULT", "0") == "1"
KAIROS_BASE = os.environ.get("BENCH_KAIROS_BASE")  # another build, timed alongside
SEED = int(os.environ.get("BENCH_SEED", "1"))
TIMEOUT = 3600
PERIOD_NS = 10000  # cpu-clock every 10 us
GOAL = 10.0

if not FILES or any(f not in GIVEN for f in FILES):
    sys.exit("import_report: BENCH_FILES must list system and/or deep")


def sample_count(path):
    n, _ = perf_stats(path, TIMEOUT)
    if n is None:
        raise RuntimeError(f"perf report --stats -i {path} printed no sample count")
    return n


def perf_record(args, tmp):
    r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-c", str(PERIOD_NS), "-g"] + args,
                       cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError(f"perf record failed ({r.returncode}); recording needs root or "
                           f"perf_event_paranoid <= 0:\n{r.stderr[-2000:]}")


def record_until_enough(what, tmp, path, once):
    """Records with `once(seconds)` for longer until the file has MIN_SAMPLES samples.
    (Under a hypervisor the kernel does not deliver the nominal rate.)"""
    seconds = RECORD_SECONDS
    n = 0
    for _ in range(4):
        once(seconds)
        n = sample_count(path)
        log(f"recorded {what} for {seconds:g} s: {n} samples")
        if n >= MIN_SAMPLES:
            return n
        seconds = seconds * MIN_SAMPLES / max(n, 1) * 1.1
    raise RuntimeError(f"could not record {MIN_SAMPLES} samples of {what} (last: {n})")


def record_system(tmp, path):
    """perf record -a while one busy `transitions` runs per CPU."""
    ncpu = os.cpu_count() or 1

    def once(seconds):
        iters = str(int((seconds + 5) / 0.0006))  # transitions: about 0.6 ms per ITER
        workers = [subprocess.Popen([os.path.join(SAMPLES, "transitions"), iters],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
                   for _ in range(ncpu)]
        try:
            time.sleep(0.3)  # past their calibration
            perf_record(["-a", "-o", path, "--", "sleep", f"{seconds:g}"], tmp)
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait()

    return record_until_enough("system-wide", tmp, path, once)


def record_deep(tmp, path):
    """perf record -g (frame pointers) of `deep`, one thread per CPU."""
    exe = os.path.join(tmp, "deep")
    cc = os.environ.get("CC", "cc")
    r = subprocess.run([cc, "-O2", "-g", "-fno-omit-frame-pointer", "-fno-inline",
                        "-fno-optimize-sibling-calls", "-pthread", "-o", exe, DEEP_SOURCE],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError(f"cannot build {DEEP_SOURCE} with {cc}:\n{r.stderr[-2000:]}")
    ncpu = str(os.cpu_count() or 1)
    return record_until_enough("deep recursion", tmp, path,
                               lambda s: perf_record(["-o", path, "--", exe, f"{s:g}", ncpu], tmp))


def timed(cmd, tmp, tag):
    """Run cmd (stdout to /dev/null) under GNU time: (wall s, user+sys s, max RSS KiB)."""
    tfile = os.path.join(tmp, f"time-{tag}.txt")
    r = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", tfile] + cmd, cwd=tmp,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stderr[-3000:]}")
    with open(tfile) as f:
        wall, user, sys_, rss = f.read().split()[-4:]
    os.unlink(tfile)
    return float(wall), float(user) + float(sys_), int(rss)


def arm_kairos(binary):
    def run(tmp, data, tag):
        rdir = os.path.join(tmp, f"res-{tag}")
        wait_for_binary(binary)
        w1, c1, m1 = timed([binary, "import", data, "-q", "-r", rdir], tmp, tag + "-import")
        w2, c2, m2 = timed([binary, "report", "hotspots", "-r", rdir], tmp, tag + "-report")
        shutil.rmtree(rdir, ignore_errors=True)
        return {"wall": w1 + w2, "cpu": c1 + c2, "rss": max(m1, m2),
                "import_wall": w1, "import_cpu": c1, "report_wall": w2, "report_cpu": c2,
                "import_rss": m1, "report_rss": m2}
    return run


def arm_perf(args):
    def run(tmp, data, tag):
        w, c, m = timed(["perf", "report", "--stdio", "-i", data] + args, tmp, tag)
        return {"wall": w, "cpu": c, "rss": m}
    return run


KAIROS_ARM = "kairos import + report hotspots"
REFERENCE = "perf report --stdio --no-children --sort sym"
ARMS = {KAIROS_ARM: arm_kairos(KAIROS), REFERENCE: arm_perf(["--no-children", "--sort", "sym"])}
BASE_ARM = "kairos (BENCH_KAIROS_BASE build)"
if KAIROS_BASE:
    ARMS[BASE_ARM] = arm_kairos(KAIROS_BASE)
if PERF_DEFAULT:
    ARMS["perf report --stdio (default: children, comm,dso,sym)"] = arm_perf([])


def bench_file(kind, tmp, rng):
    if GIVEN[kind]:
        data = os.path.abspath(GIVEN[kind])
        nsamples = sample_count(data)
        log(f"using {data}: {nsamples} samples")
    else:
        data = os.path.join(tmp, f"{kind}.perf.data")
        nsamples = (record_system if kind == "system" else record_deep)(tmp, data)
    size_mb = os.path.getsize(data) / 1e6
    # One untimed warm-up of each, so that every timed run finds the file and the
    # binaries in the page cache.
    for arm in ARMS.values():
        arm(tmp, data, "warmup")
    results = {name: [] for name in ARMS}
    started = time.monotonic()
    meter = CpuMeter()
    for rep in range(REPS):
        names = list(ARMS)
        rng.shuffle(names)
        for name in names:
            res = ARMS[name](tmp, data, f"{kind}-{rep}")
            results[name].append(res)
            log(f"[{time.monotonic() - started:6.0f}s] {kind} rep {rep + 1}/{REPS} {name}: "
                f"{res['wall']:.2f} s, cpu {res['cpu']:.2f} s, max RSS {res['rss'] / 1024:.0f} MiB")
    busy, steal = meter.stop()
    load = (100 * busy, 100 * steal)
    if not GIVEN[kind]:
        os.unlink(data)
    return {"kind": kind, "samples": nsamples, "size_mb": size_mb, "results": results, "load": load}


DESCRIBE = {
    "system": "system-wide (perf record -a -g, one busy `transitions` per CPU)",
    "deep": "deep recursion (perf record -g of bench/lib/deep.c, 40-125 frames)",
}


def report(f):
    med = statistics.median
    res = f["results"]
    print()
    print(f"{f['kind']}: {DESCRIBE[f['kind']]}: {f['samples']} samples, {f['size_mb']:.0f} MB, "
          f"cpu-clock every {PERIOD_NS // 1000} us")
    hdr = f"{'tool':<55} {'wall s':>8} {'cpu s':>8} {'max RSS MiB':>11} {'Msamples/s':>10}"
    print(hdr)
    print("-" * len(hdr))
    meds = {}
    for name, runs in res.items():
        w, c, m = (med([r[k] for r in runs]) for k in ("wall", "cpu", "rss"))
        meds[name] = (w, c, m / 1024)
        print(f"{name:<55} {w:>8.2f} {c:>8.2f} {m / 1024:>11.0f} {f['samples'] / w / 1e6:>10.2f}")
    k = res[KAIROS_ARM]
    for part in ("import", "report"):
        print(f"{'  of which kairos ' + part:<55} {med([r[part + '_wall'] for r in k]):>8.2f} "
              f"{med([r[part + '_cpu'] for r in k]):>8.2f} {med([r[part + '_rss'] for r in k]) / 1024:>11.0f}")
    kw, kc, km = meds[KAIROS_ARM]
    for name in ARMS:
        if name == KAIROS_ARM:
            continue
        pw, pc, pm = meds[name]
        ratios = [p["wall"] / q["wall"] for p, q in zip(res[name], k)]
        print(f"vs {name}:")
        print(f"  it/kairos: wall {pw / kw:.2f}x (per-repetition range {min(ratios):.2f}..{max(ratios):.2f}), "
              f"cpu {pc / kc:.2f}x; memory kairos/it {km / pm:.2f}x")
    print(f"machine: {f['load'][0]:.0f}% of all CPU time busy during these runs (ours and anything "
          f"else), {f['load'][1]:.1f}% stolen by the hypervisor")
    pw, pc, pm = meds[REFERENCE]
    return f["kind"], pw / kw, pc / kc, km / pm


def main():
    rng = random.Random(SEED)
    with scratch_dir("kairos-bench-import-") as tmp:
        files = [bench_file(kind, tmp, rng) for kind in FILES]
    print()
    print(f"Import + report: kairos versus perf on the same files; {REPS} repetitions, tools "
          f"interleaved in random order, medians, after one untimed warm-up run each (page cache warm).")
    print("wall = elapsed; cpu = user+sys (all threads); max RSS from GNU time (%M); kairos = "
          "import then report (times added, max RSS the larger).")
    goals = [report(f) for f in files]
    print()
    print(f"Goal: kairos import + report at least {GOAL:g}x faster (wall) than `{REFERENCE}`, "
          f"with no more memory:")
    for kind, wall, cpu, mem in goals:
        ok = wall >= GOAL and mem <= 1.0
        print(f"  {kind:<7} wall {wall:5.2f}x, cpu {cpu:5.2f}x, memory {mem:4.2f}x: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    run_main("import_report", main)
