//! The C sample programs (samples/*.c) are built by crates/cli/build.rs into
//! `<target>/<profile>/samples/`, next to the `kairos` binary. Run each briefly and
//! check what it prints.
#![allow(clippy::unwrap_used, clippy::panic)] // helpers of tests: a failure is the point

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sample(name: &str) -> PathBuf {
    let kairos = Path::new(env!("CARGO_BIN_EXE_kairos"));
    let dir = kairos
        .parent()
        .map(|d| d.join("samples"))
        .unwrap_or_else(|| PathBuf::from("samples"));
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "sample program {} was not built (crates/cli/build.rs builds samples/*.c with cc; \
         was KAIROS_SKIP_SAMPLES set?)",
        path.display()
    );
    path
}

fn run(name: &str, args: &[&str]) -> (Output, String) {
    let out = Command::new(sample(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run sample {name}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, stdout)
}

fn assert_ok(name: &str, out: &Output, stdout: &str) {
    assert!(
        out.status.success(),
        "{name} exited with {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The first whitespace-separated token after `key` on the first line containing `key`.
fn value_after<'a>(stdout: &'a str, key: &str) -> Option<&'a str> {
    stdout
        .lines()
        .find_map(|l| l.find(key).map(|i| &l[i + key.len()..]))
        .and_then(|rest| rest.split_whitespace().next())
}

#[test]
fn matrix_both_variants_agree() {
    let (out, stdout) = run("matrix", &["96", "both"]);
    assert_ok("matrix", &out, &stdout);
    assert!(stdout.contains("NUM 96 variant both"), "{stdout}");
    assert!(stdout.contains("matrix: init "), "{stdout}");
    let checksum = |key: &str| -> Option<f64> {
        stdout
            .lines()
            .find(|l| l.contains(key))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    };
    let c1 = checksum("naive (i,j,k) ");
    let c2 = checksum("interchange (i,k,j) ");
    assert!(
        c1.is_some() && c1 == c2,
        "checksums {c1:?} {c2:?}\n{stdout}"
    );
    assert!(stdout.contains("checksums match"), "{stdout}");
}

#[test]
fn matrix_single_variant_and_bad_arguments() {
    let (out, stdout) = run("matrix", &["32", "naive"]);
    assert_ok("matrix", &out, &stdout);
    assert!(stdout.contains("naive (i,j,k)"), "{stdout}");
    assert!(!stdout.contains("interchange (i,k,j)"), "{stdout}");

    let (out, stdout) = run("matrix", &["32", "interchange"]);
    assert_ok("matrix", &out, &stdout);
    assert!(stdout.contains("interchange (i,k,j)"), "{stdout}");
    assert!(!stdout.contains("naive (i,j,k)"), "{stdout}");

    let (out, _) = run("matrix", &["32", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
    let (out, _) = run("matrix", &["lots"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn transitions_shares_follow_10_30_10() {
    // The program times itself by the wall clock, so a run preempted by other tests (2
    // CPUs, many test binaries) can skew the shares: the property must hold in one of
    // a few runs, and every run must still print well-formed output.
    let mut last = String::new();
    for _ in 0..4 {
        let (out, stdout) = run("transitions", &["300"]);
        assert_ok("transitions", &out, &stdout);
        assert!(stdout.contains("ITER 300"), "{stdout}");
        assert!(stdout.contains("p3_A->p3_f1->p3_f2->(p3_B"), "{stdout}");
        assert!(stdout.contains("elapsed "), "{stdout}");
        let share = |f: &str| -> f64 {
            stdout
                .lines()
                .find(|l| l.contains(&format!("{f} share of run")))
                .and_then(|l| value_after(l, "of F1+F2+F3 "))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no share for {f}:\n{stdout}"))
        };
        let (s1, s2, s3) = (share("F1"), share("F2"), share("F3"));
        assert!((s1 + s2 + s3 - 1.0).abs() < 0.01, "{stdout}");
        // Expected 0.2 / 0.6 / 0.2.
        if (0.15..0.25).contains(&s1) && (0.52..0.68).contains(&s2) && (0.15..0.25).contains(&s3) {
            return;
        }
        last = stdout;
    }
    panic!("F1:F2:F3 never came out near 0.2:0.6:0.2 in 4 runs; last run:\n{last}");
}

#[test]
fn spikes_writes_true_delays() {
    let file = std::env::temp_dir().join(format!("kairos-spikes-test-{}.txt", std::process::id()));
    let file_s = file.to_string_lossy().into_owned();
    let (out, stdout) = run("spikes", &[&file_s, "0.6", "7"]);
    let text = std::fs::read_to_string(&file);
    let _ = std::fs::remove_file(&file);
    assert_ok("spikes", &out, &stdout);
    let text = text.unwrap_or_else(|e| panic!("spikes did not write {file_s}: {e}"));

    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    assert!(
        header.starts_with('#') && header.contains("start_ns end_ns"),
        "{header}"
    );
    let mut delays = Vec::new();
    for l in lines {
        let v: Vec<u64> = l
            .split_whitespace()
            .map(|t| t.parse().unwrap_or_else(|_| panic!("bad line {l:?}")))
            .collect();
        assert_eq!(v.len(), 2, "bad line {l:?}");
        assert!(v[0] < v[1], "end before start: {l:?}");
        delays.push((v[0], v[1]));
    }
    let printed: usize = value_after(&stdout, "spikes: delays ")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no delay count:\n{stdout}"));
    assert_eq!(printed, delays.len(), "{stdout}");
    // A few per 100 ms over 0.6 s: about 24 expected.
    assert!(
        (3..=120).contains(&delays.len()),
        "{} delays\n{stdout}",
        delays.len()
    );
    for w in delays.windows(2) {
        assert!(w[0].1 <= w[1].0, "delays overlap or are unordered: {w:?}");
    }
    let mut over = 0;
    for &(s, e) in &delays {
        let d = e - s;
        assert!(d >= 50_000, "delay of {d} ns is shorter than 50 us");
        if d > 200_000 {
            over += 1;
        }
    }
    // The program spins to a deadline of at most 195 us; only a preemption during the
    // spin can stretch a delay beyond 200 us.
    assert!(
        over * 10 <= delays.len(),
        "{over} of {} delays above 200 us",
        delays.len()
    );
    assert!(stdout.contains("service units"), "{stdout}");
}

#[test]
fn spikes_without_outfile_is_a_usage_error() {
    let (out, _) = run("spikes", &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn triad_runs_reports_placement_and_rejects_bad_arguments() {
    // Placement by node is tested on the multi-node machine (crates/testvm); here every
    // page is on the machine's nodes and none is missing.
    for init in ["serial", "parallel"] {
        let (out, stdout) = run(
            "triad",
            &[
                "--size",
                "4M",
                "--threads",
                "2",
                "--iterations",
                "2",
                "--init",
                init,
                "--report-placement",
            ],
        );
        assert_ok("triad", &out, &stdout);
        assert!(
            stdout.contains(&format!("threads 2 iterations 2 init {init}")),
            "{stdout}"
        );
        assert!(stdout.contains("triad: thread 1 tid "), "{stdout}");
        assert!(stdout.contains("triad: check ok"), "{stdout}");
        assert_eq!(
            stdout.contains("triad: init_tid "),
            init == "serial",
            "{stdout}"
        );
        for array in ["a", "b", "c"] {
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&format!("triad: placement {array} ")))
                .unwrap_or_else(|| panic!("no placement of {array}\n{stdout}"));
            let counts: Vec<u64> = line
                .split_whitespace()
                .skip(4)
                .step_by(2)
                .filter_map(|v| v.parse().ok())
                .collect();
            let (absent, nodes) = counts.split_last().unwrap_or_else(|| panic!("{line}"));
            assert_eq!(*absent, 0, "{line}");
            assert!(
                nodes.iter().sum::<u64>() >= 1024,
                "4 MiB is at least 1024 pages: {line}"
            );
        }
    }
    for bad in [
        &["--init", "random"][..],
        &["--size", "0"],
        &["--threads", "0"],
        &["--iterations"],
    ] {
        let (out, _) = run("triad", bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}
