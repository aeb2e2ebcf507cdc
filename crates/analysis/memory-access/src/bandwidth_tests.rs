//! The `bandwidth` report on hand-built results: the pcm snapshot's figures as a timeline
//! (kairos-bandwidth's tick fixture), address samples inside and outside its high-bandwidth
//! intervals, PMU samples served by local and remote DRAM, and a machine without counters.

use std::path::PathBuf;

use kairos_bandwidth::timeline::Timeline;

use super::{by_object, document};
use crate::build::Built;
use crate::objects::{Location, Object, ObjectKind};
use crate::{AccessData, AccessSample, Bucket, Direction, Source};

const START: u64 = 1_000_000_000;
const TICK: u64 = 100_000_000;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn timeline() -> Timeline {
    kairos_bandwidth::fixture::timeline(kairos_bandwidth::fixture::PCM_2S, START)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn sample(tick: u64, function: u32, level: Option<Bucket>) -> AccessSample {
    AccessSample {
        time_ns: START + tick * TICK + TICK / 2,
        pid: 1,
        tid: 2,
        ip: 0x1000,
        function,
        addr: 0x10_0000,
        size: 8,
        direction: Direction::Load,
        weight: 250_000,
        source: if level.is_some() {
            Source::Pmu
        } else {
            Source::Registers
        },
        sp: None,
        level,
        hitm: false,
        cpu: 0,
        phys_addr: None,
    }
}

/// (tick, object, function, level) per sample.
fn data(samples: &[(u64, u32, u32, Option<Bucket>)]) -> AccessData {
    let object = |kind, name: &str, size| Object {
        kind,
        name: name.into(),
        size,
    };
    let built = Built {
        samples: samples
            .iter()
            .map(|&(t, _, f, l)| sample(t, f, l))
            .collect(),
        locations: samples
            .iter()
            .map(|&(_, o, _, _)| Location {
                object: o,
                offset: 0,
            })
            .collect(),
        objects: vec![
            object(ObjectKind::Heap, "triad.c:20 (256 MiB)", 256 << 20),
            object(ObjectKind::Heap, "triad.c:21 (256 MiB)", 256 << 20),
            object(ObjectKind::Stack, "stack of thread 2", 0),
        ],
        functions: vec!["triad".into(), "init".into()],
        skipped: 0,
    };
    let source = samples.first().map_or(Source::Registers, |s| {
        if s.3.is_some() {
            Source::Pmu
        } else {
            Source::Registers
        }
    });
    AccessData {
        built,
        source,
        ..AccessData::default()
    }
}

/// Seven samples of `a` and three of `b` in triad during the saturated ticks (4 and 13),
/// six of the stack in init during the idle first tick, which must not count.
fn registers() -> AccessData {
    let mut s = vec![(4, 0, 0, None); 5];
    s.extend([(4, 1, 0, None); 3]);
    s.extend([(13, 0, 0, None); 2]);
    s.extend([(0, 2, 1, None); 6]);
    data(&s)
}

#[test]
fn the_report_with_a_timeline_in_three_formats() {
    let t = timeline();
    let doc = document(Some(&t), Some(&registers()), None);
    let text = doc.to_text();
    kairos_report::assert_golden(&golden("bandwidth.txt"), &text);
    kairos_report::assert_golden(&golden("bandwidth_csv.txt"), &doc.to_csv());
    kairos_report::assert_golden(&golden("bandwidth_json.txt"), &doc.to_json());
}

#[test]
fn only_samples_of_high_intervals_count_by_object() {
    let t = timeline();
    let tab = by_object(Some(&t), &registers(), None);
    let text = tab.to_text();
    assert!(!text.contains("stack of thread 2"), "{text}");
    assert!(
        text.contains("the 10 address samples")
            && text
                .contains("in the 7 intervals at or above 70% of the measured maximum (63.0 GB/s)"),
        "{text}"
    );
    // No maximum: 70% of the peak (72.1 GB/s) is 50.5 GB/s; the same seven ticks.
    let t = Timeline {
        maximum: None,
        ..timeline()
    };
    let text = by_object(Some(&t), &registers(), None).to_text();
    assert!(
        text.contains(
            "in the 7 intervals at or above 70% of the peak (no maximum measured) (50.5 GB/s)"
        ),
        "{text}"
    );
}

#[test]
fn with_a_pmu_loads_by_local_and_remote_dram() {
    let mut s = vec![(1, 0, 0, Some(Bucket::LocalDram)); 6];
    s.extend([(1, 0, 0, Some(Bucket::RemoteDram)); 2]);
    s.extend([(1, 1, 0, Some(Bucket::RemoteDram)); 4]);
    s.extend([(1, 2, 1, Some(Bucket::L1)); 9]);
    let doc = document(Some(&timeline()), Some(&data(&s)), None);
    kairos_report::assert_golden(&golden("bandwidth-pmu.txt"), &doc.to_text());
}

#[test]
fn a_machine_without_counters_says_why_and_how_to_measure_the_maximum() {
    let t = Timeline::unavailable("no bandwidth counters here: uncore: no uncore PMUs (a virtual machine exposes none); resctrl: resctrl is not mounted at /sys/fs/resctrl".into(), 100);
    let doc = document(Some(&t), Some(&registers()), None);
    kairos_report::assert_golden(&golden("bandwidth-unavailable.txt"), &doc.to_text());
    let old = document(None, Some(&registers()), None).to_text();
    assert!(
        old.contains("collected before bandwidth timelines were kept"),
        "{old}"
    );
}

#[test]
fn per_channel_figures_get_their_own_table() {
    use kairos_bandwidth::timeline::{ChannelPoint, Flow};
    let mut t = timeline();
    // Two ticks of socket 0: channel 1 carries twice channel 0's reads.
    for (i, k) in [(0u64, 1.0), (1, 3.0)] {
        for (ch, gbs) in [(0u32, 2.0), (1, 4.0)] {
            t.channels.push(ChannelPoint {
                t_ns: START + i * TICK,
                dur_ns: TICK,
                domain: 0,
                channel: ch,
                flow: Flow::Read,
                bytes_per_s: gbs * k * 1e9,
            });
        }
    }
    let text = document(Some(&t), Some(&registers()), None).to_text();
    let table = text
        .split("Bandwidth by memory channel")
        .nth(1)
        .unwrap_or_else(|| panic!("no channel table:\n{text}"));
    // Averages over the two ticks (2 and 6 GB/s: 4; 4 and 12: 8), peaks 6 and 12.
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("socket 0"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["socket", "0", "0", "read", "4.00", "6.00"],
            vec!["socket", "0", "1", "read", "8.00", "12.00"]
        ],
        "{table}"
    );
    // Without per-channel figures there is no such table (the goldens above).
    assert!(!document(Some(&timeline()), Some(&registers()), None)
        .to_text()
        .contains("memory channel"));
}
