//! `kairos export`, each format read by a reader Kairos did not write: `go tool pprof`,
//! speedscope's JSON schema (through Python's jsonschema), the Firefox Profiler's
//! processed-format tables and Chrome trace events walked in Python, and collapsed
//! stacks counted against `perf script` of the same perf.data. On an imported LBR
//! fixture (symbols from a perf map) and on a collected result of `transitions`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{fixtures, kairos, kairos_in, path_str, sample, tempdir};

const FORMATS: &[&str] = &["firefox", "chrome", "pprof", "collapsed", "speedscope"];

fn checker() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/export/check.py")
}

fn schema() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../export/tests/data/speedscope-file-format-schema.json")
}

/// Runs the Python reader on `file`; returns its JSON summary.
fn python_check(format: &str, file: &Path, extra: &[&Path]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(checker())
        .arg(format)
        .arg(file)
        .args(extra)
        .output()
        .expect("python3 is needed by the export tests (scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "{format} check of {} failed: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `go tool pprof -top` of `file`: (total, function names of the rows).
fn pprof_top(file: &Path) -> (String, Vec<String>) {
    let out = match Command::new("go").args(["tool", "pprof", "-top"]).arg(file).output() {
        Ok(o) => o,
        Err(e) => panic!("the pprof export test needs Go (`go tool pprof`), which could not be run: {e}; install Go"),
    };
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go tool pprof failed: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    let total = text
        .lines()
        .find_map(|l| {
            l.split_once(" total")
                .and_then(|(a, _)| a.rsplit(' ').next().map(str::to_string))
        })
        .unwrap_or_default();
    let names = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(5).map(str::to_string))
        .collect();
    (total, names)
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// Exports `result` in every format and checks each with its reader; `expect` are
/// function names that must appear everywhere.
fn check_all(result: &Path, expect: &[&str]) {
    let dir = kairos_result::ResultDir::open(result).unwrap();
    let mut profile = kairos_result::read_profile(&dir).unwrap();
    // What weights count is kept in the manifest, as `kairos report` reads it.
    profile.weight_event = dir.manifest().weight_event.clone();
    let n = profile.samples.len() as u64;
    let weight: u64 = profile.samples.iter().map(|s| s.weight).sum();
    let tmp = tempdir();
    for f in FORMATS {
        let out = tmp.path().join(format!("out.{f}"));
        kairos(&[
            "export",
            "-r",
            path_str(result),
            "--format",
            f,
            "-o",
            path_str(&out),
        ])
        .ok();
        assert!(out.is_file(), "{f}: no file");
    }
    let file = |f: &str| tmp.path().join(format!("out.{f}"));
    let has_all = |what: &str, got: &[String]| {
        for e in expect {
            assert!(
                got.iter().any(|g| g == e),
                "{what}: {e} missing from {got:?}"
            );
        }
    };

    let (total, top) = pprof_top(&file("pprof"));
    has_all("pprof", &top);
    // pprof shows the default (weight) type's total; CPU time is printed with units.
    if profile.weight_event.is_some() {
        assert_eq!(total, weight.to_string(), "pprof total");
    } else {
        // A duration such as "466ms" or "1.20s": within 1% of our nanoseconds.
        let units = [
            ("ns", 1.0),
            ("us", 1e3),
            ("µs", 1e3),
            ("ms", 1e6),
            ("s", 1e9),
            ("mins", 60e9),
        ];
        let ns = units
            .iter()
            .find_map(|(u, k)| total.strip_suffix(u)?.parse::<f64>().ok().map(|v| v * k));
        let ns = ns.unwrap_or_else(|| panic!("pprof total '{total}' is not a duration"));
        assert!(
            (ns - weight as f64).abs() <= weight as f64 * 0.01,
            "pprof total {total} vs {weight} ns"
        );
    }

    let ss = python_check("speedscope", &file("speedscope"), &[&schema()]);
    assert_eq!(ss["samples"], n);
    assert_eq!(ss["weight"], weight);
    has_all("speedscope", &names(&ss));

    let ff = python_check("firefox", &file("firefox"), &[]);
    assert_eq!(ff["samples"], n);
    assert_eq!(
        ff["threads"].as_u64().unwrap(),
        profile
            .samples
            .iter()
            .map(|s| s.thread)
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u64
    );
    has_all("firefox", &names(&ff));

    let ch = python_check("chrome", &file("chrome"), &[]);
    assert!(ch["spans"].as_u64().unwrap() > 0);
    has_all("chrome", &names(&ch));

    let co = python_check(
        "collapsed",
        &file("collapsed"),
        &[&result.join("perf.data")],
    );
    assert_eq!(co["samples"], n);
    has_all("collapsed", &names(&co));

    // A time range selects fewer samples, and the speedscope total follows.
    let part = tmp.path().join("part.speedscope.gz");
    let span = profile
        .time_span()
        .map(|(a, b)| (b - a) as f64 / 1e9)
        .unwrap();
    kairos(&[
        "export",
        "-r",
        path_str(result),
        "--format",
        "speedscope",
        "-o",
        path_str(&part),
        "--time-range",
        &format!(":{}", span / 2.0),
    ])
    .ok();
    let ps = python_check("speedscope", &part, &[&schema()]);
    let first = profile.samples[0].time_ns;
    let want = profile
        .samples
        .iter()
        .filter(|s| s.time_ns - first < (span / 2.0 * 1e9) as u64)
        .count() as u64;
    assert_eq!(ps["samples"], want);
}

#[test]
fn lbr_fixture_import_exports_read_by_other_tools() {
    let fx = fixtures();
    let tmp = tempdir();
    let r = tmp.path().join("r");
    kairos_in(
        &fx,
        &[
            "import",
            "-q",
            "skylake-sp_any_32deep_cycles.perf.data",
            "-r",
            path_str(&r),
            "--perf-map-dir",
            ".",
        ],
    )
    .ok();
    check_all(&r, &["main", "compute_flag"]);
}

#[test]
fn collected_result_exports_read_by_other_tools() {
    let tmp = tempdir();
    let r = tmp.path().join("r");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&sample("transitions")),
        "600",
    ])
    .ok();
    check_all(&r, &["main"]);
}

#[test]
fn bad_input_gives_one_sentence() {
    let tmp = tempdir();
    let missing = tmp.path().join("nope");
    let out = tmp.path().join("x.json");
    let r = kairos(&[
        "export",
        "-r",
        path_str(&missing),
        "--format",
        "chrome",
        "-o",
        path_str(&out),
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("cannot open result") && r.stderr.lines().count() == 1,
        "{}",
        r.stderr
    );

    let r = kairos(&[
        "export",
        "-r",
        path_str(&missing),
        "--format",
        "svg",
        "-o",
        path_str(&out),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("unknown export format 'svg'") && r.stderr.contains("speedscope"),
        "{}",
        r.stderr
    );

    // A real result, but an output directory that does not exist.
    let fx = fixtures();
    let res = tmp.path().join("r");
    kairos_in(
        &fx,
        &[
            "import",
            "-q",
            "zen4_lbrextv2_16deep.perf.data",
            "-r",
            path_str(&res),
        ],
    )
    .ok();
    let bad = tmp.path().join("no/such/dir/out.pprof");
    let r = kairos(&[
        "export",
        "-r",
        path_str(&res),
        "--format",
        "pprof",
        "-o",
        path_str(&bad),
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("cannot write")
            && r.stderr.contains("-o")
            && r.stderr.lines().count() == 1,
        "{}",
        r.stderr
    );
    assert!(!bad.exists());
}
