//! `kairos collect memory-access` NUMA placement on this machine (one node): each matrix of
//! `samples/matrix` has its 8 MiB of pages on node 0, first touched by the main thread in
//! `init_matrices`, and the report says that no remote access is possible; `-k numa=off`,
//! `-k numa=on` with `-a`, a process whose pages we may not read, and `kairos info`: a
//! clear sentence each, nothing lost. The two-node recipe is in `memory_access_numa_vm.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;

use common::json_report::{json_report as report, table_rows as rows};
use common::{kairos, kairos_bin, kairos_in, sample, tempdir};
use serde_json::Value;

/// `matrix.c:LINE (8 MiB)` of the three matrices, from the source.
fn matrices() -> Vec<String> {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/matrix.c"),
    )
    .unwrap();
    ["a", "b", "c"]
        .iter()
        .map(|v| {
            let line = src
                .lines()
                .position(|l| l.contains(&format!("double *{v} = malloc(bytes);")))
                .unwrap()
                + 1;
            format!("matrix.c:{line} (8 MiB)")
        })
        .collect()
}

fn facts(doc: &Value) -> &Value {
    &doc["blocks"][0]["values"]
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn one_node_shows_placement_and_first_touch_and_no_remote_access() {
    let t = tempdir();
    let prog = sample("matrix");
    kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "--",
            prog.to_str().unwrap(),
            "1024",
            "interchange",
        ],
    )
    .ok();
    let doc = report(t.path(), "numa");
    let f = facts(&doc);
    assert!(
        f["Nodes"].as_str().unwrap().starts_with("1 (node0: CPUs "),
        "{f}"
    );
    assert_eq!(
        f["Remote access"],
        "none possible: one node, every access is local"
    );
    assert!(
        f["Placement"]
            .as_str()
            .unwrap()
            .starts_with("move_pages(2): "),
        "{f}"
    );
    assert!(
        f["First touch"]
            .as_str()
            .unwrap()
            .contains("page-fault tracepoints"),
        "as root the tracepoints are recorded: {f}"
    );
    let objects = rows(&doc, "Memory objects by node");
    let touch = rows(&doc, "First touch");
    let mut main_thread = None;
    for name in matrices() {
        let r = objects
            .iter()
            .find(|r| r["Object"] == name.as_str())
            .unwrap_or_else(|| panic!("no {name}: {objects:?}"));
        // 8 MiB from malloc: 2048 pages, and the one its chunk header starts in.
        let pages = count(&r["Pages"]);
        assert!((2048..=2049).contains(&pages), "{name}: {r}");
        assert_eq!(count(&r["Node 0"]), pages, "{r}");
        // One row per call stack (malloc's header page has its own): a busy machine may
        // unwind the same fault's stack differently, splitting init_matrices's pages.
        let mine: Vec<_> = touch
            .iter()
            .filter(|x| x["Object"] == name.as_str() && x["Function"] == "init_matrices")
            .collect();
        assert!(!mine.is_empty(), "no first touch of {name}: {touch:?}");
        for first in &mine {
            assert_eq!(first["Node"], "0");
            let tid = count(&first["Thread"]);
            assert_eq!(
                *main_thread.get_or_insert(tid),
                tid,
                "one thread initialises all three"
            );
        }
        // Only lost fault records (a full ring on a busy machine) may leave pages without
        // a first touch, and the report must then say so.
        let placed: u64 = mine.iter().map(|x| count(&x["Pages"])).sum();
        let all: Vec<_> = touch
            .iter()
            .filter(|x| x["Object"] == name.as_str())
            .collect();
        assert!(
            placed >= 2048 || f.get("Records lost (ring full)").is_some(),
            "{name}: {all:?} {f}"
        );
    }
    let problems = doc["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "NUMA problems")
        .unwrap();
    assert_eq!(problems["rows"].as_array().unwrap().len(), 0);
    assert_eq!(
        problems["notes"][0],
        "One NUMA node: every access is local, so no placement problem is possible."
    );
    // The summary has the NUMA part; the figures are in the manifest for `kairos compare`.
    let summary = kairos_in(t.path(), &["report", "summary", "-r", "res"])
        .ok()
        .stdout;
    assert!(
        summary.contains("NUMA\n") && summary.contains("none possible: one node"),
        "{summary}"
    );
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("res/manifest.json")).unwrap())
            .unwrap();
    let n = &m["memory_access"]["numa"];
    assert_eq!(n["recorded"], true, "{n}");
    assert!(count(&n["pages_by_node"]["0"]) >= 3 * 2048, "{n}");
    assert_eq!(n["remote_samples"], 0);
}

