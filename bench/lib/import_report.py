"""Import + report of a large perf.data: kairos versus perf report (see bench/README.md).

Called by bench/import_report.sh as: import_report.py KAIROS SAMPLES_DIR.
Python 3 standard library only.
"""
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

KAIROS, SAMPLES = sys.argv[1], sys.argv[2]
REPS = int(os.environ.get("BENCH_REPS", "5"))
MIN_SAMPLES = int(os.environ.get("BENCH_MIN_SAMPLES", "1000000"))
RECORD_SECONDS = float(os.environ.get("BENCH_RECORD_SECONDS", "10"))
PERF_DATA = os.environ.get("BENCH_PERF_DATA")
SEED = int(os.environ.get("BENCH_SEED", "1"))
TIMEOUT = 3600
PERIOD_NS = 10000  # cpu-clock every 10 us on every CPU

if REPS < 1:
    sys.exit("import_report: BENCH_REPS must be >= 1")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def wait_for_binary(path, limit_s=600):
    """The binary may be rebuilt while we run (cargo replaces it): wait for it to come back."""
    waited = 0
    while not os.access(path, os.X_OK):
        if waited >= limit_s:
            raise RuntimeError(f"{path} disappeared and did not come back within {limit_s} s "
                               f"(a rebuild that failed?)")
        if waited == 0:
            log(f"{path} is missing (being rebuilt?); waiting for it")
        time.sleep(5)
        waited += 5


def sample_count(path):
    r = subprocess.run(["perf", "report", "--stats", "-i", path], capture_output=True,
                       text=True, timeout=TIMEOUT)
    m = re.search(r"SAMPLE events:\s+(\d+)", r.stdout)
    if not m:
        raise RuntimeError(f"perf report --stats -i {path} printed no sample count:\n{r.stderr[-2000:]}")
    return int(m.group(1))


def record(tmp, path):
    """perf record -a for a while, with one busy `transitions` per CPU; >= MIN_SAMPLES samples."""
    ncpu = os.cpu_count() or 1
    seconds = RECORD_SECONDS
    for attempt in range(4):
        iters = str(int((seconds + 5) / 0.0006))  # transitions: about 0.6 ms per ITER
        workers = [subprocess.Popen([os.path.join(SAMPLES, "transitions"), iters],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
                   for _ in range(ncpu)]
        try:
            time.sleep(0.3)  # past their calibration
            r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-c", str(PERIOD_NS),
                                "-g", "-a", "-o", path, "--", "sleep", f"{seconds:g}"],
                               cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=TIMEOUT)
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait()
        if r.returncode != 0:
            raise RuntimeError(f"perf record -a failed ({r.returncode}); system-wide recording "
                               f"needs root or perf_event_paranoid <= 0:\n{r.stderr[-2000:]}")
        n = sample_count(path)
        log(f"recorded {seconds:g} s system-wide: {n} samples")
        if n >= MIN_SAMPLES:
            return n
        seconds = seconds * MIN_SAMPLES / max(n, 1) * 1.1
    raise RuntimeError(f"could not record {MIN_SAMPLES} samples (last: {n})")


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


def arm_kairos(tmp, data, tag):
    rdir = os.path.join(tmp, f"res-{tag}")
    wait_for_binary(KAIROS)
    w1, c1, m1 = timed([KAIROS, "import", data, "-q", "-r", rdir], tmp, tag + "-import")
    w2, c2, m2 = timed([KAIROS, "report", "hotspots", "-r", rdir], tmp, tag + "-report")
    shutil.rmtree(rdir, ignore_errors=True)
    return {"wall": w1 + w2, "cpu": c1 + c2, "rss": max(m1, m2),
            "import_wall": w1, "report_wall": w2, "import_rss": m1, "report_rss": m2}


def arm_perf(args):
    def run(tmp, data, tag):
        w, c, m = timed(["perf", "report", "--stdio", "-i", data] + args, tmp, tag)
        return {"wall": w, "cpu": c, "rss": m}
    return run


