//! `kairos collect memory-access -k watchpoints=on` end to end (no PMU; hardware
//! breakpoints work): the falsely shared line of `samples/false_sharing` is watched and
//! confirmed, each thread's hits at its own offset and all writes seen as writes; padded
//! counters confirm nothing, one shared counter is confirmed true sharing; and with every
//! slot taken by another tool the collection completes and says so.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::json_report::{json_report as report, printed_threads as threads, table_rows as rows};
use common::{kairos_bin, kairos_in, sample, tempdir};
use serde_json::Value;

fn collect_args(prog: &Path, args: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "collect",
        "memory-access",
        "-q",
        "-r",
        "res",
        "-k",
        "sampling-interval-us=200",
        "-k",
        "watchpoints=on",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(prog.to_str().unwrap().to_string());
    a.extend(args.iter().map(|s| s.to_string()));
    a
}

/// Collects `false_sharing ARGS` with watchpoints into `dir/res`; the (tid, offset) lines.
fn false_sharing(dir: &Path, args: &[&str]) -> Vec<(u64, u64)> {
    let a = collect_args(&sample("false_sharing"), args);
    let _turn = common::cpu_turn();
    let run = kairos_in(dir, &a.iter().map(String::as_str).collect::<Vec<_>>()).ok();
    threads(&run.stdout)
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("res/manifest.json")).unwrap()).unwrap()
}

