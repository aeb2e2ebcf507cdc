//! Branch records of the real LBR recordings in `shared/fixtures/lbr`: `kairos import`
//! stores exactly what `perf script -F tid,time,ip,brstack` prints, entry for entry; golden
//! `report branches`; damaged branch stacks and `-k branch-records=on` without LBR give a
//! sentence, not a panic.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{fixtures, kairos, kairos_in, tempdir};

type Snapshot = (i32, u64, Vec<(u64, u64)>);

fn import(file: &Path, result: &Path) -> kairos_model::Profile {
    let fx = fixtures();
    kairos_in(
        &fx,
        &[
            "import",
            "-q",
            file.to_str().unwrap(),
            "-r",
            result.to_str().unwrap(),
            "--perf-map-dir",
            ".",
        ],
    )
    .ok();
    kairos_result::read_profile(&kairos_result::ResultDir::open(result).unwrap()).unwrap()
}

/// Per sample: (tid, time ns, [(from, to)] newest first), sorted.
fn ours(p: &kairos_model::Profile) -> Vec<Snapshot> {
    let mut v: Vec<Snapshot> = p
        .samples
        .iter()
        .map(|s| (p.threads[s.thread as usize].tid, s.time_ns, Vec::new()))
        .collect();
    for b in &p.branches {
        assert_eq!(
            v[b.sample as usize].2.len(),
            b.position as usize,
            "positions are dense and ordered"
        );
        v[b.sample as usize].2.push((b.from_address, b.to_address));
    }
    v.sort();
    v
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

/// perf's view of the same file.
fn perf_script(file: &Path) -> Vec<Snapshot> {
    let out = Command::new("perf")
        .args(["script", "-i"])
        .arg(file)
        .args(["-F", "tid,time,ip,brstack", "--ns", "--hide-call-graph"])
        .output()
        .expect("perf is installed on every machine here");
    assert!(
        out.status.success(),
        "perf script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(tid), Some(time)) = (words.next(), words.next()) else {
            continue;
        };
        let (Ok(tid), Some(time)) = (tid.parse::<i32>(), time.strip_suffix(':')) else {
            continue;
        };
        let (secs, frac) = time.split_once('.').unwrap();
        let ns = secs.parse::<u64>().unwrap() * 1_000_000_000
            + format!("{frac:0<9}").parse::<u64>().unwrap();
        let entries = words
            .filter(|w| w.starts_with("0x") && w.contains('/'))
            .map(|w| {
                let mut parts = w.split('/');
                (hex(parts.next().unwrap()), hex(parts.next().unwrap()))
            })
            .collect();
        v.push((tid, ns, entries));
    }
    v.sort();
    v
}

fn agrees_with_perf(name: &str) {
    let file = fixtures().join(name);
    let tmp = tempdir();
    let p = import(&file, &tmp.path().join("r"));
    let (a, b) = (ours(&p), perf_script(&file));
    assert_eq!(a.len(), b.len(), "{name}: samples");
    let mut entries = 0;
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "{name}: sample at tid {} time {}", y.0, y.1);
        entries += y.2.len();
    }
    assert_eq!(entries, p.branches.len());
    let info = p.branch_info.as_ref().unwrap();
    assert_eq!(info.filter, "any");
    eprintln!(
        "{name}: {} samples, {entries} entries agree with perf script",
        a.len()
    );
}

#[test]
fn skylake_sp_agrees_with_perf() {
    agrees_with_perf("skylake-sp_any_32deep_cycles.perf.data");
}

#[test]
fn westmere_agrees_with_perf() {
    agrees_with_perf("westmere_any_16deep.perf.data");
}

#[test]
fn skylake_echo_agrees_with_perf() {
    agrees_with_perf("skylake_any_32deep_cycles_echo.perf.data");
}

#[test]
fn zen4_agrees_with_perf() {
    agrees_with_perf("zen4_lbrextv2_16deep.perf.data");
}

#[test]
fn sandybridge_agrees_with_perf() {
    agrees_with_perf("sandybridge_systemwide_callchain_any_16deep.perf.data");
}

