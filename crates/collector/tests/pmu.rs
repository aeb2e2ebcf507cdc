//! PMU events given by the caller, on this machine: a KVM guest without a hardware PMU
//! (the kernel lists `breakpoint msr software tracepoint uprobe`). Hardware events must
//! fail with one clear error; the multi-event path is proven end to end with software
//! events of different sample types, read back by `perf script` (the oracle) and by
//! kairos-perf-data.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::out_path;
use kairos_collector::pmu::{PmuError, PmuEvent, PmuGroup, PmuSampling};
use kairos_collector::*;
use kairos_perf_data::{PerfFile, Record};
use perf_event_open_sys::bindings as b;

const SHORT_SH: &str = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; ls / >/dev/null";

fn sh(script: &str) -> Target {
    Target::Launch {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
    }
}

fn event(name: &str, type_: u32, config: u64, sample_type: u32, sampling: PmuSampling) -> PmuEvent {
    PmuEvent {
        name: name.into(),
        type_,
        config,
        config1: 0,
        config2: 0,
        config3: 0,
        precise_ip: 0,
        precise_min: 0,
        sample_type: sample_type as u64,
        sampling,
        no_exclude: false,
    }
}

/// Skylake's mem-loads as kairos-mem-source encodes it (raw 0x1cd, ldlat 30, `P`).
fn mem_loads() -> PmuEvent {
    let st = b::PERF_SAMPLE_IDENTIFIER
        | b::PERF_SAMPLE_IP
        | b::PERF_SAMPLE_ADDR
        | b::PERF_SAMPLE_DATA_SRC
        | b::PERF_SAMPLE_WEIGHT_STRUCT
        | b::PERF_SAMPLE_PHYS_ADDR;
    PmuEvent {
        config1: 30,
        precise_ip: 3,
        precise_min: 1,
        ..event(
            "cpu/mem-loads,ldlat=30/P",
            b::PERF_TYPE_RAW,
            0x1cd,
            st,
            PmuSampling::Frequency(4000),
        )
    }
}

fn has_core_pmu() -> bool {
    ["cpu", "cpu_core", "ibs_op"]
        .iter()
        .any(|p| Path::new("/sys/bus/event_source/devices").join(p).exists())
}

#[test]
fn pmu_event_without_a_pmu_is_one_clear_error() {
    if has_core_pmu() {
        eprintln!("this machine has a core PMU: the refusal cannot be checked here");
        return;
    }
    let cases = [
        (
            sh("true"),
            PmuGroup::single(mem_loads()),
            "cpu/mem-loads,ldlat=30/P",
        ),
        // The leader is opened first, so it is the one refused.
        (
            sh("true"),
            PmuGroup {
                leader: Some(PmuEvent {
                    name: "cpu/mem-loads-aux/".into(),
                    ..mem_loads()
                }),
                ..PmuGroup::single(mem_loads())
            },
            "cpu/mem-loads-aux/",
        ),
        (
            Target::SystemWide,
            PmuGroup::single(event(
                "cycles:P",
                b::PERF_TYPE_HARDWARE,
                0,
                0,
                PmuSampling::Period(100_000),
            )),
            "cycles:P",
        ),
        // A PMU type the kernel never registered.
        (
            sh("true"),
            PmuGroup::single(event(
                "ibs_op//",
                0x7fff_0000,
                0,
                0,
                PmuSampling::Period(0x10000),
            )),
            "ibs_op//",
        ),
    ];
    for (i, (target, group, name)) in cases.into_iter().enumerate() {
        let mut o = CollectOptions::new(target, out_path(&format!("nopmu{i}")));
        o.pmu_events = vec![group];
        o.duration = Some(Duration::from_millis(200));
        let r = collect(&o, &mut |_| {});
        let e = r.expect_err("no PMU here");
        eprintln!("{e}");
        match &e {
            CollectError::Pmu(PmuError::Refused { event, errno, why }) => {
                assert_eq!(event, name);
                assert!(*errno == libc::ENOENT || *errno == libc::ENODEV, "{e}");
                assert!(
                    why.contains("no hardware PMU in this virtual machine")
                        || why.contains("no PMU for type"),
                    "{e}"
                );
            }
            other => panic!("not a PMU refusal: {other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with(&format!("the CPU's PMU refused event {name} (ENO")),
            "{e}"
        );
        assert!(!o.output.exists(), "no file is left behind");
    }
}

/// (event name, ip, addr) of one sample.
type Row = (String, u64, u64);
type Counts = BTreeMap<String, usize>;

/// Samples per event name, and the (event, ip, addr) of each, as `perf script` prints them
/// (addr before ip; perf refuses `addr` when an event lacks PERF_SAMPLE_ADDR, so `with_addr`
/// is false then). `-G`: the sample's ip alone, not its call chain.
fn perf_script_samples(file: &Path, with_addr: bool) -> (Counts, Vec<Row>) {
    let fields = if with_addr {
        "event,addr,ip"
    } else {
        "event,ip"
    };
    let out = Command::new("perf")
        .args(["script", "-G", "-F", fields, "-i"])
        .arg(file)
        .output()
        .expect("perf must be installed");
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut counts = BTreeMap::new();
    let mut rows = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.split_whitespace();
        let Some(ev) = f.next() else { continue };
        let ev = ev.trim_end_matches(':').to_string();
        let nums: Vec<u64> = f.filter_map(|x| u64::from_str_radix(x, 16).ok()).collect();
        *counts.entry(ev.clone()).or_insert(0) += 1;
        let (ip, addr) = match (with_addr, nums.as_slice()) {
            (true, [addr, ip, ..]) => (*ip, *addr),
            (false, [ip, ..]) => (*ip, 0),
            _ => panic!("unexpected perf script line: {line}"),
        };
        rows.push((ev, ip, addr));
    }
    rows.sort();
    (counts, rows)
}

