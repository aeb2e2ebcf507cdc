//! A sampled recording is always a profile, whatever extra fields perf put in its samples,
//! and its events are shown as the user thinks of them; perf is the oracle.
//! - `perf record --call-graph dwarf -e cpu-clock` (perf adds ADDR and DATA_SRC to every
//!   event's samples then), and the same file as a cycles recording: imported as sampled
//!   profiles whose hotspots agree with `perf report --no-children --sort sym`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{kairos, path_str, sample, tempdir};

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
    let mut shares = BTreeMap::new();
    // "    28.43%  [.] calibrate"
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(pct), Some(_kind), Some(sym)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if let Some(p) = pct.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) {
            *shares.entry(sym.to_string()).or_insert(0.0) += p;
        }
    }
    shares
}

/// Ours: `kairos report hotspots --group-by function` as CSV, self share by function.
fn kairos_shares(result: &Path) -> BTreeMap<String, f64> {
    let out = kairos(&[
        "report",
        "hotspots",
        "-r",
        path_str(result),
        "--group-by",
        "function",
        "--format",
        "csv",
        "--limit",
        "0",
    ])
    .ok();
    let mut lines = out.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} column in {header:?}"))
    };
    let (f, p) = (col("Function"), col("Self %"));
    let mut shares = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if let (Some(name), Some(share)) = (
            cells.get(f),
            cells.get(p).and_then(|x| x.parse::<f64>().ok()),
        ) {
            *shares
                .entry(name.trim_matches('"').to_string())
                .or_insert(0.0) += share;
        }
    }
    shares
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