#[test]
fn haswell_e_which_perf_6_1_refuses_gives_145_samples_and_2320_records() {
    let tmp = tempdir();
    let p = import(
        &fixtures().join("haswell-e_any_16deep_perf6.8.perf.data"),
        &tmp.path().join("r"),
    );
    assert_eq!((p.samples.len(), p.branches.len()), (145, 2320));
    assert!(p.branches.chunks(16).all(|c| c
        .iter()
        .enumerate()
        .all(|(i, b)| b.position as usize == i && b.sample == c[0].sample)));
    assert_eq!(p.branch_info.unwrap().depth, 16);
}

#[test]
fn cycles_and_overlap_on_skylake_sp() {
    let tmp = tempdir();
    let p = import(
        &fixtures().join("skylake-sp_any_32deep_cycles.perf.data"),
        &tmp.path().join("r"),
    );
    let info = p.branch_info.clone().unwrap();
    assert!(info.has_cycles && info.depth == 32 && !info.emulated);
    // README: 119,420 of 119,424 entries have cycles > 0.
    assert_eq!(
        p.branches.iter().filter(|b| b.cycles.is_some()).count(),
        119_420
    );
    // Records seen before are never new; every sample's newest record is new unless the
    // snapshot repeats the previous one whole.
    assert!(p.branches.iter().any(|b| !b.is_new) || info.overflowed_snapshots > 0);
    // Named through perf-5595.map.
    assert!(p
        .branches
        .iter()
        .filter_map(|b| b.from_frame)
        .any(|f| p.frames[f as usize].function == "main"));
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/branches")
        .join(name)
}

/// Golden `report branches` outputs, run from the fixtures directory with relative names
/// so no machine path lands in them.
fn report_goldens(file: &str, tag: &str, cases: &[(&str, &[&str])]) {
    let tmp = tempdir();
    let result = tmp.path().join("r");
    let r = result.to_str().unwrap();
    let fx = fixtures();
    kairos_in(&fx, &["import", "-q", file, "-r", r, "--perf-map-dir", "."]).ok();
    for (name, extra) in cases {
        let mut args = vec!["report", "branches", "-r", r];
        args.extend_from_slice(extra);
        let out = kairos_in(&fx, &args).ok();
        kairos_report::assert_golden(&golden(&format!("{tag}_{name}.txt")), &out.stdout);
    }
}

#[test]
fn skylake_sp_branch_report_goldens() {
    report_goldens(
        "skylake-sp_any_32deep_cycles.perf.data",
        "skylake-sp",
        &[
            ("sample_100", &["--sample", "100"]),
            ("time_0.5", &["--time", "0.5"]),
            ("sample_7_csv", &["--sample", "7", "--format", "csv"]),
        ],
    );
}

#[test]
fn zen4_branch_report_goldens() {
    report_goldens(
        "zen4_lbrextv2_16deep.perf.data",
        "zen4",
        &[
            ("sample_3", &["--sample", "3"]),
            ("sample_5_json", &["--sample", "5", "--format", "json"]),
        ],
    );
}

#[test]
fn branch_report_sentences() {
    let tmp = tempdir();
    let result = tmp.path().join("r");
    let r = result.to_str().unwrap();
    kairos_in(
        &fixtures(),
        &["import", "-q", "zen4_lbrextv2_16deep.perf.data", "-r", r],
    )
    .ok();
    let e = kairos(&["report", "branches", "-r", r, "--sample", "8"]);
    assert!(
        e.code != 0
            && e.stderr
                .contains("sample 8 is out of range: the result has 8 samples"),
        "{}",
        e.stderr
    );
    let e = kairos(&["report", "branches", "-r", r]);
    assert!(
        e.code != 0 && e.stderr.contains("--sample N"),
        "{}",
        e.stderr
    );
    let e = kairos(&["report", "branches", "-r", r, "--time=-1"]);
    assert!(e.code != 0 && e.stderr.contains("--time"), "{}", e.stderr);
    // Skylake-SP has samples with an empty stack (nr = 0).
    let result = tmp.path().join("s");
    let s = result.to_str().unwrap();
    kairos_in(
        &fixtures(),
        &[
            "import",
            "-q",
            "skylake-sp_any_32deep_cycles.perf.data",
            "-r",
            s,
        ],
    )
    .ok();
    let p = kairos_result::read_profile(&kairos_result::ResultDir::open(&result).unwrap()).unwrap();
    let empty = (0..p.samples.len() as u32)
        .find(|i| !p.branches.iter().any(|b| b.sample == *i))
        .unwrap();
    let e = kairos(&[
        "report",
        "branches",
        "-r",
        s,
        "--sample",
        &empty.to_string(),
    ]);
    assert!(
        e.code != 0
            && e.stderr
                .contains("has no branch records (its branch stack was empty)"),
        "{}",
        e.stderr
    );
}

