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
/// In that section: the one process whose requests count, when every process was recorded.
pub const ONLY_PID: &str = "only_pid";

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
    /// A flight recorder's counts over every window; `requests` then holds the kept
    /// windows' requests only.
    #[serde(default)]
    pub aggregate: Option<Aggregate>,
}

/// Every request a flight recorder saw, counted (its windows' details mostly dropped).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Aggregate {
    pub requests: u64,
    pub slow: u64,
    /// Requests by duration, in buckets 2% wide (see [`Aggregate::bucket`]).
    pub buckets: std::collections::BTreeMap<u32, u64>,
    pub max_ns: u64,
    pub sum_ns: u64,
    pub windows: Vec<Window>,
    /// What was kept and the bound on it, in words.
    pub bound: String,
}

/// One window of a flight recorder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Its result directory, relative to the flight's, while kept.
    pub dir: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub requests: u64,
    pub slow: u64,
    /// Why it was kept or dropped.
    pub why: String,
}

impl Aggregate {
    const GROWTH: f64 = 1.02;

    /// The bucket of a duration: bucket i holds [1 us x 1.02^i, 1 us x 1.02^(i+1)), bucket
    /// 0 also everything shorter.
    pub fn bucket(ns: u64) -> u32 {
        if ns <= 1000 {
            return 0;
        }
        ((ns as f64 / 1000.0).ln() / Self::GROWTH.ln())
            .floor()
            .clamp(0.0, 4000.0) as u32
    }

    /// The shortest duration of bucket `i`.
    pub fn lower(i: u32) -> u64 {
        (1000.0 * Self::GROWTH.powi(i as i32)).round() as u64
    }

    pub fn add(&mut self, durations: impl Iterator<Item = u64>) {
        for d in durations {
            self.requests += 1;
            *self.buckets.entry(Self::bucket(d)).or_default() += 1;
            self.max_ns = self.max_ns.max(d);
            self.sum_ns = self.sum_ns.saturating_add(d);
        }
    }

    /// The duration at percentile `p` (nearest rank), within 2%: the top of its bucket.
    pub fn percentile(&self, p: f64) -> u64 {
        let rank = crate::threshold::rank(p, self.requests);
        let mut seen = 0;
        for (&i, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return Self::lower(i + 1).min(self.max_ns);
            }
        }
        self.max_ns
    }
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

    /// Durations of the requests kept in detail, sorted.
    pub fn sorted_durations(&self) -> Vec<u64> {
        let mut d: Vec<u64> = self.requests.iter().map(|r| r.duration_ns).collect();
        d.sort_unstable();
        d
    }

    /// The requests seen (a flight recorder's, every window's).
    pub fn count(&self) -> u64 {
        self.aggregate
            .as_ref()
            .map_or(self.requests.len() as u64, |a| a.requests)
    }

    /// The duration at percentile `p` of every request seen.
    pub fn percentile(&self, p: f64) -> u64 {
        match &self.aggregate {
            Some(a) => a.percentile(p),
            None => crate::threshold::percentile(&self.sorted_durations(), p),
        }
    }

    pub fn max_ns(&self) -> u64 {
        match &self.aggregate {
            Some(a) => a.max_ns,
            None => self
                .requests
                .iter()
                .map(|r| r.duration_ns)
                .max()
                .unwrap_or(0),
        }
    }

    pub fn mean_ns(&self) -> u64 {
        match &self.aggregate {
            Some(a) => a.sum_ns / a.requests.max(1),
            None => {
                self.requests.iter().map(|r| r.duration_ns).sum::<u64>()
                    / self.requests.len().max(1) as u64
            }
        }
    }

    /// Every request's duration, as (duration, count) in order: the kept requests', or a
    /// flight recorder's buckets (each at its shortest duration).
    pub fn durations(&self) -> Vec<(u64, u64)> {
        match &self.aggregate {
            Some(a) => a
                .buckets
                .iter()
                .map(|(&i, &n)| (Aggregate::lower(i), n))
                .collect(),
            None => self
                .sorted_durations()
                .into_iter()
                .map(|d| (d, 1))
                .collect(),
        }
    }
}
