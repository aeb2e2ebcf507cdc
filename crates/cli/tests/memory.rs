//! `kairos collect memory-consumption` end to end: the tracker's totals against the
//! sample's own counts and valgrind DHAT's, the matrix sample, and the sentences for a
//! static binary and a bad knob.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{kairos, kairos_in, sample, tempdir};

/// The number after `key` in a text report (`Key:   1234`).
fn value(report: &str, key: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no '{key}' in the report:\n{report}"));
    line[line.find(key).unwrap() + key.len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number in '{line}'"))
}

/// `name=NUMBER` from the sample's last line.
fn printed(stdout: &str, name: &str) -> u64 {
    stdout
        .split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("sample did not print {name}:\n{stdout}"))
}

fn collect(dir: &Path, knobs: &[&str], program: &[&str]) -> common::Run {
    let mut args = vec!["collect", "memory-consumption", "-q", "-r", "res"];
    for k in knobs {
        args.extend(["-k", k]);
    }
    args.push("--");
    args.extend(program);
    kairos_in(dir, &args)
}

/// DHAT's "Total: X bytes in Y blocks" from its stderr, checked against its JSON file.
fn dhat(program: &Path, out: &Path) -> (u64, u64) {
    let o = Command::new("valgrind")
        .arg("--tool=dhat")
        .arg(format!("--dhat-out-file={}", out.display()))
        .arg(program)
        .output()
        .expect("valgrind is installed (scripts/install-deps.sh)");
    assert!(
        o.status.success(),
        "valgrind failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("Total:"))
        .unwrap_or_else(|| panic!("no DHAT total in:\n{err}"));
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.replace(',', "").parse().ok())
        .collect();
    let (bytes, blocks) = (nums[nums.len() - 2], nums[nums.len() - 1]);
    // The same totals summed over DHAT's program points.
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    let pps = json["pps"].as_array().unwrap();
    let sum = |k: &str| pps.iter().map(|p| p[k].as_u64().unwrap_or(0)).sum::<u64>();
    assert_eq!(
        (sum("tb"), sum("tbk")),
        (bytes, blocks),
        "DHAT's summary and JSON disagree"
    );
    (bytes, blocks)
}

#[test]
fn agrees_with_the_sample_and_with_dhat() {
    let dir = tempdir();
    let allocs = sample("allocs");
    let run = collect(dir.path(), &[], &[allocs.to_str().unwrap()]).ok();
    let summary = kairos(&[
        "report",
        "summary",
        "-r",
        dir.path().join("res").to_str().unwrap(),
    ])
    .ok()
    .stdout;

    // Against the sample's own counts: it cannot see libc's stdio buffer and the new
    // thread's TLS vector, which the tracker reports on top (4096 + 288 bytes, 2 blocks).
    let (heap, blocks) = (
        printed(&run.stdout, "heap_bytes"),
        printed(&run.stdout, "heap_blocks"),
    );
    let ours_bytes = value(&summary, "DHAT-comparable total (B):");
    let ours_blocks = value(&summary, "Total blocks:");
    assert!(
        ours_bytes >= heap && ours_bytes - heap <= 8192,
        "tracker {ours_bytes} B vs sample {heap} B"
    );
    assert!(
        ours_blocks >= blocks && ours_blocks - blocks <= 4,
        "tracker {ours_blocks} blocks vs sample {blocks}"
    );
    assert!(
        value(&summary, "Still allocated at exit (B):") >= printed(&run.stdout, "leaked_bytes")
    );
    assert_eq!(
        value(&summary, "Mapped (B):"),
        printed(&run.stdout, "mmap_bytes")
    );
    assert_eq!(value(&summary, "Mapped at exit (B):"), 0);

    // Against DHAT: blocks exactly; bytes exactly once the explained +16 B per thread is
    // taken off (the tracker's TLS makes each new thread's TLS vector one slot larger).
    let (d_bytes, d_blocks) = dhat(&allocs, &dir.path().join("dhat.json"));
    let threads = value(&summary, "Threads:");
    assert_eq!(
        ours_blocks, d_blocks,
        "blocks: kairos {ours_blocks}, DHAT {d_blocks}"
    );
    assert_eq!(
        ours_bytes,
        d_bytes + 16 * (threads - 1),
        "bytes: kairos {ours_bytes}, DHAT {d_bytes}, {threads} threads"
    );
    assert!(
        summary.contains("Expected differences from DHAT"),
        "{summary}"
    );
    eprintln!("DHAT agreement: kairos {ours_bytes} B in {ours_blocks} blocks, DHAT {d_bytes} B in {d_blocks} blocks, {threads} threads");

    // Sites are named file:line (size) of the caller of malloc.
    let objs = kairos(&[
        "report",
        "allocations",
        "-r",
        dir.path().join("res").to_str().unwrap(),
        "--limit",
        "0",
    ])
    .ok()
    .stdout;
    assert!(
        objs.contains("allocs.c:") && objs.contains("(777 B)") && objs.contains("leak_blocks"),
        "{objs}"
    );
    for r in ["sizes", "heap-timeline"] {
        let out = kairos(&["report", r, "-r", dir.path().join("res").to_str().unwrap()])
            .ok()
            .stdout;
        assert!(out.lines().count() > 4, "{out}");
    }
    let e = kairos(&[
        "report",
        "hotspots",
        "-r",
        dir.path().join("res").to_str().unwrap(),
    ]);
    assert_eq!(e.code, 2);
    assert!(
        e.stderr
            .contains("its reports are: summary, allocations, sizes, heap-timeline"),
        "{}",
        e.stderr
    );
}

