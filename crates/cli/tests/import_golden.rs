//! Golden files of every report and grouping on results imported from real perf.data
//! recordings: the whole path (decode, convert, symbolise through perf maps, store,
//! read back, analyse, render) is deterministic on a fixed file, so any change shows.
//! A mismatch writes `<golden>.actual` beside the golden and prints a diff; bless with
//! `KAIROS_BLESS=1`.
#![allow(clippy::unwrap_used, clippy::panic)] // helpers of tests: a failure is the point

mod common;

use std::path::PathBuf;

use common::{fixtures, kairos_in, tempdir};

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Imports `file` (run from the fixtures directory so that the manifest names the file
/// without a machine path) and checks every report against its golden.
fn check_all_reports(file: &str, tag: &str) {
    let dir = tempdir();
    let result = dir.path().join("r");
    let fx = fixtures();
    let imported = kairos_in(
        &fx,
        &[
            "import",
            "-q",
            file,
            "-r",
            result.to_str().unwrap(),
            "--perf-map-dir",
            ".",
        ],
    )
    .ok();
    assert!(imported.stdout.contains("Summary"), "{}", imported.stdout);
    let r = result.to_str().unwrap();
    let mut cases: Vec<(String, Vec<&str>)> = vec![
        ("summary".into(), vec!["report", "summary", "-r", r]),
        (
            "top-down".into(),
            vec!["report", "top-down", "-r", r, "--limit", "40"],
        ),
        (
            "timeline".into(),
            vec!["report", "timeline", "-r", r, "--bucket-ms", "100"],
        ),
        (
            "timeline_range".into(),
            vec![
                "report",
                "timeline",
                "-r",
                r,
                "--time-range",
                "0.2:0.4",
                "--bucket-ms",
                "20",
                "--limit",
                "4",
            ],
        ),
        (
            "hotspots_csv".into(),
            vec!["report", "hotspots", "-r", r, "--format", "csv"],
        ),
        (
            "hotspots_json".into(),
            vec![
                "report", "hotspots", "-r", r, "--format", "json", "--limit", "5",
            ],
        ),
    ];
    for g in [
        "process",
        "module",
        "function",
        "callstack",
        "thread",
        "cpu",
    ] {
        cases.push((
            format!("hotspots_{g}"),
            vec![
                "report",
                "hotspots",
                "-r",
                r,
                "--group-by",
                g,
                "--limit",
                "25",
            ],
        ));
    }
    // The import keeps the whole profile's function rows: the plain hotspots reports
    // print them without reading the samples.
    let kept = result.join("derived/hotspots.json");
    assert!(kept.is_file(), "the import kept no function rows");
    for (name, args) in &cases {
        let out = kairos_in(&fx, args).ok();
        kairos_report::assert_golden(&golden(&format!("{tag}/{name}.txt")), &out.stdout);
    }
    // Computed from the tables, the same reports give the same goldens.
    std::fs::remove_file(&kept).expect("remove the kept rows");
    for (name, args) in cases.iter().filter(|(n, _)| n.starts_with("hotspots")) {
        let out = kairos_in(&fx, args).ok();
        kairos_report::assert_golden(&golden(&format!("{tag}/{name}.txt")), &out.stdout);
    }
}

#[test]
fn skylake_sp_reports_match_goldens() {
    check_all_reports("skylake-sp_any_32deep_cycles.perf.data", "skylake-sp");
}

#[test]
fn sandybridge_system_wide_reports_match_goldens() {
    check_all_reports(
        "sandybridge_systemwide_callchain_any_16deep.perf.data",
        "sandybridge",
    );
}
