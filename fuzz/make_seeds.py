#!/usr/bin/env python3
"""Makes small fuzzing seeds from perf.data files.

AFL wants small seeds (a few KB): the real recordings are MBs. For a file-mode perf.data
this keeps everything before the data section verbatim (header, attr ids, attrs), a
selection of the records (the first non-sample records and the first samples, in file
order, each part within a byte budget) and the feature sections that are small, and
rewrites the header (data.size, feature bits) and the feature table to match. A pipe-mode
file (`perf record -o -`) is cut after the last whole record that fits the budget.

    python3 fuzz/make_seeds.py OUT_DIR FILE.perf.data...        # one seed per file
    python3 fuzz/make_seeds.py --record OUT_DIR                 # also record tiny files here

Independent of the Rust reader on purpose: a bug in the reader must not shape the seeds.
"""

import argparse
import os
import struct
import subprocess
import sys
import tempfile

HEADER_SIZE = 104
PIPE_HEADER_SIZE = 16
PERF_RECORD_SAMPLE = 9
PERF_RECORD_AUXTRACE = 71
PERF_RECORD_HEADER_TRACING_DATA = 66

# Sections larger than this are dropped from a seed (their feature bit cleared).
FEATURE_CAP = 4096
# The seed-size limit that the repository keeps (README of fuzz/).
MAX_SEED = 64 * 1024


def u64(b, off):
    return struct.unpack_from("<Q", b, off)[0]


def split_records(data, start, end):
    """(offset, bytes) of each record in data[start:end]; stops at the first bad one."""
    out = []
    pos = start
    while pos + 8 <= end:
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        if size < 8 or pos + size > end:
            break
        total = size
        if rtype == PERF_RECORD_AUXTRACE and size >= 16:
            total += u64(data, pos + 8)
        elif rtype == PERF_RECORD_HEADER_TRACING_DATA and size >= 12:
            total += (struct.unpack_from("<I", data, pos + 8)[0] + 7) // 8 * 8
        if pos + total > end:
            break
        out.append((rtype, data[pos:pos + total]))
        pos += total
    return out


def choose(records, budget):
    """Non-sample records up to half the budget, samples up to the rest, in file order."""
    other_budget = budget // 2
    sample_budget = budget - other_budget
    kept = []
    for rtype, rec in records:
        if rtype == PERF_RECORD_AUXTRACE:
            continue
        if rtype == PERF_RECORD_SAMPLE:
            if len(rec) <= sample_budget:
                kept.append(rec)
                sample_budget -= len(rec)
        elif len(rec) <= other_budget:
            kept.append(rec)
            other_budget -= len(rec)
        if sample_budget < 16 and other_budget < 16:
            break
    return b"".join(kept)


