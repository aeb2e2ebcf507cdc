//! `kairos measure bandwidth` on this machine: the triad's figure is within a sane range
//! of the second method (a copy of the same arrays), the result is kept per host and
//! shown again, and a node that does not exist is one clear sentence. Ratios of two
//! measurements of one run, never a wall-clock threshold.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::process::Command;

use common::{kairos_bin, tempdir};
use serde_json::Value;

fn measure(store: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(kairos_bin())
        .args(["measure", "bandwidth"])
        .args(args)
        .env("KAIROS_BANDWIDTH_DIR", store)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn rows(doc: &Value) -> Vec<Value> {
    doc["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["rows"].as_array())
        .flatten()
        .cloned()
        .collect()
}

#[test]
fn triad_agrees_with_a_copy_and_is_kept_per_host() {
    let store = tempdir();
    let (code, out, err) = measure(
        store.path(),
        &["--size-mib", "64", "--reps", "2", "--format", "json"],
    );
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let pairs = rows(&doc);
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .count()
        })
        .unwrap_or(0)
        .max(1);
    assert_eq!(
        pairs.len(),
        nodes * nodes,
        "every (CPU node, memory node) pair: {doc}"
    );
    for p in &pairs {
        let (triad, copy) = (p["Triad"].as_f64().unwrap(), p["Copy"].as_f64().unwrap());
        assert!(triad > 0.0 && copy > 0.0, "{p}");
        // Two methods over the same arrays: the same order of magnitude on any machine.
        let r = triad / copy;
        assert!(
            (0.25..=4.0).contains(&r),
            "triad {triad} GB/s vs copy {copy} GB/s: {p}"
        );
    }
    // Kept: one file, and --show prints the same pairs without measuring.
    let files: Vec<_> = std::fs::read_dir(store.path())
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let (code, shown, err) = measure(store.path(), &["--show", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(rows(&shown), pairs);
}

#[test]
fn bad_input_is_one_sentence() {
    let store = tempdir();
    let (code, _, err) = measure(store.path(), &["--nodes", "4095", "--no-save"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("node 4095 does not exist: this machine has nodes 0"),
        "{err}"
    );
    let (code, _, err) = measure(store.path(), &["--show"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no bandwidth measured on") && err.contains("run `kairos measure bandwidth`"),
        "{err}"
    );
    let (code, _, err) = measure(store.path(), &["--size-mib", "0", "--no-save"]);
    assert_eq!(code, 1);
    assert!(err.contains("at least 1"), "{err}");
}