#[test]
fn min_object_size_keeps_totals_exact() {
    let dir = tempdir();
    let allocs = sample("allocs");
    collect(
        dir.path(),
        &["min-object-size=100"],
        &[allocs.to_str().unwrap()],
    )
    .ok();
    let summary = kairos(&[
        "report",
        "summary",
        "-r",
        dir.path().join("res").to_str().unwrap(),
    ])
    .ok()
    .stdout;
    let all = tempdir();
    collect(all.path(), &[], &[allocs.to_str().unwrap()]).ok();
    let full = kairos(&[
        "report",
        "summary",
        "-r",
        all.path().join("res").to_str().unwrap(),
    ])
    .ok()
    .stdout;
    for k in [
        "Total allocated (B):",
        "Total blocks:",
        "Still allocated at exit (B):",
        "Peak heap (B):",
    ] {
        assert_eq!(value(&summary, k), value(&full, k), "{k}");
    }
    let objs = kairos(&[
        "report",
        "allocations",
        "-r",
        dir.path().join("res").to_str().unwrap(),
        "--limit",
        "0",
    ])
    .ok()
    .stdout;
    assert!(
        objs.contains("below min-object-size") && !objs.contains("small_blocks"),
        "{objs}"
    );
}

#[test]
fn matrix_allocates_its_three_matrices() {
    let dir = tempdir();
    collect(
        dir.path(),
        &[],
        &[sample("matrix").to_str().unwrap(), "512"],
    )
    .ok();
    let summary = kairos(&[
        "report",
        "summary",
        "-r",
        dir.path().join("res").to_str().unwrap(),
    ])
    .ok()
    .stdout;
    let want = 3 * 512 * 512 * 8;
    let got = value(&summary, "Total allocated (B):");
    // Plus stdio's buffer (4 KiB, or 1 KiB on a terminal).
    assert!(
        got >= want && got <= want + 8192,
        "matrix 512 allocated {got} B, expected {want} + stdio buffers"
    );
    assert!(
        summary.contains("matrix.c:") && summary.contains("(2097152 B)"),
        "{summary}"
    );
}

#[test]
fn static_binary_and_bad_knob_get_a_sentence() {
    let dir = tempdir();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/allocs.c");
    let exe = dir.path().join("allocs-static");
    let built = Command::new("cc")
        .args(["-static", "-O2", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status();
    if built.is_ok_and(|s| s.success()) {
        let r = collect(dir.path(), &[], &[exe.to_str().unwrap()]);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(
            r.stderr.contains("is statically linked: the allocation tracker (LD_PRELOAD) cannot be loaded into it; rebuild it dynamically"),
            "{}",
            r.stderr
        );
        assert!(!dir.path().join("res").exists(), "no result is left behind");
    } else {
        eprintln!("skipped the static part: `cc -static` does not work here (no static libc)");
    }
    let r = collect(dir.path(), &["min-object-size=lots"], &["/bin/true"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("knob min-object-size=lots is not valid: it takes a whole number of bytes"),
        "{}",
        r.stderr
    );
    let r = kairos_in(dir.path(), &["collect", "memory-consumption", "-p", "1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("cannot attach (-p)"), "{}", r.stderr);
}
