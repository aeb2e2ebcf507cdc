//! The bandwidth timeline in collections other than memory-access: `collect hotspots` and
//! `collect memory-consumption` keep `bandwidth.json` (here: why there is none), and
//! `kairos report bandwidth` prints any result's timeline. Given the pcm snapshot's figures
//! as its timeline, a hotspots result's report matches the golden files (text, CSV, JSON;
//! a mismatch writes `.actual` and shows a diff; bless with `KAIROS_BLESS=1`).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{kairos, path_str, sample, tempdir, words};

fn golden(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/bandwidth")
        .join(name)
}

#[test]
fn every_collection_keeps_a_timeline_and_reports_it() {
    let t = tempdir();
    let hs = t.path().join("hs");
    let mc = t.path().join("mc");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&hs),
        "--",
        path_str(&sample("threads")),
        "2",
        "0.2",
    ])
    .ok();
    kairos(&[
        "collect",
        "memory-consumption",
        "-q",
        "-r",
        path_str(&mc),
        "--",
        path_str(&sample("threads")),
        "2",
        "0.1",
    ])
    .ok();
    for r in [&hs, &mc] {
        let tl = kairos_bandwidth::timeline::Timeline::load(r)
            .unwrap_or_else(|| panic!("no bandwidth.json in {}", r.display()))
            .unwrap();
        let text = kairos(&["report", "bandwidth", "-r", path_str(r)])
            .ok()
            .stdout;
        match &tl.unavailable {
            // This machine (no uncore, no resctrl): the reason, in the report too (whole,
            // though wrapped to the line width).
            Some(why) => assert!(words(&text).contains(&words(why)), "{text}"),
            None => assert!(text.contains("Bandwidth utilization histogram"), "{text}"),
        }
    }
    // The recorded figures, over the hotspots result's samples.
    let dir = kairos_result::ResultDir::open(&hs).unwrap();
    let start = kairos_result::read_profile(&dir)
        .unwrap()
        .time_span()
        .map(|s| s.0)
        .unwrap();
    kairos_bandwidth::fixture::timeline(kairos_bandwidth::fixture::PCM_2S, start)
        .unwrap()
        .save(&hs)
        .unwrap();
    for (name, format) in [
        ("hotspots.txt", "text"),
        ("hotspots_csv.txt", "csv"),
        ("hotspots_json.txt", "json"),
    ] {
        let out = kairos(&[
            "report",
            "bandwidth",
            "-r",
            path_str(&hs),
            "--format",
            format,
        ])
        .ok()
        .stdout;
        // The notes under the text report name this machine's LBR state: not the golden's business.
        let out = out
            .split("\nNotes:\n")
            .next()
            .unwrap_or_default()
            .to_string();
        kairos_report::assert_golden(&golden(name), &out);
    }
    // The same figures through `kairos compare`, which reads any result's timeline.
    let cmp = kairos(&["compare", path_str(&hs), path_str(&mc)])
        .ok()
        .stdout;
    assert!(
        cmp.contains("bandwidth socket 0 read, average (GB/s)"),
        "{cmp}"
    );
}
