// Shared by the integration tests (each test file includes it with `mod common;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a test writes its recording: under the build's own directory for test files
/// (each run overwrites the last, so nothing piles up in the system's temp directory).
/// Names are unique across the test files.
pub fn out_path(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("collector-tests");
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(format!("{name}.perf.data"))
}

/// Runs `perf script -i FILE`, asserts it succeeds, returns its output.
pub fn perf_script(file: &Path) -> String {
    let out = Command::new("perf")
        .args(["script", "-i"])
        .arg(file)
        .output()
        .expect("running perf script (perf must be installed)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "perf script failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub const BUSY_SH: &str = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";