#[test]
fn numa_off_records_nothing_and_says_so() {
    let t = tempdir();
    let prog = sample("matrix");
    kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-k",
            "numa=off",
            "--",
            prog.to_str().unwrap(),
            "256",
            "naive",
        ],
    )
    .ok();
    let doc = report(t.path(), "numa");
    assert_eq!(
        facts(&doc)["Placement and first touch"],
        "not recorded: -k numa=off"
    );
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("res/manifest.json")).unwrap())
            .unwrap();
    let events: Vec<&str> = m["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        !events.iter().any(|e| e.contains("fault")),
        "no fault event recorded: {events:?}"
    );
    assert!(rows(&doc, "First touch").is_empty());
}

#[test]
fn numa_on_with_the_whole_system_is_refused_plainly() {
    let t = tempdir();
    let r = kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-a",
            "-d",
            "1",
            "-k",
            "numa=on",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("-k numa=on") && r.stderr.contains("-p PID"),
        "{}",
        r.stderr
    );
    assert!(
        !t.path().join("res").exists(),
        "no result for a refused collection"
    );
}

#[test]
fn kairos_info_says_what_numa_placement_needs() {
    let out = kairos(&["info"]).ok().stdout;
    let line = out
        .lines()
        .position(|l| l.starts_with("numa_placement"))
        .unwrap_or_else(|| panic!("{out}"));
    let text = out
        .lines()
        .skip(line)
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("node")
            && text.contains("move_pages(2)")
            && text.contains("ptrace read access"),
        "{text}"
    );
}

/// A program that makes itself non-dumpable, as setuid programs and some daemons are:
/// another user's ptrace read access, which move_pages(2) and /proc/PID/numa_maps need,
/// is refused from then on, while the perf events already attached go on.
const NON_DUMPABLE: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
int main(void) {
    prctl(PR_SET_DUMPABLE, 0);
    size_t n = 8 << 20;
    char *p = malloc(n);
    memset(p, 1, n);
    struct timespec t = {0, 400000000};
    nanosleep(&t, 0);
    volatile long s = 0;
    for (size_t i = 0; i < n; i += 64) s += p[i];
    return (int)(s & 0);
}
"#;

/// Needs root to switch to `nobody` (as on the CI machine); elsewhere there is nothing to try.
#[test]
fn pages_we_may_not_read_are_said_with_the_permission_and_nothing_is_lost() {
    if !std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:\t0\t"))
    {
        eprintln!("NOT RUN: needs root to switch to another user (runuser); run the tests as root");
        return;
    }
    let t = tempdir();
    let src = t.path().join("nondump.c");
    std::fs::write(&src, NON_DUMPABLE).unwrap();
    let exe = t.path().join("nondump");
    assert!(
        std::process::Command::new("cc")
            .args(["-O1", "-g", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .unwrap()
            .success(),
        "cc failed"
    );
    let chmod = |p: &Path, mode: &str| {
        assert!(std::process::Command::new("chmod")
            .arg(mode)
            .arg(p)
            .status()
            .unwrap()
            .success())
    };
    chmod(t.path(), "0777");
    let out = std::process::Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(kairos_bin())
        .args(["collect", "memory-access", "-q", "-r", "res", "--"])
        .arg(&exe)
        .current_dir(t.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let text = kairos_in(t.path(), &["report", "numa", "-r", "res"])
        .ok()
        .stdout;
    // The first query can land before the program's first instruction makes it
    // non-dumpable (seen once in 80 runs on a busy machine): then it saw the loader's
    // pages only, and every later one was refused.
    assert!(
        text.contains("not queried (see the notes)") || text.contains(" move_pages(2): 1 query,"),
        "{text}"
    );
    assert!(
        text.contains("ptrace read access") && (text.contains("EPERM") || text.contains("EACCES")),
        "which permission: {text}"
    );
    assert!(
        text.contains("software page-fault events"),
        "first touch without the tracepoint, and why: {text}"
    );
    // Nothing lost: the 8 MiB block is there, its pages placed by their first touch.
    let doc = report(t.path(), "numa");
    let block = rows(&doc, "Memory objects by node")
        .into_iter()
        .find(|r| r["Object"].as_str().unwrap().starts_with("nondump.c:"))
        .unwrap_or_else(|| panic!("{doc}"));
    // 2048 faults of 4 KiB, or one per 2 MiB where every anonymous mapping gets huge pages
    // (no query says which mappings do, so those count one page each).
    let thp_always = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]"));
    assert!(
        count(&block["After last query"]) >= if thp_always { 4 } else { 2048 },
        "{block}"
    );
    assert_eq!(count(&block["Node 0"]), count(&block["Pages"]));
    let objects = rows(&report(t.path(), "memory-objects"), "Memory objects");
    assert!(
        objects
            .iter()
            .any(|r| r["Object"].as_str().unwrap().starts_with("nondump.c:")),
        "{objects:?}"
    );
}
