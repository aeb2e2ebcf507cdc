"""kairos query against DuckDB on the same fleet root: synthesized results published with
`kairos publish`, then each view question asked of both engines, each run a fresh process,
the median wall time of each and their ratio; the answers must agree. Python 3 standard
library and the duckdb module."""
import csv
import io
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import env_reps, log, run_main, scratch_dir  # noqa: E402

KAIROS, VIEWS_SQL = sys.argv[1], sys.argv[2]
REPS = env_reps("query_fleet")
RESULTS = int(os.environ.get("BENCH_RESULTS", "4"))
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "2500000"))
FUNCS = int(os.environ.get("BENCH_FUNCTIONS", "5000"))

QUESTIONS = [
    ("top functions over the fleet",
     "SELECT function, samples FROM top_functions ORDER BY samples DESC, function LIMIT 20"),
    ("self samples by result",
     "SELECT result, count(*) AS functions, CAST(sum(samples) AS BIGINT) AS samples "
     "FROM self_functions GROUP BY result ORDER BY result"),
    ("samples per host and thread",
     "SELECT s.host, t.tid, count(*) AS samples FROM samples s JOIN threads t "
     "ON t.host = s.host AND t.date = s.date AND t.result = s.result AND t.id = s.thread "
     "GROUP BY s.host, t.tid ORDER BY samples DESC, t.tid LIMIT 10"),
]

# DuckDB: each table folder as a view over its Parquet files with the partition columns
# from the paths (as strings), then the views of views.sql, then the question.
DUCKDB = r"""
import duckdb, os, sys
root, views_sql, question = sys.argv[1:4]
con = duckdb.connect()
tables = set()
for name in sorted(os.listdir(root)):
    if name == "manifests" or not os.path.isdir(os.path.join(root, name)):
        continue
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{root}/{name}/*/*/*/*.parquet', "
                f"hive_partitioning = true, hive_types_autocast = false, union_by_name = true)")
    tables.add(name)
block = None
for line in open(views_sql).read().splitlines() + ["-- view: end"]:
    if line.startswith("-- view:"):
        if block and all(t in tables for t in block[1]):
            con.execute(f"CREATE VIEW {block[0]} AS " + "\n".join(block[2]).strip().rstrip(";"))
        block = [line[8:].strip(), [], []]
    elif block is None or not line.strip():
        continue
    elif line.startswith("-- needs:"):
        block[1] = [t.strip() for t in line[9:].split(",")]
    elif not line.startswith("-- "):
        block[2].append(line)
r = con.execute(question)
print(",".join(d[0] for d in r.description))
for row in r.fetchall():
    print(",".join("" if v is None else str(v) for v in row))
"""


def timed(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {r.stderr.strip()[-400:]}")
    return dt, r.stdout


def rows(text):
    return [tuple(r) for r in csv.reader(io.StringIO(text))][1:]


def main():
    with scratch_dir("kairos-query-bench-") as tmp:
        fleet = os.path.join(tmp, "fleet")
        t0 = time.perf_counter()
        for i in range(RESULTS):
            d = os.path.join(tmp, f"r{i:03d}hs")
            subprocess.run([KAIROS, "lab", "synthesize", "--samples", str(SAMPLES), "--functions", str(FUNCS),
                            "--threads", "8", "-o", d], check=True, capture_output=True)
            subprocess.run([KAIROS, "publish", "-r", d, "--root", fleet], check=True, capture_output=True)
        log(f"{RESULTS} results of {SAMPLES:,} samples synthesized and published in {time.perf_counter() - t0:.1f} s")
        print(f"kairos query vs DuckDB, {RESULTS} results x {SAMPLES:,} samples, {FUNCS:,} functions, "
              f"median of {REPS} runs (fresh process each)")
        print(f"{'question':34} {'kairos (s)':>11} {'duckdb (s)':>11} {'ratio':>7}  answers")
        for name, sql in QUESTIONS:
            ours, theirs = [], []
            a = b = None
            for _ in range(REPS):
                dt, out = timed([KAIROS, "query", "--root", fleet, "-f", "csv", sql])
                ours.append(dt)
                a = rows(out)
                dt, out = timed([sys.executable, "-c", DUCKDB, fleet, VIEWS_SQL, sql])
                theirs.append(dt)
                b = rows(out)
            k, d = statistics.median(ours), statistics.median(theirs)
            same = "same" if a == b else "DIFFER"
            print(f"{name:34} {k:11.3f} {d:11.3f} {k / d:7.2f}  {same}")
            if a != b:
                log(f"kairos: {a[:5]}\nduckdb: {b[:5]}")


run_main("query_fleet", main)
