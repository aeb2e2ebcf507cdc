"""kairos view at scale (see bench/README.md).

Called by bench/view_scale.sh as: view_scale.py KAIROS SAMPLES_DIR WEB_DIR.
Python 3 standard library only; the page timings use Node and web/node_modules
(playwright-core) with Debian's Chromium when they are there.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request

from benchlib import scratch_dir

KAIROS, SAMPLES, WEB = sys.argv[1], sys.argv[2], sys.argv[3]
REPS = int(os.environ.get("BENCH_REPS", "5"))
N = int(os.environ.get("BENCH_SAMPLES", "10000000"))
FUNCS = int(os.environ.get("BENCH_FUNCTIONS", "5000"))
PERF_ITER = os.environ.get("BENCH_PERF_ITER", "10000")
# A result made before (e.g. by `kairos lab synthesize --samples 100000000`): reused as it
# is, since a 100-million-sample one takes a while and gigabytes to make.
RESULT = os.environ.get("BENCH_RESULT")
# 0: skip the side-by-side with perf report (it does not depend on BENCH_SAMPLES).
SIDE_BY_SIDE = os.environ.get("BENCH_SIDE_BY_SIDE", "1") != "0"
CHROMIUM = os.environ.get("KAIROS_CHROMIUM", "/usr/bin/chromium")
HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class View:
    """A running `kairos view`; `load_s` is the time from start to its URL line."""

    def __init__(self, *dirs):
        args = [KAIROS, "view", "--no-browser", "--port", "0"]
        for d in dirs:
            args += ["-r", d]
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        self.load_s = time.perf_counter() - t0
        m = re.match(r"Kairos view: (\S+)", line)
        if not m:
            self.close()
            raise RuntimeError(f"kairos view printed no URL: {line!r}")
        self.url = m.group(1)

    def get(self, call):
        t0 = time.perf_counter()
        with urllib.request.urlopen(self.url + "api/" + call, timeout=600) as r:
            body = r.read()
        return time.perf_counter() - t0, json.loads(body)

    def peak_rss(self):
        """The server's peak resident memory in bytes (VmHWM), None where /proc lacks it."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def close(self):
        self.proc.kill()
        self.proc.wait()


def ms(x):
    return f"{x * 1000:8.1f} ms"


