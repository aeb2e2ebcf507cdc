"""What the benchmark scripts share: logging, the binary that may be rebuilt under them,
perf's sample counts, how busy the machine was, the scratch directory and the way errors
end a run. Python 3 standard library only."""
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def env_reps(script, default="5"):
    """BENCH_REPS, at least 1."""
    reps = int(os.environ.get("BENCH_REPS", default))
    if reps < 1:
        sys.exit(f"{script}: BENCH_REPS must be >= 1")
    return reps


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


def perf_stats(path, timeout):
    """(samples, lost samples) of a perf.data file, from `perf report --stats`; samples is
    None when perf printed no count."""
    r = subprocess.run(["perf", "report", "--stats", "-i", path], capture_output=True,
                       text=True, timeout=timeout)
    m = re.search(r"SAMPLE events:\s+(\d+)", r.stdout)
    lost = re.search(r"LOST_SAMPLES events:\s+(\d+)", r.stdout)
    return (int(m.group(1)) if m else None), (int(lost.group(1)) if lost else 0)


class CpuMeter:
    """How busy all CPUs were between its creation and `stop()`, from /proc/stat: the
    shares of busy time (ours and anything else running) and of time stolen by the
    hypervisor."""

    def __init__(self):
        self.start = self._read()

    @staticmethod
    def _read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        steal = v[7] if len(v) > 7 else 0
        return sum(v[:8]), idle, steal

    def stop(self):
        """(busy share, steal share), each 0..1."""
        end = self._read()
        total = max(1, end[0] - self.start[0])
        return 1 - (end[1] - self.start[1]) / total, (end[2] - self.start[2]) / total


@contextlib.contextmanager
def scratch_dir(prefix):
    """A temporary directory, removed on exit and on SIGINT/SIGTERM."""
    tmp = tempfile.mkdtemp(prefix=prefix)

    def on_signal(signum, _frame):
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_main(script, main):
    """Runs `main`; a failed run ends the benchmark with a one-line message."""
    try:
        main()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        sys.exit(f"{script}: {e}")
