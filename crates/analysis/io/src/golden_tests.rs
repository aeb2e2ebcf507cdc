//! Golden files of every report, on a result built from fixed values: a loopback and a NIC
//! (device counters), one IIO stack and one socket's CHA counts (ICX metrics).

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use kairos_report::{assert_golden, Format};

use crate::model::{IoResult, Metric, Point, Scope, Series};

fn series(scope: Scope, name: &str, flow: &str, unit: &str, socket: Option<u32>) -> Series {
    Series {
        scope,
        name: name.into(),
        flow: flow.into(),
        unit: unit.into(),
        socket,
        pci: None,
        block: None,
        label: String::new(),
        link_bytes_per_s: None,
    }
}

fn metric(name: &str) -> Metric {
    let text =
        std::fs::read_to_string(crate::tests::perfmon().join("ICX/metrics/icelakex_metrics.json"))
            .unwrap();
    let m = kairos_metrics::load_perfmon(&text)
        .unwrap()
        .into_iter()
        .find(|m| m.name == name)
        .unwrap();
    Metric {
        name: m.name,
        formula: m.formula,
        events: m.events.into_iter().map(|b| (b.alias, b.name)).collect(),
    }
}

pub(crate) fn result() -> IoResult {
    let mut lo = series(Scope::Device, "lo", "rx", "bytes", None);
    lo.label = "network interface (no PCI device)".into();
    let mut eth = series(Scope::Device, "eth1", "rx", "bytes", Some(1));
    (eth.pci, eth.block, eth.label, eth.link_bytes_per_s) = (
        Some("0000:86:00.0".into()),
        Some("pci0000:85".into()),
        "Ethernet controller".into(),
        Some(250e6),
    );
    let mut stack = series(
        Scope::Stack,
        "uncore_iio_3",
        "inbound write",
        "bytes",
        Some(1),
    );
    (stack.pci, stack.block, stack.label) = (
        Some("0000:85".into()),
        Some("pci0000:85".into()),
        "eth1 (0000:86:00.0)".into(),
    );
    let cha = |f: &str| series(Scope::Socket, "socket 1", f, "count", Some(1));
    IoResult {
        tick_ms: 100,
        sources: vec![crate::kernel::SOURCE.into(), "Intel uncore counters".into()],
        series: vec![
            lo,
            eth,
            stack,
            cha("UNC_CHA_TOR_INSERTS.IO_ITOM"),
            cha("UNC_CHA_TOR_INSERTS.IO_MISS_ITOM"),
            cha("UNC_CHA_TOR_INSERTS.IO_HIT"),
            cha("UNC_CHA_TOR_INSERTS.IO_MISS"),
            cha("UNC_CHA_TOR_OCCUPANCY.IO_ITOM"),
            cha("UNC_CHA_CLOCKTICKS"),
        ],
        points: vec![
            Point {
                t: 0.0,
                secs: 0.1,
                // 400 TOR cycles per ItoM at 2 GHz: 200 ns.
                values: vec![
                    1e6, 20e6, 20e6, 312_500.0, 250_000.0, 62_500.0, 250_000.0, 125e6, 2e8,
                ],
            },
            Point {
                t: 0.1,
                secs: 0.1,
                values: vec![
                    3e6, 10e6, 10e6, 156_250.0, 112_500.0, 43_750.0, 112_500.0, 62.5e6, 2e8,
                ],
            },
            Point {
                t: 0.2,
                secs: 0.1,
                values: vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2e8],
            },
        ],
        metrics: vec![metric("io_full_write_l3_miss")],
        dram_note: Some("not measurable here: no uncore memory-controller PMU".into()),
        ..IoResult::default()
    }
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[test]
fn reports_match_their_golden_files() {
    let r = result();
    for (fmt, ext) in [
        (Format::Text, "txt"),
        (Format::Csv, "csv"),
        (Format::Json, "json"),
    ] {
        assert_golden(
            &golden(&format!("summary.{ext}")),
            &crate::report::render(&crate::report::summary_document(&r), fmt),
        );
        assert_golden(
            &golden(&format!("io.{ext}")),
            &crate::report::render(&crate::report::io_document(&r, 0.2), fmt),
        );
    }
    // Without any uncore: the DDIO row gives the reason.
    let mut plain = result();
    plain.series.truncate(2);
    plain.metrics.clear();
    for p in &mut plain.points {
        p.values.truncate(2);
    }
    plain.ddio_unmeasured = Some("no uncore PMUs (a virtual machine exposes none)".into());
    plain.pcie_unmeasured = plain.ddio_unmeasured.clone();
    assert_golden(
        &golden("summary-no-uncore.txt"),
        &crate::report::render(&crate::report::summary_document(&plain), Format::Text),
    );
}

#[test]
fn findings_come_from_the_figures() {
    let f = crate::findings::findings(&result());
    // ITOM: 468,750 inserts, 362,500 misses = 77.3 %.
    assert!(f[0].starts_with("inbound full-line writes on socket 1 (traffic from uncore_iio_3 (eth1 (0000:86:00.0))) miss the L3 77%"), "{f:?}");
    // eth1 peaks at 200 MB/s of a 250 MB/s link: 80 %.
    assert!(
        f.iter()
            .any(|s| s.starts_with("eth1 (0000:86:00.0) rx peaks at 80% of its PCIe link")),
        "{f:?}"
    );
    assert!(
        f.last().unwrap().starts_with("the busiest device was eth1"),
        "{f:?}"
    );
}

/// The io report's DRAM table from a bandwidth timeline: the pcm snapshot's recorded
/// figures give the averages and peaks `kairos report bandwidth` gives for them.
#[test]
fn dram_and_links_from_the_recorded_timeline() {
    let t = kairos_bandwidth::fixture::timeline(kairos_bandwidth::fixture::PCM_2S, 0)
        .unwrap_or_else(|e| panic!("{e}"));
    let text = crate::report::render(
        &{
            let mut d = kairos_report::Document::new("io");
            d.push_table(crate::report::dram_table(&t));
            d
        },
        kairos_report::Format::Text,
    );
    let row = |domain: &str, flow: &str| {
        text.lines()
            .find(|l| l.starts_with(domain) && l.split_whitespace().any(|w| w == flow))
            .unwrap_or_else(|| panic!("no {domain} {flow} row:\n{text}"))
            .split_whitespace()
            .rev()
            .take(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // (peak, average), as the bandwidth golden of the same figures has them.
    assert_eq!(row("all", "read"), ["57.10", "27.41"], "{text}");
    assert_eq!(row("socket 1", "write"), ["7.81", "3.75"], "{text}");
}