/// The same, from our reader; `addr_events` are those whose address perf prints.
fn reader_samples(file: &Path, addr_events: &[&str]) -> (Counts, Vec<Row>, BTreeMap<String, u64>) {
    let f = PerfFile::open(file).expect("our reader opens it");
    let names: Vec<String> = f
        .attrs()
        .iter()
        .map(|a| a.name.clone().unwrap_or_default())
        .collect();
    let types: BTreeMap<String, u64> = f
        .attrs()
        .iter()
        .zip(&names)
        .map(|(a, n)| (n.clone(), a.attr.sample_type))
        .collect();
    let mut counts = BTreeMap::new();
    let mut rows = Vec::new();
    for r in f.records() {
        if let Record::Sample(s) = r.expect("record decodes") {
            let ev = names[s.attr_index].clone();
            let addr = if addr_events.contains(&ev.as_str()) {
                s.addr.unwrap_or(0)
            } else {
                0
            };
            rows.push((ev.clone(), s.ip.unwrap_or(0), addr));
            *counts.entry(ev).or_insert(0) += 1;
        }
    }
    rows.sort();
    (counts, rows, types)
}

fn fault_events() -> Vec<PmuGroup> {
    // ADDR on the timer too (always 0 there): `perf script -F addr` wants it on every event.
    let chain = b::PERF_SAMPLE_ADDR
        | b::PERF_SAMPLE_IP
        | b::PERF_SAMPLE_TID
        | b::PERF_SAMPLE_TIME
        | b::PERF_SAMPLE_PERIOD
        | b::PERF_SAMPLE_CALLCHAIN;
    let addr = b::PERF_SAMPLE_IP | b::PERF_SAMPLE_ADDR | b::PERF_SAMPLE_PERIOD;
    vec![
        // A group: the cpu-clock leader and its page-faults member both sample.
        PmuGroup {
            leader: Some(event(
                "cpu-clock",
                b::PERF_TYPE_SOFTWARE,
                b::PERF_COUNT_SW_CPU_CLOCK as u64,
                chain,
                PmuSampling::Frequency(4000),
            )),
            ..PmuGroup::single(event(
                "page-faults",
                b::PERF_TYPE_SOFTWARE,
                b::PERF_COUNT_SW_PAGE_FAULTS as u64,
                addr,
                PmuSampling::Period(1),
            ))
        },
        PmuGroup::single(event(
            "minor-faults",
            b::PERF_TYPE_SOFTWARE,
            b::PERF_COUNT_SW_PAGE_FAULTS_MIN as u64,
            addr | b::PERF_SAMPLE_PHYS_ADDR,
            PmuSampling::Period(2),
        )),
    ]
}