def scale(tmp):
    if RESULT:
        result = RESULT
        log(f"using the result in {result} (BENCH_RESULT)")
    else:
        result = os.path.join(tmp, "big")
        t0 = time.perf_counter()
        subprocess.run([KAIROS, "lab", "synthesize", "--samples", str(N), "--functions", str(FUNCS), "--threads", "8",
                        "--interval-us", "100", "-o", result], check=True, stdout=subprocess.DEVNULL)
        log(f"synthesized {N:,} samples of {FUNCS:,} functions in {time.perf_counter() - t0:.1f} s")
    first_view = [("results", "results"), ("summary", "summary"),
                  ("timeline", "timeline?width=1400"), ("tree", "tree?kind=top-down")]
    loads, firsts, per, peaks = [], [], {}, []
    interactions = {}
    for rep in range(REPS):
        v = View(result)
        try:
            loads.append(v.load_s)
            _, info = v.get("results")
            dur = info["results"][0]["duration_ns"]
            tid = info["results"][0]["threads"][0]["tid"]
            total = 0.0
            for name, call in first_view:
                dt, _ = v.get(call)
                per.setdefault(name, []).append(dt)
                total += dt
            firsts.append(v.load_s + total)
            a, b = dur * 4 // 10, dur * 5 // 10
            # Most of the run: the sums at block edges and two partial blocks' scans.
            a90, b90 = dur * 5 // 100, dur * 95 // 100
            _, cpus = v.get("tree?kind=top-down&group=cpu")
            cpu = cpus["rows"]["id"][0]
            for name, call in [
                ("zoom to 10% (timeline)", f"timeline?width=1400&from={a}&to={b}"),
                ("zoom to 0.1% (timeline)", f"timeline?width=1400&from={a}&to={a + dur // 1000}"),
                ("zoom out to all (timeline, by CPU)", "timeline?width=1400&lanes=cpu"),
                ("select 10% (summary)", f"summary?from={a}&to={b}"),
                ("select 10% (top-down)", f"tree?kind=top-down&from={a}&to={b}"),
                ("select 10% (bottom-up)", f"tree?kind=bottom-up&from={a}&to={b}"),
                ("filter one thread (timeline)", f"timeline?width=1400&tids={tid}"),
                ("filter one thread (summary)", f"summary?tids={tid}"),
                ("group by thread (top-down)", "tree?kind=top-down&group=thread"),
                ("select 90% (summary)", f"summary?from={a90}&to={b90}"),
                ("select 90% (top-down)", f"tree?kind=top-down&from={a90}&to={b90}"),
                ("expand one CPU's group (top-down)", f"tree?kind=top-down&group=cpu&path={cpu}"),
                ("filter one thread (timeline, by CPU)", f"timeline?width=1400&lanes=cpu&tids={tid}"),
            ]:
                dt, _ = v.get(call)
                interactions.setdefault(name, []).append(dt)
            page = page_timings(v.url) if rep == 0 else None
            if page:
                interactions.setdefault("page: first view drawn (browser)", []).append(page["first_view_ms"] / 1000)
                interactions.setdefault("page: wheel zoom redrawn (browser)", []).append(page["zoom_ms"] / 1000)
            peak = v.peak_rss()
            if peak is not None:
                peaks.append(peak)
        finally:
            v.close()
    samples = info["results"][0]["samples"]
    print(f"\n== kairos view, {samples:,} samples, {FUNCS:,} functions, 8 threads (median of {REPS}) ==")
    print(f"  load and index (start to URL)        {ms(statistics.median(loads))}")
    for name, _ in first_view:
        print(f"  first view: api/{name:<24} {ms(statistics.median(per[name]))}")
    fv = statistics.median(firsts)
    print(f"  first view, server side in total     {ms(fv)}   goal <= 3000 ms: {'met' if fv <= 3 else 'NOT met'}")
    worst = 0.0
    for name, xs in interactions.items():
        m = statistics.median(xs)
        if not name.startswith("page"):
            worst = max(worst, m)
        print(f"  {name:<37}{ms(m)}")
    print(f"  slowest zoom/filter answer           {ms(worst)}   goal <= 200 ms: {'met' if worst <= 0.2 else 'NOT met'}")
    if peaks:
        mb = max(peaks) / 2**20
        print(f"  server memory, peak (VmHWM)          {mb:8.0f} MB   goal <= 4096 MB: {'met' if mb <= 4096 else 'NOT met'}")
    else:
        print("  server memory: not measured (/proc/PID/status has no VmHWM here)")


