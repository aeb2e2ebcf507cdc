//! A sampled recording is always a profile, whatever extra fields perf put in its samples,
//! and its events are shown as the user thinks of them; perf is the oracle.
//! - `perf record --call-graph dwarf -e cpu-clock` (perf adds ADDR and DATA_SRC to every
//!   event's samples then), and the same file as a cycles recording: imported as sampled
//!   profiles whose hotspots agree with `perf report --no-children --sort sym`.
//! - A hybrid CPU's recording (written here with the project's writer: attrs of the PMU
//!   types PMU_MAPPINGS names cpu_core and cpu_atom, cycles samples on each, as perf on an
//!   Alder Lake writes them): one event `cycles` by default, each core type on request,
//!   the counts those of `perf script` and `perf report` on the same file.
//! - `perf record -e page-faults,cpu-clock,minor-faults`: the default event is cpu-clock,
//!   the one that measures time, not the first in the file, and the summary says so.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::shares::kairos_shares;
use common::{kairos, path_str, sample, tempdir};
use kairos_perf_data::write::{PerfDataWriter, StringFeature};

/// Runs perf with `args` and returns its standard output; fails the test if perf does.
fn perf(args: &[&str]) -> String {
    let out = Command::new("perf").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "perf {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// perf's self share of each function: `perf report --no-children --sort sym`.
fn perf_shares(file: &Path) -> BTreeMap<String, f64> {
    let text = perf(&[
        "report",
        "-i",
        path_str(file),
        "--no-children",
        "--sort",
        "sym",
        "--stdio",
        "-q",
        "-g",
        "none",
    ]);
    common::shares::perf_report_shares(&text)
        .into_iter()
        .map(|(f, (p, _))| (f, p))
        .collect()
}

/// The functions perf gives at least 2% agree within 1 point, and there are some.
fn assert_agree(perf: &BTreeMap<String, f64>, ours: &BTreeMap<String, f64>, what: &str) {
    let top: Vec<(&String, &f64)> = perf.iter().filter(|(_, &p)| p >= 2.0).collect();
    assert!(top.len() >= 4, "{what}: perf's top functions: {perf:?}");
    let mut table = String::new();
    let mut worst: f64 = 0.0;
    for (name, &p) in &top {
        let k = ours.get(*name).copied().unwrap_or(0.0);
        worst = worst.max((p - k).abs());
        table.push_str(&format!("{name:<20} perf {p:6.2}%  kairos {k:6.2}%\n"));
    }
    eprintln!("{what}:\n{table}");
    assert!(worst <= 1.0, "{what}: off by {worst:.2} points\n{table}");
}

/// The result's manifest kind.
fn kind(result: &Path) -> Option<String> {
    kairos_result::ResultDir::open(result)
        .unwrap()
        .manifest()
        .kind
        .clone()
}

/// The recording as if perf had sampled `cycles` instead of `cpu-clock`: the attr's type
/// becomes PERF_TYPE_HARDWARE (config 0 is cycles there too) in the attr section and in
/// EVENT_DESC, whose name becomes "cycles". perf reads it as a cycles recording.
fn as_cycles(file: &Path, out: &Path) {
    let mut b = std::fs::read(file).unwrap();
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let (attr_size, attrs_at, attrs_size) =
        (u64_at(&b, 16), u64_at(&b, 24) as usize, u64_at(&b, 32));
    assert_eq!(attrs_size, attr_size, "one attr");
    let data_end = (u64_at(&b, 40) + u64_at(&b, 48)) as usize;
    // perf_event_attr starts with its type (u32) and size (u32): software, this size.
    let attr_len = attr_size as usize - 16;
    assert_eq!(
        &b[attrs_at..attrs_at + 4],
        &1u32.to_le_bytes(),
        "a software event"
    );
    let attr = b[attrs_at..attrs_at + attr_len].to_vec();
    b[attrs_at..attrs_at + 4].copy_from_slice(&0u32.to_le_bytes());
    // EVENT_DESC, after the data: the attr's copy, its number of ids, then its name.
    let find = |b: &[u8], what: &[u8], from: usize| {
        b[from..]
            .windows(what.len())
            .position(|w| w == what)
            .map(|i| from + i)
    };
    let copy = find(&b, &attr, data_end).expect("EVENT_DESC holds the attr");
    assert_eq!(find(&b, &attr, copy + 1), None, "and only once");
    b[copy..copy + 4].copy_from_slice(&0u32.to_le_bytes());
    let name = b"cpu-clock\0";
    let at = find(&b, name, copy).expect("the event's name");
    b[at..at + name.len()].copy_from_slice(b"cycles\0\0\0\0");
    std::fs::write(out, b).unwrap();
}

#[test]
fn a_dwarf_recording_is_a_profile_that_agrees_with_perf() {
    let dir = tempdir();
    let data = dir.path().join("dwarf.data");
    let program = sample("transitions");
    {
        let _turn = common::cpu_turn();
        perf(&[
            "record",
            "-q",
            "--call-graph",
            "dwarf",
            "-e",
            "cpu-clock",
            "-o",
            path_str(&data),
            "--",
            path_str(&program),
            "800",
        ]);
    }
    // What makes this file a trap: perf asked for data addresses and sources.
    let evlist = perf(&["evlist", "-v", "-i", path_str(&data)]);
    assert!(
        evlist.contains("ADDR") && evlist.contains("DATA_SRC"),
        "{evlist}"
    );

    let cycles = dir.path().join("cycles.data");
    as_cycles(&data, &cycles);
    assert!(
        perf(&["evlist", "-i", path_str(&cycles)]).trim() == "cycles",
        "perf reads the rewritten file as a cycles recording"
    );

    for (file, what) in [(&data, "cpu-clock"), (&cycles, "cycles")] {
        let result = dir.path().join(format!("r-{what}"));
        let imported = kairos(&["import", path_str(file), "-q", "-r", path_str(&result)]).ok();
        assert_eq!(
            kind(&result).as_deref(),
            Some("hotspots"),
            "{what}: {}",
            imported.stdout
        );
        assert!(
            !imported.stdout.contains("[unmapped]") && imported.stdout.contains("calibrate"),
            "{what}: the import's summary is the profile's:\n{}",
            imported.stdout
        );
        assert_agree(&perf_shares(file), &kairos_shares(&result), what);
        // The profile's other reports and the export.
        for report in ["top-down", "timeline"] {
            let r = kairos(&["report", report, "-r", path_str(&result)]).ok();
            assert!(r.stdout.contains("p3_C"), "{what} {report}:\n{}", r.stdout);
        }
        let out = dir.path().join(format!("{what}.collapsed"));
        kairos(&[
            "export",
            "-r",
            path_str(&result),
            "--format",
            "collapsed",
            "-o",
            path_str(&out),
        ])
        .ok();
        let stacks = std::fs::read_to_string(&out).unwrap();
        assert!(stacks.contains(";main;fig10;p3;"), "{what}: {stacks}");
    }
}

/// PMU types as the kernel of a 12th-generation Core numbers them.
const CPU_CORE: u32 = 4;
const CPU_ATOM: u32 = 10;
/// sample_type: IP | TID | TIME | ID | CPU | PERIOD.
const SAMPLE_TYPE: u64 = 0x1 | 0x2 | 0x4 | 0x40 | 0x80 | 0x100;

/// A 128-byte perf_event_attr: cycles (hardware event 0) of PMU type `pmu`, the type in
/// the config's upper 32 bits as the kernel wants it on a hybrid CPU.
fn hybrid_cycles_attr(pmu: u32) -> Vec<u8> {
    let mut a = vec![0u8; 128];
    a[0..4].copy_from_slice(&0u32.to_le_bytes()); // PERF_TYPE_HARDWARE
    a[4..8].copy_from_slice(&128u32.to_le_bytes());
    a[8..16].copy_from_slice(&(u64::from(pmu) << 32).to_le_bytes());
    a[16..24].copy_from_slice(&1_000_003u64.to_le_bytes()); // sample_period
    a[24..32].copy_from_slice(&SAMPLE_TYPE.to_le_bytes());
    a
}

fn record(type_: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(8 + body.len());
    r.extend_from_slice(&type_.to_le_bytes());
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
    r.extend_from_slice(body);
    r
}

/// One sample: (event id, time, cpu, period, ip).
fn sample_record(id: u64, time: u64, cpu: u32, period: u64, ip: u64) -> Vec<u8> {
    const PID: u32 = 4242;
    let mut b = Vec::new();
    for w in [ip, u64::from(PID) | u64::from(PID) << 32, time, id] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    b.extend_from_slice(&u64::from(cpu).to_le_bytes()); // cpu, reserved
    b.extend_from_slice(&period.to_le_bytes());
    record(9, 2, &b) // PERF_RECORD_SAMPLE, user mode
}

/// What a hybrid CPU's `perf record -e cycles` writes: `cpu_atom/cycles/` first (55
/// samples on the E-cores, CPUs 4-7), then `cpu_core/cycles/` (2,411 on the P-cores, CPUs
/// 0-3), interleaved in time; periods vary. `names`: the events' names in EVENT_DESC.
fn write_hybrid(path: &Path, names: [&str; 2]) {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap();
    let mut w = PerfDataWriter::create(file).unwrap();
    w.add_attr(hybrid_cycles_attr(CPU_ATOM), vec![11, 12], names[0].into());
    w.add_attr(hybrid_cycles_attr(CPU_CORE), vec![21, 22], names[1].into());
    w.set_pmu_mappings(&[
        (CPU_CORE, "cpu_core"),
        (1, "software"),
        (2, "tracepoint"),
        (CPU_ATOM, "cpu_atom"),
    ]);
    w.set_feature_string(StringFeature::Hostname, "alderlake");
    w.set_feature_string(StringFeature::OsRelease, "6.8.0-hybrid");
    w.set_feature_string(StringFeature::Arch, "x86_64");
    w.set_nr_cpus(8, 8);
    let mut comm = Vec::new();
    comm.extend_from_slice(&4242u32.to_le_bytes());
    comm.extend_from_slice(&4242u32.to_le_bytes());
    comm.extend_from_slice(b"hybrid\0\0");
    w.write_record(&record(3, 0, &comm)).unwrap(); // PERF_RECORD_COMM
    let mut t = 1_000_000_000u64;
    for i in 0..2466u64 {
        t += 400_000;
        let ip = 0x40_1000 + (i % 16) * 0x10;
        // Every 45th sample is an E-core's: 55 of 2,466.
        let r = if i % 45 == 0 {
            sample_record(11 + i % 2, t, 4 + (i % 4) as u32, 2_000_003 + i, ip)
        } else {
            sample_record(21 + i % 2, t, (i % 4) as u32, 1_000_003 + i % 1000, ip)
        };
        w.write_record(&r).unwrap();
    }
    w.write_record(&record(68, 0, &[])).unwrap(); // FINISHED_ROUND
    w.finish().unwrap();
}

/// (samples, sum of periods) by what `key` makes of perf script's `[CPU] PERIOD EVENT:`
/// (CPU 0 where the samples have none).
fn perf_script_counts(
    file: &Path,
    key: &dyn Fn(u32, &str) -> String,
) -> BTreeMap<String, (u64, u64)> {
    let attrs = perf(&["evlist", "-v", "-i", path_str(file)]);
    let fields = if attrs.lines().all(|l| l.contains("|CPU|")) {
        "cpu,period,event"
    } else {
        "period,event"
    };
    let text = perf(&["script", "-i", path_str(file), "-F", fields]);
    let mut c: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let (cpu, period, event) = match w[..] {
            [cpu, period, event] => (cpu.trim_matches(['[', ']']).parse().unwrap(), period, event),
            [period, event] => (0, period, event),
            _ => continue,
        };
        let e = c.entry(key(cpu, event.trim_end_matches(':'))).or_default();
        e.0 += 1;
        e.1 += period.parse::<u64>().unwrap();
    }
    c
}

