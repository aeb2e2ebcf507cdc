//! Memory bandwidth of a memory-access collection, end to end: on this machine (no uncore
//! PMU, no resctrl MBM) the result says why it has no timeline, in the report, `kairos
//! info` and the page; a copy of the result given the pcm snapshot's figures as its
//! timeline (kairos-bandwidth's tick fixture, placed over the collection's samples) gets
//! the `bandwidth` report, the comparison's figures and the page's chart, histogram,
//! per-channel lines (pcm's own per-channel figures, scaled as the ticks are) and by-object
//! table, following the timeline's zoom (`web/tests/bandwidth.test.ts` in headless Chromium).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{kairos, kairos_bin, path_str, sample, tempdir, words};

/// The pcm snapshot the tick file is made of: `../shared/fixtures/uncore`.
fn pcm_snapshot() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/uncore/pcm-memory-2s-4ch-snapshot.txt")
}

/// The tick file: kairos-bandwidth's test fixture.
fn tick_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bandwidth/tests/fixtures/pcm-2s-ticks.json")
}

/// pcm's per-channel lines: (socket, channel, flow, MB/s). The left column is socket 0,
/// the right one socket 1; a `Writes` line belongs to the channel above it.
fn pcm_channels(text: &str) -> Vec<(u32, u32, kairos_bandwidth::timeline::Flow, f64)> {
    use kairos_bandwidth::timeline::Flow;
    let mut out = Vec::new();
    let mut channel = [0u32; 2];
    for line in text.lines() {
        for (socket, col) in line.split('|').skip(1).take(2).enumerate() {
            let num = |s: &str| s.rsplit(':').next().unwrap().trim().parse::<f64>().unwrap();
            if let Some(rest) = col.trim().strip_prefix("Mem Ch ") {
                channel[socket] = rest.split(':').next().unwrap().parse().unwrap();
                out.push((socket as u32, channel[socket], Flow::Read, num(col)));
            } else if col.trim().starts_with("Writes(MB/s):") {
                out.push((socket as u32, channel[socket], Flow::Write, num(col)));
            }
        }
    }
    out
}