/// Our reader and perf agree on every sample: same count per event, same ip and address.
fn check_against_perf(file: &Path, addr_events: &[&str]) -> BTreeMap<String, u64> {
    let (perf_counts, perf_rows) = perf_script_samples(file, !addr_events.is_empty());
    let (our_counts, our_rows, types) = reader_samples(file, addr_events);
    eprintln!("perf: {perf_counts:?}\nours: {our_counts:?}");
    assert_eq!(perf_counts, our_counts);
    assert_eq!(perf_rows, our_rows, "same (event, ip, addr) samples");
    types
}

#[test]
fn software_events_of_different_sample_types_launch_end_to_end() {
    let mut o = CollectOptions::new(sh(SHORT_SH), out_path("pmu_launch"));
    o.pmu_events = fault_events();
    let s = collect(&o, &mut |_| {}).expect("collect");
    eprintln!("{s:#?}");
    assert_eq!(s.target_exit, Some(TargetExit::Code(0)));
    let names: Vec<&str> = s.pmu_events.iter().map(|p| p.name.as_str()).collect();
    let k = if s.include_kernel { "" } else { ":u" };
    let want: Vec<String> = ["cpu-clock", "page-faults", "minor-faults"]
        .iter()
        .map(|n| format!("{n}{k}"))
        .collect();
    assert_eq!(names, want);
    assert_eq!(s.event_name, want.join(","));
    assert_eq!(s.sample_period, 0);

    let types = check_against_perf(&o.output, &[&want[0], &want[1], &want[2]]);
    let (counts, _, _) = reader_samples(&o.output, &[]);
    for n in &want {
        assert!(
            counts.get(n).copied().unwrap_or(0) > 0,
            "no {n} samples: {counts:?}"
        );
    }
    assert_eq!(
        counts.values().sum::<usize>() as u64,
        s.samples,
        "only PMU events sample (the dummy does not)"
    );
    // Each event kept its own sample_type, with the bits the collector adds.
    let has = |n: &String, bit: u32| types[n] & bit as u64 != 0;
    assert!(has(&want[0], b::PERF_SAMPLE_CALLCHAIN) && !has(&want[0], b::PERF_SAMPLE_PHYS_ADDR));
    assert!(has(&want[1], b::PERF_SAMPLE_ADDR) && !has(&want[1], b::PERF_SAMPLE_CALLCHAIN));
    assert!(
        has(&want[2], b::PERF_SAMPLE_PHYS_ADDR)
            || s.pmu_events[2].notes.iter().any(|n| n.contains("physical"))
    );
    for n in &want {
        assert!(
            has(n, b::PERF_SAMPLE_IDENTIFIER)
                && has(n, b::PERF_SAMPLE_TIME)
                && has(n, b::PERF_SAMPLE_CPU),
            "{n}"
        );
    }
}

#[test]
fn pmu_events_next_to_the_timer() {
    let mut o = CollectOptions::new(sh(SHORT_SH), out_path("pmu_timer"));
    o.event = EventChoice::CpuClock;
    o.pmu_with_timer = true;
    o.pmu_events = vec![fault_events().remove(1)];
    let s = collect(&o, &mut |_| {}).expect("collect");
    assert!(s.event_name.starts_with("cpu-clock"), "{}", s.event_name);
    let fault = s.pmu_events[0].name.clone();
    // The timer has no ADDR: compare event and ip only.
    let types = check_against_perf(&o.output, &[]);
    assert!(
        types.contains_key(&s.event_name) && types.contains_key(&fault),
        "{types:?}"
    );
    let (counts, _, _) = reader_samples(&o.output, &[]);
    assert!(
        counts.get(&fault).copied().unwrap_or(0) > 0
            && counts.get(&s.event_name).copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
}

#[test]
fn system_wide_pmu_events_on_every_cpu() {
    let mut o = CollectOptions::new(Target::SystemWide, out_path("pmu_sys"));
    o.duration = Some(Duration::from_millis(300));
    let mut g = fault_events().remove(1);
    g.event.sampling = PmuSampling::Period(50);
    o.pmu_events = vec![g];
    let s = match collect(&o, &mut |_| {}) {
        Ok(s) => s,
        Err(CollectError::Permission { .. }) => {
            return eprintln!("system-wide not permitted for this user")
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(s.stopped_by, StopReason::Duration);
    let fault = s.pmu_events[0].name.clone();
    check_against_perf(&o.output, &[&fault]);
}