/// `perf report`'s own count per event: its sections "# Samples: 2K of event
/// 'cpu_core/cycles/'" with "# Event count (approx.): 2412089753", and rows "45.00%
/// 1085 003" of `--sort cpu -n` whose sample counts add up to the exact number.
fn perf_report_counts(file: &Path) -> BTreeMap<String, (u64, u64)> {
    let text = perf(&[
        "report",
        "-i",
        path_str(file),
        "--stdio",
        "--sort",
        "cpu",
        "-n",
    ]);
    let mut c: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut event = None;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# Samples: ") {
            let (_, name) = rest.split_once(" of event '").unwrap();
            event = Some(name.trim_end_matches('\'').to_string());
        } else if let Some(n) = l.strip_prefix("# Event count (approx.): ") {
            let e = event.clone().unwrap();
            c.entry(e).or_default().1 = n.trim().parse().unwrap();
        } else if let Some(e) = &event {
            let w: Vec<&str> = l.split_whitespace().collect();
            if let [pct, n, _cpu] = w[..] {
                if pct.ends_with('%') {
                    c.entry(e.clone()).or_default().0 += n.parse::<u64>().unwrap();
                }
            }
        }
    }
    c
}

/// The "Event shown" line of `kairos report summary` (JSON), with `--event` if given.
fn event_shown(result: &Path, event: Option<&str>) -> String {
    let mut args = vec![
        "report",
        "summary",
        "-r",
        path_str(result),
        "--format",
        "json",
    ];
    if let Some(e) = event {
        args.extend(["--event", e]);
    }
    let out = kairos(&args).ok().stdout;
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    doc["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|b| b["values"]["Event shown"].as_str())
        .unwrap_or_else(|| panic!("no Event shown in {out}"))
        .to_string()
}

/// Samples and summed weight of `kairos report hotspots` by thread (columns: thread,
/// samples, weight, share), every row.
fn kairos_totals(result: &Path, event: Option<&str>) -> (u64, u64) {
    let mut args = vec![
        "report",
        "hotspots",
        "-r",
        path_str(result),
        "--group-by",
        "thread",
        "--format",
        "csv",
        "--limit",
        "0",
    ];
    if let Some(e) = event {
        args.extend(["--event", e]);
    }
    let out = kairos(&args).ok().stdout;
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("Thread,Samples,"), "{header}");
    let mut t = (0, 0);
    for l in lines {
        let c: Vec<&str> = l.split(',').collect();
        t.0 += c[1].parse::<u64>().unwrap();
        t.1 += c[2].parse::<u64>().unwrap();
    }
    t
}

