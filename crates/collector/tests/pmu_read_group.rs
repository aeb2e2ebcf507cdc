//! Counting members read at each sample (PERF_SAMPLE_READ with PERF_FORMAT_GROUP), the way
//! the memory-bound (TMA) counters are recorded with a PMU, proven here with software
//! events: a cpu-clock that samples and page-faults and context-switches that only count.
//! `perf script` (the oracle) prints each member's delta at each sample; their sums must
//! be the last values our reader sees, per counter instance.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::process::Command;
use std::time::Duration;

use common::out_path;
use kairos_collector::pmu::{PmuEvent, PmuGroup, PmuSampling};
use kairos_collector::*;
use kairos_perf_data::{PerfFile, Record};
use perf_event_open_sys::bindings as b;

fn sw(name: &str, config: u32, sampling: PmuSampling) -> PmuEvent {
    PmuEvent {
        name: name.into(),
        type_: b::PERF_TYPE_SOFTWARE,
        config: config as u64,
        config1: 0,
        config2: 0,
        config3: 0,
        precise_ip: 0,
        precise_min: 0,
        sample_type: (b::PERF_SAMPLE_IP
            | b::PERF_SAMPLE_TID
            | b::PERF_SAMPLE_TIME
            | b::PERF_SAMPLE_PERIOD) as u64,
        sampling,
        no_exclude: false,
    }
}

fn group(optional: bool) -> PmuGroup {
    PmuGroup {
        leader: None,
        event: sw(
            "cpu-clock",
            b::PERF_COUNT_SW_CPU_CLOCK,
            PmuSampling::Frequency(2000),
        ),
        members: vec![
            sw(
                "page-faults",
                b::PERF_COUNT_SW_PAGE_FAULTS,
                PmuSampling::Count,
            ),
            sw(
                "context-switches",
                b::PERF_COUNT_SW_CONTEXT_SWITCHES,
                PmuSampling::Count,
            ),
        ],
        optional,
        cpus: None,
    }
}

/// Sum of the periods `perf script` prints per event.
fn perf_sums(file: &std::path::Path) -> BTreeMap<String, u64> {
    let out = Command::new("perf")
        .args(["script", "-F", "event,period", "-i"])
        .arg(file)
        .output()
        .expect("perf must be installed");
    assert!(
        out.status.success(),
        "perf script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sums = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.split_whitespace();
        let (Some(p), Some(ev)) = (f.next(), f.next()) else {
            continue;
        };
        // Some periods perf prints overflow a u64 sum (a debug build panicked here); summed
        // modulo 2^64, as release builds always did, they match our deltas.
        let e = sums
            .entry(ev.trim_end_matches(':').to_string())
            .or_insert(0u64);
        *e = e.wrapping_add(
            p.parse::<u64>()
                .unwrap_or_else(|_| panic!("period in {line}")),
        );
    }
    sums
}

/// Per event, the sum over counter instances (ids) of the last value read.
fn reader_last_values(file: &std::path::Path) -> (BTreeMap<String, u64>, u64) {
    let f = PerfFile::open(file).expect("our reader opens it");
    let mut name_of_id = HashMap::new();
    for a in f.attrs() {
        for &id in &a.ids {
            name_of_id.insert(id, a.name.clone().unwrap_or_default());
        }
    }
    let mut last: HashMap<u64, u64> = HashMap::new();
    let mut samples = 0;
    for r in f.records() {
        if let Record::Sample(s) = r.expect("record decodes") {
            samples += 1;
            let read = s
                .read
                .as_ref()
                .expect("every sample of the group carries the read values");
            assert!(read.group && read.time_enabled.is_some() && read.time_running.is_some());
            assert_eq!(read.values.len(), 3, "leader and both members");
            for v in &read.values {
                last.insert(v.id.expect("ids are read"), v.value);
            }
        }
    }
    let mut sums = BTreeMap::new();
    for (id, v) in last {
        *sums.entry(name_of_id[&id].clone()).or_insert(0) += v;
    }
    (sums, samples)
}

#[test]
fn members_are_read_at_every_sample_and_perf_agrees() {
    // Page faults and context switches that the members must count.
    let script = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; ls / >/dev/null; sleep 0.05; i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done";
    let mut o = CollectOptions::new(
        Target::Launch {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
        },
        out_path("read_group"),
    );
    o.pmu_events = vec![group(false)];
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert_eq!(s.target_exit, Some(TargetExit::Code(0)));
    let names: Vec<&str> = s
        .pmu_events
        .iter()
        .map(|p| p.name.split(':').next().unwrap_or(""))
        .collect();
    assert_eq!(names, ["cpu-clock", "page-faults", "context-switches"]);
    assert!(s
        .pmu_events
        .iter()
        .all(|p| p.refused.is_none() && p.sample_type & b::PERF_SAMPLE_READ as u64 != 0));

    let perf = perf_sums(&o.output);
    let (ours, samples) = reader_last_values(&o.output);
    eprintln!("perf script sums: {perf:?}\nlast values: {ours:?}\nsamples {samples}");
    assert!(samples > 10, "the leader sampled");
    let strip = |m: &BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| (k.split(':').next().unwrap_or("").to_string(), *v))
            .collect::<BTreeMap<_, _>>()
    };
    let (perf, ours) = (strip(&perf), strip(&ours));
    for member in ["page-faults", "context-switches"] {
        assert!(perf[member] > 0, "{member} counted: {perf:?}");
        assert_eq!(
            perf[member], ours[member],
            "{member}: perf's deltas add up to the last value read"
        );
    }
}

#[test]
fn a_refused_optional_group_leaves_the_rest_recorded() {
    // A PMU type the kernel never registered, in an optional group, next to a working one.
    let mut bad = group(true);
    bad.event = PmuEvent {
        name: "nosuch//".into(),
        type_: 0x7fff_0000,
        ..bad.event
    };
    let mut o = CollectOptions::new(
        Target::Launch {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), common::BUSY_SH.into()],
        },
        out_path("read_group_optional"),
    );
    o.duration = Some(Duration::from_secs(10));
    o.pmu_events = vec![group(false), bad];
    let s =
        collect(&o, &mut |_| {}).expect("the optional group's refusal does not end the collection");
    let refused: Vec<&str> = s
        .pmu_events
        .iter()
        .filter(|p| p.refused.is_some())
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        refused,
        ["nosuch//", "page-faults", "context-switches"],
        "{:?}",
        s.pmu_events
    );
    let why = s.pmu_events[3].refused.as_deref().unwrap_or("");
    assert!(why.contains("nosuch//"), "{why}");
    let (ours, samples) = reader_last_values(&o.output);
    assert!(
        samples > 0 && ours.keys().any(|k| k.starts_with("page-faults")),
        "{ours:?}"
    );
}

#[test]
fn a_counting_event_cannot_sample_alone() {
    let mut g = group(false);
    g.event.sampling = PmuSampling::Count;
    let mut o = CollectOptions::new(
        Target::Launch {
            program: "/bin/true".into(),
            args: vec![],
        },
        out_path("read_group_bad"),
    );
    o.pmu_events = vec![g];
    let e = collect(&o, &mut |_| {}).expect_err("refused");
    assert!(e.to_string().contains("must follow a sampling one"), "{e}");
}