/// The Confirmed cells (empty: no such column, the result has no hits) of the lines used
/// by more than one thread, with their verdicts.
fn confirmed(doc: &Value) -> Vec<(String, String)> {
    rows(doc, "Cache lines")
        .iter()
        .filter(|r| r["Threads"].as_u64() > Some(1))
        .map(|r| {
            (
                r["Verdict"].as_str().unwrap().to_string(),
                r["Confirmed"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn false_sharing_is_confirmed_with_each_threads_writes_at_its_offset() {
    let t = tempdir();
    let threads = false_sharing(t.path(), &["2", "1500000000"]);
    assert_eq!(threads.len(), 2);
    let lines = report(t.path(), "cache-lines");
    let line = rows(&lines, "Cache lines")
        .into_iter()
        .find(|r| r["Threads"].as_u64() == Some(2))
        .unwrap();
    assert_eq!(line["Verdict"], "false sharing", "{lines}");
    assert_eq!(line["Confirmed"], "yes", "{lines}");
    assert!(line["Watch hits"].as_u64().unwrap() > 0, "{line}");
    let hits = rows(&lines, "Watchpoint hits by thread");
    for (tid, offset) in &threads {
        let mine: Vec<&Value> = hits
            .iter()
            .filter(|r| r["Thread"].as_u64() == Some(*tid))
            .collect();
        assert!(!mine.is_empty(), "no hit of thread {tid}: {hits:?}");
        for r in mine {
            // The watched word is the thread's own counter, and every hit on it a write.
            assert_eq!(
                r["Offsets"],
                format!("{offset}..{}", offset + 7).as_str(),
                "thread {tid}: {hits:?}"
            );
            assert!(r["Write hits"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(r["Other hits"], 0, "{r}");
        }
    }
    let m = manifest(t.path());
    let w = &m["memory_access"]["watch"];
    assert_eq!(w["lines"], 1, "{w}");
    assert!(w["estimated_slowdown"].as_f64().unwrap() < 0.08, "{w}");
    assert_eq!(m["memory_access"]["confirmed_false_sharing_lines"], 1);
    assert!(
        m["tables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "watch_hits"),
        "{m}"
    );
    let summary = kairos_in(t.path(), &["report", "summary", "-r", "res"])
        .ok()
        .stdout;
    assert!(
        summary.contains("Watchpoints") && summary.contains("confirmed by watchpoints"),
        "{summary}"
    );
}

#[test]
fn padding_confirms_nothing_and_a_shared_counter_is_true_sharing() {
    let t = tempdir();
    false_sharing(t.path(), &["--padded", "2", "300000000"]);
    let padded = confirmed(&report(t.path(), "cache-lines"));
    assert!(
        padded
            .iter()
            .all(|(v, c)| !(v == "false sharing" && c == "yes")),
        "{padded:?}"
    );
    assert_ne!(
        manifest(t.path())["memory_access"]["confirmed_false_sharing_lines"],
        1
    );

    let t = tempdir();
    false_sharing(t.path(), &["--shared", "2", "1000000000"]);
    let shared = confirmed(&report(t.path(), "cache-lines"));
    assert!(
        shared.contains(&("true sharing".to_string(), "yes".to_string())),
        "{shared:?}"
    );
}

/// Another tool holds all four debug registers of every thread of the target (perf record
/// with four breakpoint events, inherited by kairos and the program it launches).
#[test]
fn slots_taken_by_another_tool_leave_the_collection_whole_with_a_sentence() {
    if Command::new("perf").arg("--version").output().is_err() {
        eprintln!("skipped: perf is not installed (it plays the debugger holding the slots)");
        return;
    }
    let t = tempdir();
    let turn = common::cpu_turn();
    let mut cmd = Command::new("perf");
    cmd.args(["record", "-q", "-o", "competitor.data"]);
    for a in ["0x1000", "0x1008", "0x1010", "0x1018"] {
        cmd.args(["-e", &format!("mem:{a}:rw")]);
    }
    // 1G increments (about 0.8 s alone): at 300M (0.25 s) a loaded machine once ended
    // the program before sampling found the shared line, so no watchpoint was tried.
    cmd.arg("--")
        .arg(kairos_bin())
        .args(collect_args(&sample("false_sharing"), &["2", "1000000000"]))
        .current_dir(t.path());
    let out = cmd.output().unwrap();
    drop(turn);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(threads(&stdout).len(), 2, "{stdout}");
    let m = manifest(t.path());
    let notes: Vec<&str> = m["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("watchpoint slots") && n.contains("debugger")),
        "{notes:?}"
    );
    // Sampling still gives its verdict; nothing was confirmed (no hits, no such column).
    let lines = confirmed(&report(t.path(), "cache-lines"));
    assert!(
        lines.contains(&("false sharing".to_string(), String::new())),
        "{lines:?}"
    );
    let summary = kairos_in(t.path(), &["report", "summary", "-r", "res"])
        .ok()
        .stdout;
    assert!(summary.contains("debugger"), "{summary}");
}

/// `-p` on a running two-thread process: both threads' counters are watched (the
/// watchpoints follow every thread of the process, not only the first) and the line is
/// confirmed; the process keeps running after the collection.
#[test]
fn attached_process_is_watched_on_every_thread() {
    let t = tempdir();
    let _turn = common::cpu_turn();
    let mut child = Command::new(sample("false_sharing"))
        // Minutes of work (the test kills it): 4e9 increments took only 2.6 s on a quiet
        // VM, less than the collection, and the process had ended when it was checked.
        .args(["2", "400000000000"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Both threads started and incrementing.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = child.id().to_string();
    let args = [
        "collect",
        "memory-access",
        "-q",
        "-r",
        "res",
        "-p",
        &pid,
        "-d",
        "2",
        "-k",
        "sampling-interval-us=200",
        "-k",
        "watchpoints=on",
    ];
    let run = kairos_in(t.path(), &args);
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    run.ok();
    assert!(still_running, "-p leaves the process running");
    let lines = report(t.path(), "cache-lines");
    let line = rows(&lines, "Cache lines")
        .into_iter()
        .find(|r| r["Threads"].as_u64() == Some(2))
        .unwrap_or_else(|| panic!("{lines}"));
    assert_eq!(
        (line["Verdict"].as_str(), line["Confirmed"].as_str()),
        (Some("false sharing"), Some("yes")),
        "{lines}"
    );
    let hits = rows(&lines, "Watchpoint hits by thread");
    let tids: std::collections::BTreeSet<u64> = hits
        .iter()
        .filter(|r| r["Write hits"].as_u64() > Some(0))
        .filter_map(|r| r["Thread"].as_u64())
        .collect();
    assert_eq!(tids.len(), 2, "both threads' writes trapped: {hits:?}");
}
