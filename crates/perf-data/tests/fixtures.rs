//! Real LBR recordings checked against `perf script` as the oracle, sample for sample:
//! pid/tid, cpu, time, period, ip and every branch entry (from, to, M/P/-, X, A, cycles).
//! Header features are checked against `perf report --header-only`.
//!
//! Fixtures: $KAIROS_FIXTURES, else <repo>/../shared/fixtures/lbr. Missing fixtures or a
//! missing `perf` fail the tests: a comparison that silently skips proves nothing.
#![allow(clippy::panic, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use kairos_perf_data::{PerfFile, Record, Sample};

const ORACLE_FILES: [&str; 5] = [
    "sandybridge_systemwide_callchain_any_16deep.perf.data",
    "skylake-sp_any_32deep_cycles.perf.data",
    "skylake_any_32deep_cycles_echo.perf.data",
    "westmere_any_16deep.perf.data",
    "zen4_lbrextv2_16deep.perf.data",
];
const HASWELL: &str = "haswell-e_any_16deep_perf6.8.perf.data";

fn fixtures() -> PathBuf {
    let dir = std::env::var_os("KAIROS_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/lbr")
        });
    assert!(
        dir.join(HASWELL).is_file(),
        "LBR fixtures not found in {}: set KAIROS_FIXTURES to the directory holding shared/fixtures/lbr",
        dir.display()
    );
    dir
}

/// One sample as perf script prints it; fields perf could not print are None.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    time: Option<String>,
    pid: Option<i32>,
    tid: i32,
    cpu: Option<u32>,
    period: Option<u64>,
    ip: u64,
    branches: Vec<String>,
}

/// Field sets from richest to poorest; perf refuses fields the file lacks (for example
/// "Samples for 'cycles:u' event do not have CPU attribute set").
const FIELD_SETS: [&str; 4] = [
    "pid,tid,cpu,time,period,ip,brstack",
    "pid,tid,time,period,ip,brstack",
    "pid,tid,time,ip,brstack",
    "tid,time,ip,brstack",
];

fn perf_script(file: &PathBuf) -> (&'static str, Vec<Row>) {
    for fields in FIELD_SETS {
        let out = Command::new("perf")
            .args(["script", "-G", "--ns", "-F", fields, "-i"])
            .arg(file)
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run `perf script` (perf must be installed for this test): {e}")
            });
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && !text.trim().is_empty() {
            return (
                fields,
                text.lines().map(|l| parse_line(fields, l)).collect(),
            );
        }
    }
    panic!(
        "perf script accepted none of {FIELD_SETS:?} for {}",
        file.display()
    );
}

fn parse_line(fields: &str, line: &str) -> Row {
    let mut t = line.split_whitespace();
    let mut next = || {
        t.next()
            .unwrap_or_else(|| panic!("short perf script line: {line}"))
    };
    let mut row = Row {
        time: None,
        pid: None,
        tid: 0,
        cpu: None,
        period: None,
        ip: 0,
        branches: Vec::new(),
    };
    let has = |f: &str| fields.split(',').any(|x| x == f);
    if has("pid") {
        let (p, tid) = next().split_once('/').expect("pid/tid");
        row.pid = Some(p.parse().expect("pid"));
        row.tid = tid.parse().expect("tid");
    } else {
        row.tid = next().parse().expect("tid");
    }
    if has("cpu") {
        row.cpu = Some(
            next()
                .trim_matches(|c| c == '[' || c == ']')
                .parse()
                .expect("cpu"),
        );
    }
    row.time = Some(next().trim_end_matches(':').to_string());
    if has("period") {
        row.period = Some(next().parse().expect("period"));
    }
    row.ip = u64::from_str_radix(next(), 16).expect("ip");
    row.branches = t.map(|e| e.trim_end_matches('/').to_string()).collect();
    row
}

/// Our sample in perf script's notation.
fn our_row(fields: &str, s: &Sample<'_>, file: &PerfFile) -> Row {
    let has = |f: &str| fields.split(',').any(|x| x == f);
    let time = s.time.expect("time");
    let branches = s.branch_stack.as_ref().map_or(Vec::new(), |b| {
        b.entries
            .iter()
            .map(|e| {
                let f = e.flags;
                let mp = if f.mispred() {
                    'M'
                } else if f.predicted() {
                    'P'
                } else {
                    '-'
                };
                let tx = if f.in_tx() { 'X' } else { '-' };
                let ab = if f.abort() { 'A' } else { '-' };
                format!("0x{:x}/0x{:x}/{mp}/{tx}/{ab}/{}", e.from, e.to, f.cycles())
            })
            .collect()
    });
    Row {
        time: Some(format!(
            "{}.{:09}",
            time / 1_000_000_000,
            time % 1_000_000_000
        )),
        pid: s.pid.filter(|_| has("pid")),
        tid: s.tid.expect("tid"),
        cpu: s.cpu.filter(|_| has("cpu")),
        // Without PERIOD in sample_type perf prints the attr's fixed period.
        period: s
            .period
            .or_else(|| file.attrs().get(s.attr_index)?.attr.sample_period())
            .filter(|_| has("period")),
        ip: s.ip.expect("ip"),
        branches,
    }
}

