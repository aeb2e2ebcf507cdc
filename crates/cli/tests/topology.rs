//! `kairos report topology` end to end on this machine: every collection keeps its platform
//! snapshot; the report reads it and the samples of any result kind. With the snapshot of
//! the recorded 2-socket machine laid in (the topology crate's golden file, made from
//! shared/fixtures/topology), this machine's CPUs 0-1 are that machine's node 0, so the
//! node-1 InfiniBand card is a mismatch and the node-0 NICs are local.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;

use common::json_report::table_rows as rows;
use common::{kairos, kairos_in, path_str, tempdir};
use serde_json::Value;

const LOOP: &str = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";

#[test]
fn collections_keep_a_snapshot_and_the_report_checks_it() {
    let tmp = tempdir();
    let res = tmp.path().join("res");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&res),
        "--",
        "sh",
        "-c",
        LOOP,
    ])
    .ok();
    let snap: Value =
        serde_json::from_str(&std::fs::read_to_string(res.join("platform.json")).unwrap()).unwrap();
    assert_eq!(snap["source"], "sysfs");
    assert!(
        !snap["nodes"].as_array().unwrap().is_empty() && snap["devices"].is_array(),
        "{snap}"
    );
    let live = kairos_in(tmp.path(), &["report", "topology", "-r", "res"]).ok();
    assert!(
        live.stdout.contains("NUMA nodes") && live.stdout.contains("Check"),
        "{}",
        live.stdout
    );

    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analysis/topology/tests/golden/platform-snb-ep-2s.json");
    std::fs::copy(&golden, res.join("platform.json")).unwrap();
    let out = kairos_in(
        tmp.path(),
        &["report", "topology", "-r", "res", "--format", "json"],
    )
    .ok();
    let doc: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", out.stdout));
    let check = rows(&doc, "Check");
    let verdict = |d: &str| {
        check
            .iter()
            .find(|r| r["Device"] == d)
            .map(|r| {
                (
                    r["Verdict"].clone(),
                    r["Finding"].as_str().unwrap_or("").to_string(),
                )
            })
            .unwrap_or_else(|| panic!("{d} missing: {check:?}"))
    };
    let (v, sentence) = verdict("ib0/mlx4_0 (0000:82:00.0)");
    assert_eq!(v, "mismatch");
    assert!(sentence.contains("is on node 1; 100% of the samples of the target's threads ran on node 0") && sentence.ends_with("pin the threads to node 1's CPUs 8-15 (taskset -c 8-15, or numactl --cpunodebind=1 --membind=1)"), "{sentence}");
    assert_eq!(verdict("eth1 (0000:02:00.3)").0, "local");
    assert_eq!(verdict("nvme0n1 (0000:00:02.0)").0, "not checked");
    let csv = kairos_in(
        tmp.path(),
        &["report", "topology", "-r", "res", "--format", "csv"],
    )
    .ok();
    assert!(
        csv.stdout.contains("ib0/mlx4_0 (0000:82:00.0),1,mismatch"),
        "{}",
        csv.stdout
    );
}

#[test]
fn a_missing_result_is_one_sentence() {
    let r = kairos(&["report", "topology", "-r", "/nonexistent/result"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot open result /nonexistent/result"),
        "{}",
        r.stderr
    );
}

/// An imported recording: nodes and sockets from its header (the 2-socket fixture), the
/// devices unknown, said so.
#[test]
fn an_imported_recording_has_the_header_topology_and_no_devices() {
    let tmp = tempdir();
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/topology/snb-ep-2s-numatopology.perf.data");
    kairos_in(tmp.path(), &["import", "-q", "-r", "res", path_str(&f)]).ok();
    let out = kairos_in(
        tmp.path(),
        &["report", "topology", "-r", "res", "--format", "json"],
    )
    .ok();
    let doc: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", out.stdout));
    let nodes = rows(&doc, "NUMA nodes");
    assert_eq!(
        nodes
            .iter()
            .map(|n| n["CPUs"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
        ["0-7,16-23", "8-15,24-31"]
    );
    let samples: u64 = nodes.iter().map(|n| n["Samples"].as_u64().unwrap()).sum();
    assert_eq!(
        samples, 175,
        "every sample of the recording has a CPU of a node"
    );
    let text = kairos_in(tmp.path(), &["report", "topology", "-r", "res"])
        .ok()
        .stdout;
    assert!(text.contains("the devices are unknown"), "{text}");
    let platform = doc["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "Platform")
        .unwrap();
    assert_eq!(
        platform["values"]["Sockets"],
        "socket 0: CPUs 0-7,16-23 (8 cores); socket 1: CPUs 8-15,24-31 (8 cores)"
    );
}

/// An io result counts, it does not sample: it has no sample tables by design. The report
/// says so (not that the result is damaged) and judges each device by the traced use.
#[test]
fn an_io_result_is_judged_by_its_device_use() {
    let tmp = tempdir();
    kairos_in(
        tmp.path(),
        &["collect", "io", "-q", "-r", "io", "-d", "1", "--", "true"],
    )
    .ok();
    let text = kairos_in(tmp.path(), &["report", "topology", "-r", "io"])
        .ok()
        .stdout;
    assert!(!text.contains("damaged"), "{text}");
    assert!(
        text.contains("this result holds no samples (its analysis counts, it does not sample)"),
        "{text}"
    );
    let out = kairos_in(
        tmp.path(),
        &["report", "topology", "-r", "io", "--format", "json"],
    )
    .ok();
    let doc: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", out.stdout));
    let platform = &doc["blocks"][0]["values"];
    assert_eq!(platform["Samples"], 0, "{platform}");
    let notes: Vec<&str> = platform["Notes"]
        .as_array()
        .unwrap_or_else(|| panic!("Notes is a list: {platform}"))
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().all(|n| !n.contains("damaged")) && !notes.is_empty(),
        "{notes:?}"
    );
    // The traced device use is what the devices are judged by.
    let check = rows(&doc, "Check");
    assert!(
        check.iter().any(|r| r
            .as_object()
            .is_some_and(|o| o.contains_key("Traffic off node"))),
        "{doc}"
    );
}