#[test]
fn a_hybrid_cpus_cycles_are_one_event_and_each_core_type_on_request() {
    let dir = tempdir();
    // As perf names the events on a hybrid CPU, and with both named plain `cycles` (the
    // core types then come from PMU_MAPPINGS and the config's PMU type).
    for names in [
        ["cpu_atom/cycles/", "cpu_core/cycles/"],
        ["cycles", "cycles"],
    ] {
        let file = dir.path().join(format!("hybrid-{}.data", names[0].len()));
        write_hybrid(&file, names);
        let header = perf(&["report", "-i", path_str(&file), "--header-only", "-I"]);
        assert!(
            header.contains("cpu_core = 4") && header.contains("cpu_atom = 10"),
            "perf reads the PMU mappings:\n{header}"
        );
        // perf's counts per core type: by event name where perf names them apart, else
        // by the CPUs each core type has (P-cores 0-3, E-cores 4-7).
        let by_core = |cpu: u32, event: &str| {
            if event.contains('/') {
                event.to_string()
            } else if cpu < 4 {
                "cpu_core/cycles/".to_string()
            } else {
                "cpu_atom/cycles/".to_string()
            }
        };
        let script = perf_script_counts(&file, &by_core);
        let (atom, core) = (script["cpu_atom/cycles/"], script["cpu_core/cycles/"]);
        assert_eq!((atom.0, core.0), (55, 2411), "{script:?}");
        if names[0].contains('/') {
            assert_eq!(
                perf_report_counts(&file),
                script,
                "perf report and perf script agree"
            );
        }

        let result = dir.path().join(format!("r-{}", names[0].len()));
        let summary = kairos(&["import", "-q", path_str(&file), "-r", path_str(&result)])
            .ok()
            .stdout;
        // The core types listed apart; the one event shown is both together.
        let m = kairos_result::ResultDir::open(&result).unwrap();
        let ours: BTreeMap<String, (u64, u64)> = m
            .manifest()
            .events
            .iter()
            .map(|e| (e.name.clone(), (e.samples, e.weight)))
            .collect();
        assert_eq!(ours, script, "per core type, as perf counts them");
        assert!(summary.contains("Event shown:"), "{summary}");
        assert_eq!(
            event_shown(&result, None),
            "cycles (as recorded in the perf.data file; cpu_atom and cpu_core summed; --event NAME for another)"
        );
        let both = (atom.0 + core.0, atom.1 + core.1);
        assert_eq!(
            kairos_totals(&result, None),
            both,
            "cycles: both core types"
        );
        assert_eq!(kairos_totals(&result, Some("cycles")), both);
        for (name, want) in [("cpu_core/cycles/", core), ("cpu_atom/cycles/", atom)] {
            assert_eq!(kairos_totals(&result, Some(name)), want, "{name}");
        }
    }
}