#[test]
fn corrupted_branch_stack_imports_what_it_can() {
    // Patch the nr of one sample's branch stack in a copy of the Zen 4 file to a huge value.
    let src = std::fs::read(fixtures().join("zen4_lbrextv2_16deep.perf.data")).unwrap();
    let tmp = tempdir();
    let bad = tmp.path().join("bad.perf.data");
    let mut data = src.clone();
    // The first branch stack with nr = 16 after the data section starts: the little-endian
    // u64 16 followed by a kernel-looking FROM (0xffff...) of the first entry.
    let at = (0..data.len() - 16)
        .find(|&i| data[i..i + 8] == 16u64.to_le_bytes() && data[i + 14..i + 16] == [0xff, 0xff])
        .expect("a branch stack header");
    data[at..at + 8].copy_from_slice(&0x4000_0000_0000u64.to_le_bytes());
    std::fs::write(&bad, &data).unwrap();
    let r = tmp.path().join("r");
    let run = kairos(&[
        "import",
        "-q",
        bad.to_str().unwrap(),
        "-r",
        r.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("damaged") && run.stderr.contains("offset"),
        "{}",
        run.stderr
    );
    let manifest = std::fs::read_to_string(r.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("branch_stack"),
        "the note names where it broke: {manifest}"
    );
    let p = kairos_result::read_profile(&kairos_result::ResultDir::open(&r).unwrap()).unwrap();
    assert!(p.samples.len() < 8);
}

#[test]
fn branch_records_on_without_lbr_fails_with_a_sentence() {
    let info = kairos(&["info", "--format", "json"]).ok().stdout;
    let has_lbr = info.contains("\"lbr\"") && info.contains("branch-stack sampling with");
    if has_lbr {
        eprintln!("this machine has LBR; the refusal cannot be tested here");
        return;
    }
    let tmp = tempdir();
    let r = tmp.path().join("on");
    let e = kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        r.to_str().unwrap(),
        "-k",
        "branch-records=on",
        "--",
        "/bin/true",
    ]);
    assert_ne!(e.code, 0);
    assert!(
        e.stderr.contains("branch records (LBR) cannot be recorded")
            && e.stderr.contains("branch-records=off")
            && e.stderr.contains("kairos lab emulate-lbr"),
        "{}",
        e.stderr
    );
    assert!(!r.exists(), "no empty result left behind");
    let r = tmp.path().join("auto");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        r.to_str().unwrap(),
        "--",
        "/bin/true",
    ])
    .ok();
    let manifest = std::fs::read_to_string(r.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("branch records: not recorded: this machine has no usable LBR"),
        "{manifest}"
    );
    let rep = kairos(&["report", "summary", "-r", r.to_str().unwrap()]).ok();
    assert!(
        rep.stdout.contains("branch records: not recorded"),
        "{}",
        rep.stdout
    );
    let e = kairos(&[
        "report",
        "branches",
        "-r",
        r.to_str().unwrap(),
        "--sample",
        "0",
    ]);
    assert!(
        e.code != 0 && e.stderr.contains("has no branch records"),
        "{}",
        e.stderr
    );
}
