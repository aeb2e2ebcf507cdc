"""Runs one SQL query with Spark (pyspark, local mode) over a Kairos fleet layout, after
defining the views of crates/fleet/src/views.sql the way that file says any engine
should: each table folder of the root read as one table whose host, date and result
columns come from the paths (as strings), each view's SELECT registered under its name.

Usage: spark_views.py ROOT VIEWS_SQL QUERY...
Prints the rows of each query as one line: a JSON array of objects (integral decimals as
integers). One Spark session answers every query (a session takes seconds to start).
"""

import decimal
import json
import os
import sys

from pyspark.sql import SparkSession


def views(text):
    """(name, needs, select) of each `-- view:` block, as crates/fleet/src/views.rs reads them."""
    out = []
    for line in text.splitlines():
        if line.startswith("-- view:"):
            out.append([line[len("-- view:"):].strip(), [], []])
        elif not out:
            continue
        elif line.startswith("-- needs:"):
            out[-1][1] = [t.strip() for t in line[len("-- needs:"):].split(",")]
        elif line.startswith("-- ") or not line.strip():
            continue
        else:
            out[-1][2].append(line)
    return [(n, needs, "\n".join(sql).strip().rstrip(";")) for n, needs, sql in out]


def plain(v):
    if isinstance(v, decimal.Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def main():
    root, views_sql, queries = sys.argv[1], sys.argv[2], sys.argv[3:]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kairos-fleet")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    tables = set()
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if name == "manifests" or not os.path.isdir(folder):
            continue
        spark.read.option("mergeSchema", "true").parquet(folder).createOrReplaceTempView(name)
        tables.add(name)
    with open(views_sql, encoding="utf-8") as f:
        for name, needs, sql in views(f.read()):
            if all(t in tables for t in needs):
                spark.sql(sql).createOrReplaceTempView(name)
    for query in queries:
        rows = spark.sql(query).collect()
        print(json.dumps([{k: plain(v) for k, v in r.asDict().items()} for r in rows]))
    spark.stop()


if __name__ == "__main__":
    main()
