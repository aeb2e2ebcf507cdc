#!/usr/bin/env python3
"""Reads Kairos exports with tools Kairos did not write, for crates/cli/tests/export.rs.

Usage: check.py FORMAT FILE [ARGS]. Prints one JSON object (what the file says: sample
count, total weight, function names) for the Rust test to compare with the result, or
exits non-zero with the reason. Only the standard library and `jsonschema` are used.
"""
import collections
import gzip
import json
import subprocess
import sys


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def check_speedscope(path, schema_path):
    import jsonschema  # installed by scripts/install-deps.sh

    doc = load_json(path)
    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.validate(doc, schema)  # raises with the failing path
    frames = doc["shared"]["frames"]
    samples, total, names = 0, 0, set()
    for p in doc["profiles"]:
        if p["type"] != "sampled":
            fail("not a sampled profile")
        if len(p["samples"]) != len(p["weights"]):
            fail("samples and weights differ in length")
        for stack in p["samples"]:
            for i in stack:
                if not (isinstance(i, int) and 0 <= i < len(frames)):
                    fail(f"frame index {i} out of range")
                names.add(frames[i]["name"])
        samples += len(p["samples"])
        total += sum(p["weights"])
    return {"samples": samples, "weight": total, "functions": sorted(names), "unit": doc["profiles"][0]["unit"] if doc["profiles"] else None}


def check_firefox(path):
    doc = load_json(path)
    meta = doc["meta"]
    for key in ("version", "interval", "startTime", "categories", "product"):
        if key not in meta:
            fail(f"meta.{key} missing")
    if not isinstance(meta["version"], int) or meta["version"] < 1:
        fail("meta.version is not a positive integer")
    shared = doc.get("shared", {})
    samples, names, pids = 0, set(), set()
    for t in doc["threads"]:
        for table in ("samples", "stackTable", "frameTable", "funcTable"):
            if table not in t:
                fail(f"thread {t.get('name')}: {table} missing")
        strings = t.get("stringArray") or t.get("stringTable") or shared.get("stringArray")
        if strings is None:
            fail("no string table, per thread or shared")
        st, ft, fn, sm = t["stackTable"], t["frameTable"], t["funcTable"], t["samples"]
        for table in (st, ft, fn, sm):
            n = table["length"]
            for col, v in table.items():
                if isinstance(v, list) and len(v) != n:
                    fail(f"column {col} has {len(v)} rows, table length {n}")
        for s in sm["stack"]:
            # Walk each sample's stack to the root through valid indices.
            seen = 0
            while s is not None:
                if not (0 <= s < st["length"]):
                    fail(f"stack index {s} out of range")
                frame = st["frame"][s]
                func = ft["func"][frame]
                names.add(strings[fn["name"][func]])
                s = st["prefix"][s]
                seen += 1
                if seen > st["length"]:
                    fail("cycle in stackTable")
        samples += sm["length"]
        pids.add(str(t["pid"]))
    return {"samples": samples, "functions": sorted(names), "processes": len(pids), "threads": len(doc["threads"]), "libs": [l["name"] for l in doc.get("libs", [])]}


def check_chrome(path):
    doc = load_json(path)
    events = doc["traceEvents"]
    names, threads, procs, spans = set(), set(), set(), 0
    for e in events:
        for key in ("name", "ph", "pid"):
            if key not in e:
                fail(f"event without {key}: {e}")
        if e["ph"] == "M":
            if e["name"] == "thread_name":
                threads.add((e["pid"], e["tid"]))
            elif e["name"] == "process_name":
                procs.add(e["pid"])
            if not isinstance(e["args"]["name"], str):
                fail("metadata event without a name")
        elif e["ph"] == "X":
            if not (e["dur"] >= 0 and e["ts"] >= 0):
                fail(f"negative time: {e}")
            if (e["pid"], e["tid"]) not in threads:
                fail("span before its thread_name")
            names.add(e["name"])
            spans += 1
        else:
            fail(f"unexpected phase {e['ph']}")
    return {"spans": spans, "functions": sorted(names), "threads": len(threads), "processes": len(procs)}


def perf_script_comms(perf_data):
    """Samples per command name as `perf script` counts them (stackcollapse's root)."""
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "comm,tid", "--hide-call-graph"],
                         capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    for line in out.splitlines():
        parts = line.rsplit(None, 1)
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0].strip()] += 1
    return counts


def check_collapsed(path, perf_data):
    ours = collections.Counter()
    names = set()
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if lines != sorted(lines):
        fail("lines are not sorted")
    for line in lines:
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        ours[frames[0]] += int(count)
        names.update(frames[1:])
    theirs = perf_script_comms(perf_data)
    if ours != theirs:
        fail(f"samples per process differ from perf script: ours {dict(ours)}, perf {dict(theirs)}")
    return {"samples": sum(ours.values()), "functions": sorted(names), "roots": dict(ours)}


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    if fmt == "speedscope":
        r = check_speedscope(path, sys.argv[3])
    elif fmt == "firefox":
        r = check_firefox(path)
    elif fmt == "chrome":
        r = check_chrome(path)
    elif fmt == "collapsed":
        r = check_collapsed(path, sys.argv[3])
    else:
        fail(f"unknown format {fmt}")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
