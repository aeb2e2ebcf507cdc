//! The cache-allocation recipe's workflow (scripts/cache-recipe.sh) with the samples
//! rt_loop and cache_thrash: the steps this machine can run are measured, the others say
//! why not and are left out of the comparison.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{kairos_bin, sample, tempdir};

#[test]
fn rt_loop_prints_each_iteration_and_a_summary() {
    let out = Command::new(sample("rt_loop"))
        .args(["--iterations", "12", "--period-ms", "2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("rt_loop: iter "))
            .count(),
        12,
        "{text}"
    );
    assert!(
        text.contains("rt_loop: buffer 131072 bytes source malloc"),
        "{text}"
    );
    let sum = text
        .lines()
        .find(|l| l.starts_with("rt_loop: iterations 12 "))
        .unwrap_or_else(|| panic!("{text}"));
    let f: Vec<u64> = sum
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    // iterations, min, median, p99, max, mean: ordered and non-zero.
    assert!(
        f.len() == 6 && f[1] > 0 && f[1] <= f[2] && f[2] <= f[3] && f[3] <= f[4],
        "{sum}"
    );
    let bad = Command::new(sample("rt_loop"))
        .args(["--size", "100"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let t = Command::new(sample("cache_thrash"))
        .args(["--seconds", "0.2", "--size", "8388608"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&t.stdout);
    assert!(
        t.status.success() && text.starts_with("cache_thrash: passes "),
        "{text}"
    );
}

#[test]
fn the_workflow_measures_what_it_can_and_says_what_not() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cache-recipe.sh");
    let dir = tempdir();
    let out = Command::new("sh")
        .arg(&script)
        .args(["--iterations", "40", "--out"])
        .arg(dir.path())
        .env("KAIROS", kairos_bin())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{text}"))
            .to_string()
    };
    // Steps 1 and 2 run anywhere: real numbers and a ratio against step 1.
    for name in ["1-alone", "2-neighbour"] {
        let nums: Vec<f64> = row(name)
            .split_whitespace()
            .skip(1)
            .filter_map(|w| w.trim_end_matches('x').parse().ok())
            .collect();
        assert!(nums.len() == 5 && nums[0] > 0.0, "{name}: {}", row(name));
    }
    assert!(
        row("1-alone").ends_with("1.00x          1.00x"),
        "{}",
        row("1-alone")
    );
    assert!(Path::new(&dir.path().join("2-neighbour.txt")).is_file());
    if !Path::new("/sys/fs/resctrl/info").is_dir() {
        assert!(text.contains("step 3 not measured here: kairos: cannot give the program cache ways: resctrl is not available here"), "{text}");
        assert!(
            row("3-ways").contains("not measured here")
                && row("4-locked").contains("not measured here"),
            "{text}"
        );
    }
}
