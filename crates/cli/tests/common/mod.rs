//! Shared helpers of the end-to-end tests: run the real `kairos` binary, find the sample
//! programs and the LBR fixtures.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

pub mod json_report;
pub mod shares;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn kairos_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kairos"))
}

pub fn sample(name: &str) -> PathBuf {
    let p = kairos_bin().parent().unwrap().join("samples").join(name);
    assert!(p.is_file(), "sample program {} was not built", p.display());
    p
}

/// The real branch-stack recordings: `KAIROS_FIXTURES`, else `<repo>/../shared/fixtures/lbr`.
pub fn fixtures() -> PathBuf {
    let dir = std::env::var_os("KAIROS_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/lbr")
        });
    assert!(
        dir.is_dir(),
        "LBR fixtures not found at {}; set KAIROS_FIXTURES",
        dir.display()
    );
    dir
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "kairos failed\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

fn finish(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs kairos with `args` in directory `cwd`.
pub fn kairos_in(cwd: &Path, args: &[&str]) -> Run {
    finish(
        Command::new(kairos_bin())
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap(),
    )
}

pub fn kairos(args: &[&str]) -> Run {
    kairos_in(&std::env::temp_dir(), args)
}

/// `kairos ARGS` with these environment variables added.
pub fn kairos_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    finish(
        Command::new(kairos_bin())
            .args(args)
            .envs(env.iter().copied())
            .current_dir(std::env::temp_dir())
            .output()
            .unwrap(),
    )
}

/// A process the test started (a server, a service), killed when dropped.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A TCP port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `s` with every run of blanks and line breaks as one space: text reports wrap their
/// sentences to the line width, so a sentence is looked for in the words of a report.
pub fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("kairos-test-")
        .tempdir()
        .unwrap()
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Holds the CPUs for one timing-sensitive collection: the tests of a file run in
/// parallel, and on a two-CPU machine two multi-threaded programs take turns on the CPUs,
/// which changes what they do (a false-sharing thread that runs alone never waits on its
/// store, so timer samples never land on it). Hold the guard while collecting.
pub fn cpu_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One busy `transitions` per CPU, so that every CPU has samples; killed when dropped.
pub struct BusyCpus(pub Vec<std::process::Child>);

impl BusyCpus {
    pub fn start() -> BusyCpus {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        BusyCpus(
            (0..cpus)
                .map(|_| {
                    std::process::Command::new(sample("transitions"))
                        .arg("1000000")
                        .stdout(std::process::Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for BusyCpus {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