def shrink_file_mode(data, budget):
    (attr_size, a_off, a_size, d_off, d_size, e_off, e_size) = struct.unpack_from("<7Q", data, 16)
    features = list(struct.unpack_from("<4Q", data, 72))
    d_end = d_off + d_size if d_size else len(data)
    if d_off > len(data) or d_end > len(data):
        raise ValueError("data section outside the file")
    prefix = bytearray(data[:d_off])
    if len(prefix) > budget:
        raise ValueError(f"{len(prefix)} bytes before the data section")
    records = choose(split_records(data, d_off, d_end), max(budget - len(prefix), 0))

    # Feature sections: one {offset, size} per set bit, in bit order, right after data.
    sections = []
    table = d_off + d_size
    bits = [b for b in range(256) if features[b // 64] >> (b % 64) & 1]
    for i, bit in enumerate(bits):
        at = table + 16 * i
        if d_size == 0 or at + 16 > len(data):
            break
        off, size = struct.unpack_from("<QQ", data, at)
        if off + size <= len(data) and size <= FEATURE_CAP:
            sections.append((bit, data[off:off + size]))
    new_features = [0, 0, 0, 0]
    for bit, _ in sections:
        new_features[bit // 64] |= 1 << (bit % 64)

    out = prefix + records
    new_table = len(out)
    out += b"\0" * (16 * len(sections))
    for i, (bit, body) in enumerate(sections):
        struct.pack_into("<QQ", out, new_table + 16 * i, len(out), len(body))
        out += body
    struct.pack_into("<QQ", out, 40, d_off, len(records))
    struct.pack_into("<4Q", out, 72, *new_features)
    return bytes(out)


def shrink_pipe_mode(data, budget):
    keep = PIPE_HEADER_SIZE
    for _rtype, rec in split_records(data, PIPE_HEADER_SIZE, len(data)):
        if keep + len(rec) > budget:
            break
        keep += len(rec)
    return data[:keep]


def shrink(data, budget):
    if len(data) < 16 or data[:8] != b"PERFILE2":
        raise ValueError("not a little-endian perf.data file")
    if u64(data, 8) == PIPE_HEADER_SIZE:
        return shrink_pipe_mode(data, budget)
    if len(data) < HEADER_SIZE:
        raise ValueError("truncated header")
    return shrink_file_mode(data, budget)


# Tiny recordings of this machine (no PMU here: software events only). Each is
# (name, perf record arguments); a recording that perf refuses is skipped.
WORKLOAD = ["sh", "-c", "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done"]
RECORDINGS = [
    ("fp", ["-e", "cpu-clock", "-c", "100000", "-g"]),
    ("nocallchain", ["-e", "cpu-clock", "-c", "200000"]),
    ("zstd", ["-e", "cpu-clock", "-c", "100000", "-g", "-z"]),
    ("pipe", ["-e", "cpu-clock", "-c", "100000", "-g", "PIPE"]),
    ("two-events", ["-e", "cpu-clock,task-clock", "-c", "100000", "-g"]),
    ("group-read", ["-e", "{cpu-clock,task-clock}:S", "-c", "100000"]),
    ("dwarf", ["-e", "cpu-clock", "-c", "200000", "--call-graph", "dwarf,512"]),
    ("faults-addr", ["-e", "page-faults", "-c", "1", "-d", "--sample-cpu", "-T", "--phys-data"]),
    ("switch-ns", ["-e", "cpu-clock", "-c", "100000", "--switch-events", "--namespaces", "--sample-identifier"]),
    ("intr-regs", ["-e", "cpu-clock", "-c", "100000", "--intr-regs", "--user-regs=ip,sp", "-W"]),
    # Address sampling: user registers without a stack copy, decoded into data accesses.
    ("user-regs", ["-e", "cpu-clock", "-c", "100000", "-g", "--user-regs=ax,bx,cx,dx,si,di,bp,sp,ip,r8,r9,r10,r11,r12,r13,r14,r15"]),
    ("lbr", ["-e", "cpu-clock", "-c", "100000", "-j", "any_call,u"]),
    ("tracepoint", ["-e", "sched:sched_process_exec", "-e", "cpu-clock", "-c", "100000"]),
]


def record(tmp):
    made = []
    for name, args in RECORDINGS:
        out = os.path.join(tmp, name + ".perf.data")
        pipe = "PIPE" in args
        args = [a for a in args if a != "PIPE"]
        cmd = ["perf", "record", "-q", "-o", "-" if pipe else out] + args + ["--"] + WORKLOAD
        try:
            if pipe:
                with open(out, "wb") as f:
                    r = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, timeout=60)
            else:
                r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"  record {name}: {e}", file=sys.stderr)
            continue
        if r.returncode != 0 or not os.path.exists(out) or os.path.getsize(out) == 0:
            why = r.stderr.decode(errors="replace").strip().splitlines()
            print(f"  record {name}: perf failed ({why[-1] if why else r.returncode}), skipped", file=sys.stderr)
            continue
        made.append(out)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--record", action="store_true", help="also record tiny perf.data files with perf")
    ap.add_argument("--budget", type=int, default=12 * 1024, help="bytes of records per seed (default 12 KiB)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        files = list(args.files)
        if args.record:
            files += record(tmp)
        total = 0
        for path in files:
            name = os.path.basename(path)
            if not name.endswith(".perf.data"):
                name += ".perf.data"
            if path.startswith(tmp):
                name = "local-" + name
            with open(path, "rb") as f:
                data = f.read()
            try:
                seed = shrink(data, args.budget)
            except ValueError as e:
                print(f"  {path}: {e}, skipped", file=sys.stderr)
                continue
            if len(seed) > MAX_SEED:
                print(f"  {path}: seed of {len(seed)} bytes is over {MAX_SEED}, skipped", file=sys.stderr)
                continue
            with open(os.path.join(args.out_dir, name), "wb") as f:
                f.write(seed)
            total += len(seed)
            print(f"  {name}: {len(data)} -> {len(seed)} bytes")
        print(f"{len(os.listdir(args.out_dir))} seeds in {args.out_dir}, {total} bytes written")


if __name__ == "__main__":
    main()