fn samples(file: &PerfFile) -> Vec<Sample<'_>> {
    let mut out = Vec::new();
    for r in file.records() {
        match r {
            Ok(Record::Sample(s)) => out.push(s),
            Ok(_) => {}
            Err(e) => panic!("decode error: {e}"),
        }
    }
    out
}

#[test]
fn samples_and_branch_stacks_match_perf_script() {
    let dir = fixtures();
    for name in ORACLE_FILES {
        let path = dir.join(name);
        let (fields, mut expected) = perf_script(&path);
        let file = PerfFile::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut ours: Vec<Row> = samples(&file)
            .iter()
            .map(|s| our_row(fields, s, &file))
            .collect();
        assert_eq!(
            ours.len(),
            expected.len(),
            "{name}: sample count (perf script -F {fields})"
        );
        // perf script sorts samples by time across rounds; compare as sorted lists.
        ours.sort();
        expected.sort();
        for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
            assert_eq!(
                a, b,
                "{name}: sample {i} (sorted) differs from perf script -F {fields}"
            );
        }
        let entries: usize = ours.iter().map(|r| r.branches.len()).sum();
        assert!(entries > 0, "{name}: no branch entries compared");
        eprintln!(
            "{name}: {} samples, {entries} branch entries agree with perf script -F {fields}",
            ours.len()
        );
    }
}

#[test]
fn haswell_e_file_with_152_byte_attrs_reads() {
    let file =
        PerfFile::open(fixtures().join(HASWELL)).expect("perf 6.1 refuses this file; we must not");
    assert_eq!(file.header().attr_size, 152);
    assert_eq!(file.attrs()[0].attr.size, 136);
    let s = samples(&file);
    assert_eq!(s.len(), 145);
    let entries: usize = s
        .iter()
        .map(|s| s.branch_stack.as_ref().map_or(0, |b| b.entries.len()))
        .sum();
    assert_eq!(entries, 2320);
    assert!(s.iter().all(|s| s.ip.is_some() && s.tid.is_some()));
}

#[test]
fn header_features_match_perf_report() {
    let dir = fixtures();
    for name in ORACLE_FILES {
        let path = dir.join(name);
        let out = Command::new("perf")
            .args(["report", "--header-only", "-i"])
            .arg(&path)
            .output()
            .expect("run perf report");
        let text = String::from_utf8_lossy(&out.stdout);
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("# {key} : ")))
                .map(|v| v.trim().to_string())
        };
        let file = PerfFile::open(&path).expect("opens");
        let f = file.features();
        assert_eq!(f.hostname, value("hostname"), "{name}: hostname");
        assert_eq!(f.os_release, value("os release"), "{name}: os release");
        assert_eq!(f.arch, value("arch"), "{name}: arch");
        assert_eq!(f.cpuid, value("cpuid"), "{name}: cpuid");
        assert_eq!(f.cpu_desc, value("cpudesc"), "{name}: cpudesc");
        assert_eq!(
            f.nr_cpus.map(|n| n.1.to_string()),
            value("nrcpus online"),
            "{name}: nrcpus online"
        );
        assert_eq!(
            f.total_mem_kib.map(|m| format!("{m} kB")),
            value("total memory"),
            "{name}: total memory"
        );
        assert_eq!(
            f.cmdline.as_ref().map(|c| c.join(" ")),
            value("cmdline"),
            "{name}: cmdline"
        );
        let event = value("event").expect("event line");
        let name_in_perf = event
            .strip_prefix("name = ")
            .and_then(|e| e.split(',').next())
            .expect("event name");
        assert_eq!(
            file.attrs()[0].name.as_deref(),
            Some(name_in_perf),
            "{name}: event name"
        );
    }
}

#[test]
fn unfinalised_and_cut_real_file() {
    let bytes = std::fs::read(fixtures().join("skylake-sp_any_32deep_cycles.perf.data"))
        .expect("read fixture");
    let full = PerfFile::from_bytes(bytes.clone()).expect("opens");
    let n = samples(&full).len();
    let (off, size) = (
        full.header().data.offset as usize,
        full.header().data.size as usize,
    );
    // data.size = 0 and nothing after the data: as left by a perf record that was killed.
    let mut unfinished = bytes[..off + size].to_vec();
    unfinished[0x30..0x38].copy_from_slice(&0u64.to_le_bytes());
    assert_eq!(
        samples(&PerfFile::from_bytes(unfinished).expect("opens")).len(),
        n
    );
    // Cut in the middle of the data: the records before the cut, then one error at or before it.
    let cut = off + size / 2 + 3;
    let file = PerfFile::from_bytes(bytes[..cut].to_vec()).expect("opens");
    let recs: Vec<_> = file.records().collect();
    let (last, before) = recs.split_last().expect("records");
    let err = last.as_ref().expect_err("the cut is reported");
    assert!(before.iter().all(Result::is_ok) && before.len() > 1000);
    assert!(
        err.offset <= cut as u64 && err.offset >= off as u64,
        "{err}"
    );
}