def page_timings(url):
    """First view and one wheel zoom in headless Chromium, when Node and the page's
    packages are there; None otherwise (said once)."""
    if not (shutil.which("node") and os.path.isdir(os.path.join(WEB, "node_modules", "playwright-core"))
            and os.path.exists(CHROMIUM)):
        log("page timings skipped: needs node, web/node_modules (npm ci) and chromium")
        return None
    r = subprocess.run(["node", os.path.join(HERE, "view_page.mjs"), WEB, CHROMIUM, url],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        log(f"page timings failed: {r.stderr[-2000:]}")
        return None
    return json.loads(r.stdout)


def side_by_side(tmp):
    """From a perf.data to a first look: perf report --stdio against kairos import + view."""
    data = os.path.join(tmp, "perf.data")
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-c", "10000", "-g", "-o", data, "--",
                    os.path.join(SAMPLES, "transitions"), PERF_ITER],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    perf_t, kairos_t, n = [], [], None
    for rep in range(REPS):
        t0 = time.perf_counter()
        subprocess.run(["perf", "report", "--stdio", "-i", data], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        perf_t.append(time.perf_counter() - t0)
        r = os.path.join(tmp, f"imp{rep}")
        t0 = time.perf_counter()
        subprocess.run([KAIROS, "import", "-q", data, "-r", r], check=True, stdout=subprocess.DEVNULL)
        v = View(r)
        try:
            for call in ["results", "summary", "timeline?width=1400", "tree?kind=top-down"]:
                _, body = v.get(call)
                if call == "results":
                    n = body["results"][0]["samples"]
        finally:
            v.close()
        kairos_t.append(time.perf_counter() - t0)
        shutil.rmtree(r)
    p, k = statistics.median(perf_t), statistics.median(kairos_t)
    print(f"\n== from perf.data ({n:,} samples, call graphs) to a first look (median of {REPS}) ==")
    print(f"  perf report --stdio                  {ms(p)}")
    print(f"  kairos import + view first view      {ms(k)}   ratio kairos/perf {k / p:.2f}")


def derive_scale(tmp):
    """Time assignment at scale (issue 14 item 4, bench/README.md): deriving the default
    method's points, as the page's method switch does, on BENCH_DERIVE_SAMPLES samples
    with synthetic branch records (BENCH_BRANCH_DEPTH deep) against the same samples
    without them. Each run is a fresh `kairos lab derive` process: it loads the result,
    then measures the derivation's time and its peak resident memory."""
    n = int(os.environ.get("BENCH_DERIVE_SAMPLES", str(N)))
    depth = os.environ.get("BENCH_BRANCH_DEPTH", "16")
    reps = int(os.environ.get("BENCH_DERIVE_REPS", "3"))
    rows = {}
    for key, extra in [("plain", []), ("branches", ["--branches", depth])]:
        d = os.path.join(tmp, f"derive-{key}")
        t0 = time.perf_counter()
        subprocess.run([KAIROS, "lab", "synthesize", "--samples", str(n), "--functions", str(FUNCS), "--threads", "8",
                        "--interval-us", "100", "-o", d] + extra, check=True, stdout=subprocess.DEVNULL)
        log(f"synthesized {n:,} samples ({key}) in {time.perf_counter() - t0:.1f} s")
        runs = []
        for _ in range(reps):
            out = subprocess.run([KAIROS, "lab", "derive", "-r", d, "--format", "json"], check=True,
                                 capture_output=True, text=True).stdout
            v = {k: x for b in json.loads(out)["blocks"] for k, x in b.get("values", {}).items()}
            runs.append(v)
        rows[key] = runs
        shutil.rmtree(d, ignore_errors=True)

    def med(key, field):
        xs = [r[field] for r in rows[key] if isinstance(r.get(field), (int, float))]
        return statistics.median(xs) if xs else None

    def mib(x):
        return f"{x:8.0f} MiB" if x is not None else "not measured"

    b, p = rows["branches"][0], rows["plain"][0]
    print(f"\n== time assignment at scale: the default method's points, {n:,} samples (median of {reps}) ==")
    print(f"  branch records (depth {depth}): {b['Branch records']:,}, new: {b['New branch records']:,}; "
          f"points: {b['Points']:,} with, {p['Points']:,} without")
    for label, field, fmt in [("derive time", "Derive (s)", lambda x: ms(x)),
                              ("resident after load", "Resident after load (MiB)", mib),
                              ("peak resident while deriving", "Peak while deriving (MiB)", mib),
                              ("added by deriving", "Added by deriving (MiB)", mib)]:
        print(f"  {label:<30} with {fmt(med('branches', field))}   without {fmt(med('plain', field))}")
    t = med("branches", "Derive (s)")
    print(f"  derive time with branch records {ms(t)}   goal <= 3000 ms: {'met' if t <= 3 else 'NOT met'}")
    added_b, added_p = med("branches", "Added by deriving (MiB)"), med("plain", "Added by deriving (MiB)")
    peak_b, peak_p = med("branches", "Peak while deriving (MiB)"), med("plain", "Peak while deriving (MiB)")
    if None in (added_b, added_p, peak_b, peak_p) or not added_p or not peak_p:
        print("  memory goal: not measured (this kernel gives no VmHWM reset)")
    else:
        print(f"  memory added by deriving, with / without: {added_b / added_p:.1f}x   goal <= 2x: "
              f"{'met' if added_b <= 2 * added_p else 'NOT met'}")
        print(f"  whole-process peak, with / without:       {peak_b / peak_p:.1f}x   (includes the loaded branch records)")


def main():
    if REPS < 1:
        sys.exit("view_scale: BENCH_REPS must be >= 1")
    # Removed on exit and on SIGINT/SIGTERM: the results here are gigabytes.
    with scratch_dir("kairos-view-bench-") as tmp:
        # BENCH_DERIVE_ONLY=1: only the time-assignment section (its own result, no view).
        if os.environ.get("BENCH_DERIVE_ONLY", "0") == "0":
            scale(tmp)
            if SIDE_BY_SIDE:
                side_by_side(tmp)
        derive_scale(tmp)


main()
