//! `kairos collect trace`: the exact tracer agrees with uftrace call for call (instrument
//! mode), uprobes mode agrees with instrument mode, and misuse gets a clear sentence.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{kairos, sample, tempdir};

/// Calls of a trace result: per-function counts and the function names in call order.
fn calls_of(dir: &Path) -> (BTreeMap<String, u64>, Vec<String>) {
    let rd = kairos_result::ResultDir::open(dir).unwrap();
    assert_eq!(rd.manifest().kind.as_deref(), Some("trace"));
    let p = kairos_result::read_profile(&rd).unwrap();
    let mut counts = BTreeMap::new();
    let mut seq = Vec::new();
    for c in &p.calls {
        let f = p.frames[c.frame as usize].function.clone();
        *counts.entry(f.clone()).or_insert(0) += 1;
        seq.push(f);
    }
    (counts, seq)
}

fn trace_mode(dir: &Path) -> String {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    m["trace"]["mode"].as_str().unwrap_or("").to_string()
}

/// uftrace's view: a -pg build of the same source, recorded without library calls; the
/// replay lists every call in order ("name() {" or "name();" lines).
fn uftrace_calls(tmp: &Path, iter: &str) -> (BTreeMap<String, u64>, Vec<String>) {
    let have = Command::new("uftrace")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        have,
        "uftrace is not installed; run scripts/install-deps.sh (Debian package uftrace)"
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/transitions.c");
    let exe = tmp.join("transitions-pg");
    // The flags of crates/cli/build.rs, with -pg instead of -finstrument-functions.
    let cc = Command::new("cc")
        .args([
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-fno-inline",
            "-fno-optimize-sibling-calls",
            "-mno-omit-leaf-frame-pointer",
            "-pthread",
            "-pg",
            "-o",
        ])
        .arg(&exe)
        .arg(&src)
        .arg("-lm")
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let data = tmp.join("uftrace.data");
    let rec = Command::new("uftrace")
        .args(["record", "--no-libcall", "-d"])
        .arg(&data)
        .arg(&exe)
        .arg(iter)
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "uftrace record failed: {}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let rep = Command::new("uftrace")
        .args(["replay", "-f", "none", "--no-event", "-d"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "uftrace replay failed: {}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let mut counts = BTreeMap::new();
    let mut seq = Vec::new();
    for line in String::from_utf8_lossy(&rep.stdout).lines() {
        let l = line.trim();
        let Some(name) = l.strip_suffix("() {").or_else(|| l.strip_suffix("();")) else {
            continue;
        };
        // Kernel events such as "linux:schedule" are not calls of the program.
        if name.contains(':') {
            continue;
        }
        *counts.entry(name.to_string()).or_insert(0) += 1;
        seq.push(name.to_string());
    }
    (counts, seq)
}

/// `calibrate` doubles its loop until 50 ms have passed, calling `now_ns` twice a round:
/// how many rounds depends on the machine's speed at that moment, so two runs of the same
/// program may differ there (and only there). The comparison leaves `now_ns` out when its
/// counts differ, and checks both runs made whole rounds.
#[allow(clippy::type_complexity)] // both runs' (counts, rounds), as they were read
fn without_timing_dependent(
    mut a: (BTreeMap<String, u64>, Vec<String>),
    mut b: (BTreeMap<String, u64>, Vec<String>),
) -> (
    (BTreeMap<String, u64>, Vec<String>),
    (BTreeMap<String, u64>, Vec<String>),
) {
    if a.0.get("now_ns") != b.0.get("now_ns") {
        for x in [&mut a, &mut b] {
            let n = x.0.remove("now_ns").unwrap_or(0);
            assert!(n >= 4 && n % 2 == 0, "now_ns calls {n}");
            x.1.retain(|f| f != "now_ns");
        }
    }
    (a, b)
}

#[test]
fn instrument_mode_agrees_with_uftrace_call_for_call() {
    let tmp = tempdir();
    let r = tmp.path().join("r000tr");
    let run = kairos(&[
        "collect",
        "trace",
        "-q",
        "-k",
        "mode=instrument",
        "-r",
        r.to_str().unwrap(),
        "--",
        sample("transitions-instrumented").to_str().unwrap(),
        "20",
    ])
    .ok();
    assert!(run.stdout.contains("tracer overhead:"), "{}", run.stdout);
    assert_eq!(trace_mode(&r), "instrument");
    let ((ours, our_seq), (theirs, their_seq)) =
        without_timing_dependent(calls_of(&r), uftrace_calls(tmp.path(), "20"));
    assert_eq!(ours, theirs, "per-function call counts differ from uftrace");
    assert_eq!(ours.get("p3_A"), Some(&2000));
    let n = 500.min(their_seq.len());
    assert_eq!(our_seq.len(), their_seq.len());
    assert_eq!(
        our_seq[..n],
        their_seq[..n],
        "the first {n} calls differ from uftrace's"
    );
}

#[test]
fn uprobes_mode_agrees_with_instrument_mode() {
    let tmp = tempdir();
    let (ri, ru) = (tmp.path().join("ri"), tmp.path().join("ru"));
    kairos(&[
        "collect",
        "trace",
        "-q",
        "-r",
        ri.to_str().unwrap(),
        "--",
        sample("transitions-instrumented").to_str().unwrap(),
        "5",
    ])
    .ok();
    // Auto mode on a plain binary picks uprobes.
    let run = kairos(&[
        "collect",
        "trace",
        "-q",
        "-r",
        ru.to_str().unwrap(),
        "--",
        sample("transitions").to_str().unwrap(),
        "5",
    ])
    .ok();
    assert!(
        run.stdout.contains("transitions: pid"),
        "the program's own output is shown: {}",
        run.stdout
    );
    assert_eq!(trace_mode(&ri), "instrument");
    assert_eq!(trace_mode(&ru), "uprobes");
    let ((inst, _), (upr, _)) = without_timing_dependent(calls_of(&ri), calls_of(&ru));
    // uprobes also sees the compiler's helper functions (frame_dummy, ...) where they run;
    // every function of the source must agree exactly.
    for (f, n) in &inst {
        assert_eq!(
            upr.get(f),
            Some(n),
            "calls of {f}: instrument {n}, uprobes {:?}\n{upr:?}",
            upr.get(f)
        );
    }
    assert_eq!(upr.get("p3_B"), Some(&500));
}

#[test]
fn instrument_mode_on_a_plain_binary_says_how_to_fix_it() {
    let tmp = tempdir();
    let r = tmp.path().join("r");
    let prog = sample("transitions");
    let run = kairos(&[
        "collect",
        "trace",
        "-k",
        "mode=instrument",
        "-r",
        r.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(
            "was not built with -finstrument-functions; rebuild it or use -k mode=uprobes"
        ),
        "{}",
        run.stderr
    );
    assert!(!r.exists(), "no result is left behind");
    let run = kairos(&["collect", "trace", "-p", "1"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = kairos(&[
        "collect",
        "trace",
        "-k",
        "mode=strace",
        "--",
        prog.to_str().unwrap(),
    ]);
    assert!(
        run.stderr.contains("instrument") && run.stderr.contains("uprobes"),
        "{}",
        run.stderr
    );
}

/// A multi-threaded program traced with uprobes starts its threads and every thread's
/// calls are traced (an inherited uprobe event once made the threads' creation fail).
#[test]
fn uprobes_mode_traces_every_thread_of_a_threaded_program() {
    let tmp = tempdir();
    let dir = tmp.path().join("rt");
    kairos(&[
        "collect",
        "trace",
        "-q",
        "-r",
        dir.to_str().unwrap(),
        "-k",
        "mode=uprobes",
        "--",
        sample("threads").to_str().unwrap(),
        "4",
        "0.5",
    ])
    .ok();
    let rd = kairos_result::ResultDir::open(&dir).unwrap();
    let p = kairos_result::read_profile(&rd).unwrap();
    let phase_fns = ["compute_a", "compute_b", "compute_c", "idle_wait"];
    let mut threads = std::collections::BTreeSet::new();
    let mut calls = 0;
    for c in &p.calls {
        if phase_fns.contains(&p.frames[c.frame as usize].function.as_str()) {
            threads.insert(c.thread);
            calls += 1;
        }
    }
    assert_eq!(threads.len(), 4, "each of the 4 threads ran its phases");
    // 0.5 s of 100 ms phases: 5 per thread, one more where the last one starts late.
    assert!((20..=24).contains(&calls), "{calls} phase calls");
}