ARMS = {
    "kairos import + report hotspots": arm_kairos,
    "perf report --stdio --no-children --sort sym": arm_perf(["--no-children", "--sort", "sym"]),
    "perf report --stdio (default: children, comm,dso,sym)": arm_perf([]),
}
REFERENCE = "perf report --stdio --no-children --sort sym"
KAIROS_ARM = "kairos import + report hotspots"


def main():
    tmp = tempfile.mkdtemp(prefix="kairos-bench-import-")

    def on_signal(signum, _frame):
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    rng = random.Random(SEED)
    results = {name: [] for name in ARMS}
    try:
        if PERF_DATA:
            data = os.path.abspath(PERF_DATA)
            nsamples = sample_count(data)
            log(f"using {data}: {nsamples} samples")
        else:
            data = os.path.join(tmp, "perf.data")
            nsamples = record(tmp, data)
        size_mb = os.path.getsize(data) / 1e6
        # One untimed warm-up of each, so that every timed run finds the file and the
        # binaries in the page cache.
        for name, arm in ARMS.items():
            arm(tmp, data, "warmup")
        started = time.monotonic()
        for rep in range(REPS):
            names = list(ARMS)
            rng.shuffle(names)
            for name in names:
                res = ARMS[name](tmp, data, f"{rep}")
                results[name].append(res)
                log(f"[{time.monotonic() - started:6.0f}s] rep {rep + 1}/{REPS} {name}: "
                    f"{res['wall']:.2f} s, cpu {res['cpu']:.2f} s, max RSS {res['rss'] / 1024:.0f} MiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, nsamples, size_mb)


def report(results, nsamples, size_mb):
    med = statistics.median
    print()
    print(f"Import + report of a perf.data of {nsamples} samples ({size_mb:.0f} MB, cpu-clock "
          f"every {PERIOD_NS // 1000} us, -g, system-wide)")
    print(f"{REPS} repetitions, tools interleaved in random order, medians; after one untimed "
          f"warm-up run each (page cache warm).")
    print("wall = elapsed; cpu = user+sys (all threads); max RSS from GNU time (%M); kairos = "
          "import (max RSS of import and report).")
    print()
    hdr = (f"{'tool':<55} {'wall s':>8} {'cpu s':>8} {'max RSS MiB':>11} {'Msamples/s':>10}")
    print(hdr)
    print("-" * len(hdr))
    meds = {}
    for name, runs in results.items():
        w = med([r["wall"] for r in runs])
        c = med([r["cpu"] for r in runs])
        m = med([r["rss"] for r in runs]) / 1024
        meds[name] = (w, c, m)
        print(f"{name:<55} {w:>8.2f} {c:>8.2f} {m:>11.0f} {nsamples / w / 1e6:>10.2f}")
    k = results[KAIROS_ARM]
    print(f"{'  of which kairos import':<55} {med([r['import_wall'] for r in k]):>8.2f} "
          f"{'':>8} {med([r['import_rss'] for r in k]) / 1024:>11.0f}")
    print(f"{'  of which kairos report hotspots':<55} {med([r['report_wall'] for r in k]):>8.2f} "
          f"{'':>8} {med([r['report_rss'] for r in k]) / 1024:>11.0f}")
    print()
    kw, kc, km = meds[KAIROS_ARM]
    for name in ARMS:
        if name == KAIROS_ARM:
            continue
        pw, pc, pm = meds[name]
        ratios = [p["wall"] / q["wall"] for p, q in zip(results[name], k)]
        print(f"vs {name}:")
        print(f"  speed ratio perf/kairos (wall) {pw / kw:.2f}x (per-repetition range "
              f"{min(ratios):.2f}..{max(ratios):.2f}), cpu {pc / kc:.2f}x; memory ratio "
              f"kairos/perf {km / pm:.2f}x")
    pw = meds[REFERENCE][0]
    print()
    print(f"Goal: kairos import + report at least 10x faster than `{REFERENCE}`: "
          f"{pw / kw:.2f}x, {'met' if pw / kw >= 10 else 'NOT met'}")


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        sys.exit(f"import_report: {e}")