/// A copy of `from` whose timeline is the pcm fixture, placed so that its first saturated
/// tick (the fourth, 0.3 s in) starts with the collection's first sample; each tick also
/// holds pcm's per-channel figures at the tick's scale, as a per-channel IMC would give.
fn with_recorded_timeline(from: &Path, to: &Path) {
    assert!(Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .unwrap()
        .success());
    let dir = kairos_result::ResultDir::open(to).unwrap();
    let start = kairos_result::read_profile(&dir)
        .unwrap()
        .time_span()
        .map(|s| s.0)
        .unwrap();
    let first = start.saturating_sub(300_000_000);
    let mut t =
        kairos_bandwidth::fixture::timeline(kairos_bandwidth::fixture::PCM_2S, first).unwrap();
    let ticks: serde_json::Value = serde_json::from_str(kairos_bandwidth::fixture::PCM_2S).unwrap();
    let scale: Vec<f64> = ticks["scale"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let channels = pcm_channels(&std::fs::read_to_string(pcm_snapshot()).unwrap());
    assert_eq!(channels.len(), 16, "2 sockets x 4 channels x read, write");
    let dur = t.tick_ms * 1_000_000;
    for (i, k) in scale.iter().enumerate() {
        for &(domain, channel, flow, mb) in &channels {
            t.channels.push(kairos_bandwidth::timeline::ChannelPoint {
                t_ns: first + i as u64 * dur,
                dur_ns: dur,
                domain,
                channel,
                flow,
                bytes_per_s: mb * 1e6 * k,
            });
        }
    }
    t.save(to).unwrap();
}

#[test]
fn bandwidth_without_counters_and_from_recorded_figures() {
    let tmp = tempdir();
    let fs = tmp.path().join("fs");
    let turn = common::cpu_turn();
    let run = kairos(&[
        "collect",
        "memory-access",
        "-q",
        "-r",
        path_str(&fs),
        "-k",
        "sampling-interval-us=200",
        "--",
        path_str(&sample("false_sharing")),
        "2",
        // About a second here: the run spans ticks of several levels, so that zooming
        // to half of it changes the figures.
        "1500000000",
    ])
    .ok();
    drop(turn);
    let t = kairos_bandwidth::timeline::Timeline::load(&fs)
        .unwrap_or_else(|| panic!("no bandwidth.json: {}", run.stderr))
        .unwrap();
    let devices = Path::new("/sys/bus/event_source/devices");
    let uncore = kairos_bandwidth::counters::discover(devices)
        .iter()
        .any(|p| p.name.starts_with("uncore_imc_"));
    let mbm = kairos_bandwidth::mbm::why_not(Path::new("/sys/fs/resctrl")).is_none();
    let report = kairos(&["report", "bandwidth", "-r", path_str(&fs)])
        .ok()
        .stdout;
    let info = kairos(&["info"]).ok().stdout;
    let line = info
        .lines()
        .find(|l| l.starts_with("bandwidth_timeline"))
        .unwrap_or_else(|| panic!("{info}"));
    if uncore || mbm {
        assert!(t.unavailable.is_none() && !t.points.is_empty(), "{t:?}");
        assert!(
            report.contains("Bandwidth utilization histogram"),
            "{report}"
        );
    } else {
        // This machine: the sentence names both sources and why each is missing.
        let why = t.unavailable.clone().unwrap_or_default();
        assert!(
            why.starts_with("no bandwidth counters here: uncore: ") && why.contains("; resctrl: "),
            "{why}"
        );
        assert!(
            words(&report).contains(&words(&format!("No bandwidth timeline: {why}."))),
            "{report}"
        );
        assert!(
            report.contains("Bandwidth by object is unavailable"),
            "{report}"
        );
        assert!(line.contains(" no "), "{line}");
        assert!(
            info.contains("needs uncore memory-controller PMUs"),
            "{info}"
        );
    }

    let bw = tmp.path().join("bw");
    with_recorded_timeline(&fs, &bw);
    for (format, want) in [
        ("text", "Bandwidth utilization histogram"),
        ("csv", "socket 1,write,"),
        ("text", "Bandwidth by memory channel"),
        ("json", "\"Peak of max\""),
    ] {
        let out = kairos(&[
            "report",
            "bandwidth",
            "-r",
            path_str(&bw),
            "--format",
            format,
        ])
        .ok()
        .stdout;
        assert!(out.contains(want), "{format}: {out}");
    }
    let text = kairos(&["report", "bandwidth", "-r", path_str(&bw)])
        .ok()
        .stdout;
    // The run's samples fall in the fixture's saturated ticks: they are counted.
    assert!(
        text.contains("Address samples in high-bandwidth intervals")
            && !text.contains("the 0 address samples"),
        "{text}"
    );
    let cmp = kairos(&["compare", path_str(&fs), path_str(&bw)])
        .ok()
        .stdout;
    let row = cmp
        .lines()
        .find(|l| l.contains("bandwidth all read, peak (GB/s)"))
        .unwrap_or_else(|| panic!("{cmp}"));
    assert!(row.contains("n/a") && row.contains("57.10"), "{row}");

    let web = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web");
    let chromium = std::env::var("KAIROS_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "Chromium not found at {chromium}; run scripts/install-deps.sh or set KAIROS_CHROMIUM"
    );
    let artifacts = kairos_bin()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("view-screenshots");
    std::fs::create_dir_all(&artifacts).unwrap();
    let status = Command::new("node")
        .args(["tests/run.mjs", "--test-name-pattern=bandwidth"])
        .current_dir(&web)
        .env("KAIROS_BIN", kairos_bin())
        .env("KAIROS_RESULT_BANDWIDTH", &bw)
        .env("KAIROS_RESULT_BANDWIDTH_NONE", &fs)
        .env("KAIROS_BANDWIDTH_TICKS", tick_file())
        .env("KAIROS_PCM_SNAPSHOT", pcm_snapshot())
        .env("KAIROS_ARTIFACTS", &artifacts)
        .env("KAIROS_CHROMIUM", &chromium)
        .status()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    assert!(
        status.success(),
        "the bandwidth browser test failed (output above)"
    );
}
