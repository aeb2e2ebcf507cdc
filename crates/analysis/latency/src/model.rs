//! What a latency result holds (`latency.json` in the result directory): every request
//! with its time split by cause and the details behind each part, the threshold of slow,
//! and what could not be paired. Reports and the page read only this file.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file in the result directory.
pub const FILE: &str = "latency.json";
/// The manifest section of a latency result (the boundaries, the tracepoint fields read,
/// the clock offset of a log).
pub const MANIFEST_KEY: &str = "latency";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyResult {
    /// Where the boundaries came from, in words.
    pub source: String,
    /// The `slower-than` knob as given, the threshold it gives and how it was chosen.
    pub slower_than: String,
    pub threshold_ns: u64,
    pub threshold_how: String,
    /// The cpu-clock sampling period.
    pub sample_period_ns: u64,
    /// Time of the first record (CLOCK_MONOTONIC); request starts are absolute.
    pub first_ns: u64,
    pub last_ns: u64,
    pub requests: Vec<Request>,
    /// Requests that began and never ended, and why.
    pub unfinished: Vec<Unfinished>,
    /// Ends with no begin on their thread (the collection started inside a request).
    pub ends_without_begin: u64,
    /// Boundary records lost (ring full, marker reader behind).
    pub lost_boundaries: u64,
    /// Records the kernel dropped (switches, samples): accounting may be incomplete.
    pub lost_records: u64,
    /// Names of the functions, indexed from requests.
    pub functions: Vec<String>,
    /// What the reader should know about how this was measured.
    pub notes: Vec<String>,
}

/// One request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    /// The thread (0 when the boundaries did not say).
    pub tid: u32,
    pub thread_name: String,
    pub start_ns: u64,
    pub duration_ns: u64,
    pub slow: bool,
    pub parts: Parts,
    /// cpu-clock samples of the thread inside the request.
    pub samples: u32,
    /// Sampled time by function (inclusive: every function on the sampled stacks),
    /// function index and ns, largest first.
    pub functions: Vec<(u32, u64)>,
    /// Completed page faults.
    pub faults: u32,
    pub fault_sites: Vec<Site>,
    pub syscalls: Vec<Site>,
    pub waits: Vec<Wait>,
    pub preemptions: Vec<Preemption>,
    /// The main cause: its part and the sentence.
    pub cause_kind: String,
    pub cause: String,
}

/// A request's time split by cause; the parts add up to its duration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parts {
    /// On the CPU, outside page faults, system calls and interrupts.
    pub cpu_ns: u64,
    pub fault_ns: u64,
    /// In system calls, on the CPU (their blocked time is in `blocked_ns`).
    pub syscall_ns: u64,
    pub irq_ns: u64,
    /// Switched out, waiting for something.
    pub blocked_ns: u64,
    /// Switched out while runnable: another thread ran on its CPU.
    pub runnable_ns: u64,
    /// Not accounted for by the records (lost records, a switch-in never seen).
    pub unexplained_ns: u64,
}

impl Parts {
    pub const NAMES: [&'static str; 7] = [
        "on CPU",
        "page faults",
        "system calls",
        "interrupts",
        "blocked",
        "runnable, not running",
        "not explained",
    ];
    /// Keys, as in CSV and JSON.
    pub const KEYS: [&'static str; 7] = [
        "cpu",
        "faults",
        "syscalls",
        "interrupts",
        "blocked",
        "runnable",
        "unexplained",
    ];

    pub fn values(&self) -> [u64; 7] {
        [
            self.cpu_ns,
            self.fault_ns,
            self.syscall_ns,
            self.irq_ns,
            self.blocked_ns,
            self.runnable_ns,
            self.unexplained_ns,
        ]
    }
}

/// Where faults or system calls of a request happened: a function or system call name,
/// how many and how long.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    pub name: String,
    pub count: u32,
    pub ns: u64,
}

/// A time the request's thread was blocked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    pub ns: u64,
    /// The call it blocked in (the innermost function of the blocking stack) and the
    /// program's function that called into it.
    pub call: String,
    pub caller: String,
    /// The system call it was in, when known.
    pub syscall: String,
    /// The thread that woke it (0: not seen, e.g. an interrupt or another process).
    pub waker_tid: u32,
    pub waker_name: String,
    /// What the waker ran while the request waited, from its own samples.
    pub waker_function: String,
    /// The waker's call that woke it (e.g. pthread_mutex_unlock).
    pub waker_call: String,
}

/// A time the thread was runnable while another ran on its CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemption {
    pub ns: u64,
    pub by_tid: u32,
    pub by_name: String,
    /// What that thread ran meanwhile (from its samples, when it was sampled).
    pub by_function: String,
}

/// A request that never ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unfinished {
    pub id: u64,
    pub tid: u32,
    pub start_ns: u64,
    pub why: String,
}

impl LatencyResult {
    /// Reads `latency.json` of a result; None when there is none.
    pub fn load(dir: &Path) -> Option<Result<LatencyResult, String>> {
        let path = dir.join(FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return Some(Err(format!("{}: {e}", path.display()))),
        };
        Some(serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display())))
    }

    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(FILE);
        let tmp = dir.join(format!("{FILE}.tmp"));
        std::fs::write(
            &tmp,
            serde_json::to_vec(self).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(tmp, path)
    }

    pub fn function(&self, i: u32) -> &str {
        self.functions.get(i as usize).map_or("?", String::as_str)
    }

    /// Durations of the requests, sorted.
    pub fn sorted_durations(&self) -> Vec<u64> {
        let mut d: Vec<u64> = self.requests.iter().map(|r| r.duration_ns).collect();
        d.sort_unstable();
        d
    }
}