#[test]
fn the_default_event_is_the_one_that_measures_time() {
    let dir = tempdir();
    let file = dir.path().join("multi.data");
    let program = sample("matrix");
    perf(&[
        "record",
        "-q",
        "-e",
        "page-faults,cpu-clock,minor-faults",
        "-o",
        path_str(&file),
        "--",
        path_str(&program),
        "256",
    ]);
    let script = perf_script_counts(&file, &|_, e| e.to_string());
    let first = perf(&["evlist", "-i", path_str(&file)]);
    assert!(
        first.lines().next() == Some("page-faults") && script["page-faults"].0 > 0,
        "the timer is not first in the file, and the first has samples: {first} {script:?}"
    );
    let result = dir.path().join("r");
    let imported = kairos(&["import", "-q", path_str(&file), "-r", path_str(&result)])
        .ok()
        .stdout;
    assert!(imported.contains("Event shown:"), "{imported}");
    assert_eq!(
        event_shown(&result, None),
        "cpu-clock (the event that measures time; --event NAME for another)"
    );
    // The reports show cpu-clock's samples: perf script's count of them.
    let cpu_clock = script["cpu-clock"];
    assert_eq!(kairos_totals(&result, None).0, cpu_clock.0, "{script:?}");
    assert_eq!(
        kairos_totals(&result, Some("page-faults")),
        script["page-faults"]
    );
    assert_eq!(
        event_shown(&result, Some("minor-faults")),
        "minor-faults (asked for with --event)"
    );
}
