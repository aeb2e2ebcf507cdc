//! Shared by the watchpoint tests: builds and drives tests/watch_target.c.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// Timing-sensitive tests of one binary take turns: the machine has two cores.
pub static SERIAL: Mutex<()> = Mutex::new(());

/// The target, compiled once per test binary with `cc`.
pub fn target_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // Under the build's directory for test files, one per test binary (several
        // may build it at once), rebuilt by each run: nothing piles up in /tmp.
        let exe = std::env::current_exe().unwrap();
        let stem = exe.file_stem().unwrap().to_string_lossy().into_owned();
        // "watch_duty-<hash>": the test's name, the same from one build to the next.
        let name = stem
            .rsplit_once('-')
            .map_or(stem.as_str(), |(n, _)| n)
            .to_string();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("watch-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/watch_target.c");
        let bin = dir.join("watch_target");
        let out = Command::new("cc")
            .args(["-O2", "-g", "-no-pie", "-pthread", "-o"])
            .arg(&bin)
            .arg(&src)
            .output()
            .expect("running cc");
        assert!(
            out.status.success(),
            "cc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        bin
    })
}

/// `nm` start and end of a function of the target.
pub fn function_range(name: &str) -> (u64, u64) {
    let out = Command::new("nm")
        .arg("-S")
        .arg(target_binary())
        .output()
        .expect("running nm");
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 && f[3] == name {
            let a = u64::from_str_radix(f[0], 16).unwrap();
            return (a, a + u64::from_str_radix(f[1], 16).unwrap());
        }
    }
    panic!("{name} not found by nm");
}

pub struct Target {
    pub child: Child,
    out: BufReader<ChildStdout>,
    pub slot0: u64,
    pub slot1: u64,
    pub heap: u64,
}

/// What the target printed at its end.
#[derive(Debug, Default)]
pub struct Outcome {
    pub tid: HashMap<String, i32>,
    /// `int1` instructions the main thread executed.
    pub int1: u64,
    pub iters: HashMap<String, u64>,
    pub cpu_ns: HashMap<String, u64>,
}

impl Outcome {
    /// CPU time per iteration of the writers, ns: what watching costs them.
    pub fn writer_ns_per_iter(&self) -> f64 {
        let cpu: u64 = ["w0", "w1"].iter().map(|n| self.cpu_ns[*n]).sum();
        let it: u64 = ["w0", "w1"].iter().map(|n| self.iters[*n]).sum();
        cpu as f64 / it.max(1) as f64
    }
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

impl Target {
    /// Starts the target; it waits for [`Target::go`].
    pub fn start(mode: &str, when: &str, secs: f64) -> Target {
        Target::start_with(mode, when, secs, &[])
    }

    /// [`Target::start`] with the target's optional arguments (INT1S).
    pub fn start_with(mode: &str, when: &str, secs: f64, extra: &[&str]) -> Target {
        let mut child = Command::new(target_binary())
            .args([mode, when, &secs.to_string()])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        let f: Vec<&str> = first.split_whitespace().collect();
        assert_eq!(f.first(), Some(&"addr"), "{first}");
        Target {
            child,
            out,
            slot0: hex(f[1]),
            slot1: hex(f[2]),
            heap: hex(f[3]),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn go(&mut self) {
        self.child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(b"go\n")
            .unwrap();
        self.child.stdin.as_mut().unwrap().flush().unwrap();
    }

    pub fn finish(mut self) -> Outcome {
        let mut rest = String::new();
        self.out.read_to_string(&mut rest).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "target failed: {status}");
        let mut o = Outcome::default();
        for line in rest.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["tid", name, v] => {
                    o.tid.insert(name.to_string(), v.parse().unwrap());
                }
                ["iters", name, v] => {
                    o.iters.insert(name.to_string(), v.parse().unwrap());
                }
                ["int1", "main", v] => o.int1 = v.parse().unwrap(),
                ["cpu", name, v] => {
                    o.cpu_ns.insert(name.to_string(), v.parse().unwrap());
                }
                _ => {}
            }
        }
        o
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
