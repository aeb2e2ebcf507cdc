//! perf report's sample filters on `kairos report`: `--cpu`, `--pid`, `--tid` and
//! `--comm` select the same samples perf script selects from the same perf.data (perf is
//! the oracle), and reports that do not filter refuse them in one sentence.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{kairos, path_str, tempdir};
use serde_json::Value;

/// Samples perf script prints with `filter`. (perf report applies --pid, --tid and
/// --comm to its merged rows, so with `--sort cpu` it may count another thread's sample:
/// perf script filters each sample.)
fn perf_samples(perf_data: &Path, filter: &[&str]) -> u64 {
    let out = Command::new("perf")
        .args(["script", "-F", "cpu", "-i"])
        .arg(perf_data)
        .args(filter)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim().starts_with('['))
        .count() as u64
}

/// Samples of a filtered `kairos report hotspots --group-by cpu`, summed over its rows.
fn kairos_samples(r: &Path, filter: &[&str]) -> u64 {
    let mut args = vec!["report", "hotspots", "-r", path_str(r), "--group-by", "cpu"];
    args.extend(["--format", "json", "--limit", "0"]);
    args.extend(filter);
    let doc: Value = serde_json::from_str(&kairos(&args).ok().stdout).unwrap();
    doc.as_array()
        .unwrap_or_else(|| panic!("not rows: {doc}"))
        .iter()
        .map(|r| r["Samples"].as_u64().unwrap())
        .sum()
}

#[test]
fn filters_select_what_perf_report_selects() {
    let dir = tempdir();
    let r = dir.path().join("r");
    // One busy process per CPU; the first is the one filtered by pid, tid and name.
    let busy = common::BusyCpus::start();
    let pid = busy.0[0].id().to_string();
    let turn = common::cpu_turn();
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-a",
        "-d",
        "0.5",
        "-r",
        path_str(&r),
    ])
    .ok();
    drop(turn);
    drop(busy);
    let data = r.join("perf.data");
    let all = kairos_samples(&r, &[]);
    assert_eq!(all, perf_samples(&data, &[]));
    let cpu0 = kairos_samples(&r, &["--cpu", "0"]);
    assert_eq!(cpu0, perf_samples(&data, &["--cpu", "0"]));
    let by_pid = kairos_samples(&r, &["--pid", &pid]);
    assert!(by_pid > 0 && by_pid < all, "{by_pid} of {all}");
    assert_eq!(by_pid, perf_samples(&data, &["--pid", &pid]));
    // The program is single-threaded: its thread is its process.
    assert_eq!(kairos_samples(&r, &["--tid", &pid]), by_pid);
    assert_eq!(
        kairos_samples(&r, &["--tid", &pid, "--cpu", "0"]),
        perf_samples(&data, &["--tid", &pid, "--cpu", "0"])
    );
    // By name: every transitions process (perf matches the name a thread had when
    // sampled, kairos its last name; these programs never rename themselves).
    assert_eq!(
        kairos_samples(&r, &["--comm", "transitions"]),
        perf_samples(&data, &["--comm", "transitions"])
    );
    let unknown = kairos(&[
        "report",
        "hotspots",
        "-r",
        path_str(&r),
        "--comm",
        "no-such",
    ]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("no thread or process of that name"),
        "{}",
        unknown.stderr
    );
    let summary = kairos(&["report", "summary", "-r", path_str(&r), "--cpu", "0"]);
    assert_eq!(summary.code, 2);
    assert!(
        summary.stderr.contains("not of the summary report"),
        "{}",
        summary.stderr
    );
}
