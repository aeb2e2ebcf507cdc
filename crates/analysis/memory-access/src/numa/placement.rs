//! While the collection runs: the target's page placement is queried again and again
//! ([`query::snapshot`]) and each answer merged into one [`RunMap`] per process, so that the
//! placement at the end is the last one seen of every page, pages freed before the program
//! ended included. A process cannot be held at its exit without ptrace (which would take
//! the launched child's wait status from the collector), so the interval adapts instead:
//! 10 times the last query's cost, within 100 ms to 1 s; pages touched after the last query
//! are placed by their first touch, and the report says so.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::query::{self, ProcessReader, QueryError, Vma};
use super::runs::RunMap;

/// Pages asked per process and query: 16 GiB of 4 KiB pages; beyond it every k-th page.
const MAX_PAGES: u64 = 1 << 22;
const MIN_INTERVAL: Duration = Duration::from_millis(100);
const MAX_INTERVAL: Duration = Duration::from_secs(1);
const COST_FACTOR: u32 = 10;
const STEP: Duration = Duration::from_millis(10);
/// Query totals kept for the page's placement-over-time chart.
const MAX_SNAPSHOTS: usize = 512;

/// One query of all the target's processes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// CLOCK_MONOTONIC ns when it started.
    pub time_ns: u64,
    pub by_node: BTreeMap<u32, u64>,
    pub cost_ns: u64,
}

/// Everything the queries found.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub runs: BTreeMap<u32, RunMap>,
    /// Every data mapping seen, by (pid, start): the latest answer for each.
    pub vmas: BTreeMap<(u32, u64), Vma>,
    pub snapshots: Vec<SnapshotInfo>,
    /// Largest stride used (1: every page asked).
    pub stride: u64,
    pub notes: Vec<String>,
    /// Why no page was ever placed by a query, when none was.
    pub missing: Option<String>,
}

impl Placement {
    /// The node of the page holding `addr` of `pid`, as last seen.
    pub fn node(&self, pid: u32, addr: u64) -> Option<u32> {
        self.runs.get(&pid)?.get(addr).map(|r| r.node)
    }

    fn note(&mut self, s: String) {
        if !self.notes.contains(&s) {
            self.notes.push(s);
        }
    }

    /// Merges one process's answer, seen at `seen_ns`.
    pub fn merge(&mut self, pid: u32, s: query::Snapshot, seen_ns: u64) {
        let map = self.runs.entry(pid).or_default();
        for (start, end, node) in s.runs {
            map.insert(start, end, node, seen_ns);
        }
        for v in s.vmas {
            self.vmas.insert((v.pid, v.start), v);
        }
        self.stride = self.stride.max(s.stride);
        for n in s.notes {
            self.note(n);
        }
    }
}

/// Whose pages to query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    /// The program the collector launches (a child of this process, once it has exec'd).
    Launched,
    Pid(i32),
}

/// The querying thread of one collection.
pub(crate) struct Watching {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Placement>,
}

pub(crate) fn start(who: Who, reader: Box<dyn ProcessReader>) -> Watching {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = std::thread::spawn(move || run(who, reader.as_ref(), &flag));
    Watching { stop, handle }
}

impl Watching {
    /// Stops after one last query (an attached process is still there) and returns it all.
    pub fn finish(self) -> Placement {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_else(|_| Placement {
            missing: Some("the placement thread failed".into()),
            ..Placement::default()
        })
    }
}

fn run(who: Who, reader: &dyn ProcessReader, stop: &AtomicBool) -> Placement {
    let mut p = Placement {
        stride: 1,
        ..Placement::default()
    };
    let mut targets: BTreeSet<i32> = BTreeSet::new();
    let mut done: BTreeSet<i32> = BTreeSet::new();
    let ours = std::process::id() as i32;
    let mut next = Instant::now();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        if !stopping && Instant::now() < next {
            std::thread::sleep(STEP.min(next - Instant::now()));
            continue;
        }
        let mut parents: Vec<i32> = targets.iter().copied().collect();
        match who {
            Who::Launched => parents.push(ours),
            Who::Pid(pid) => {
                targets.insert(pid);
            }
        }
        targets.extend(
            children_of(&parents)
                .into_iter()
                .filter(|&c| has_exec_d(c, ours)),
        );
        let t0 = Instant::now();
        let seen = kairos_collector::monotonic_ns();
        let mut info = SnapshotInfo {
            time_ns: seen,
            ..SnapshotInfo::default()
        };
        let mut answered = false;
        let live: Vec<i32> = targets
            .iter()
            .filter(|p| !done.contains(p))
            .copied()
            .collect();
        for pid in live {
            match query::snapshot(reader, pid, MAX_PAGES) {
                Ok(s) => {
                    for (n, c) in &s.by_node {
                        *info.by_node.entry(*n).or_default() += c;
                    }
                    p.merge(pid as u32, s, seen);
                    answered = true;
                }
                Err(QueryError::Gone) => {
                    done.insert(pid);
                }
                Err(QueryError::Refused(why)) => {
                    p.note(why);
                    done.insert(pid);
                }
                Err(QueryError::NoSyscall(why)) => {
                    p.missing = Some(why);
                    return p;
                }
            }
        }
        let cost = t0.elapsed();
        if answered {
            info.cost_ns = cost.as_nanos() as u64;
            push_snapshot(&mut p.snapshots, info);
        }
        if stopping {
            break;
        }
        next = t0 + (cost * COST_FACTOR).clamp(MIN_INTERVAL, MAX_INTERVAL);
    }
    if p.runs.is_empty() && p.missing.is_none() {
        p.missing = Some(match p.notes.first() {
            Some(n) => n.clone(),
            None => "the program ended before its pages could be queried".into(),
        });
    }
    p
}

/// Keeps at most [`MAX_SNAPSHOTS`]: when full, every other one goes (the chart keeps its shape).
fn push_snapshot(v: &mut Vec<SnapshotInfo>, s: SnapshotInfo) {
    if v.len() >= MAX_SNAPSHOTS {
        let mut i = 0;
        v.retain(|_| {
            i += 1;
            i % 2 == 1
        });
    }
    v.push(s);
}

/// Processes whose parent is one of `parents` (from /proc/PID/stat, field 4).
fn children_of(parents: &[i32]) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| ppid(&s))
                .is_some_and(|pp| parents.contains(&pp))
        })
        .collect()
}

/// The parent pid in a stat line; the command name may hold spaces and parentheses.
fn ppid(stat: &str) -> Option<i32> {
    stat.get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Whether `pid` runs another program than ours: the launched child exists, blocked, as a
/// copy of kairos until the events are open, and those pages are not the target's.
fn has_exec_d(pid: i32, ours: i32) -> bool {
    match (
        std::fs::read_link(format!("/proc/{pid}/exe")),
        std::fs::read_link(format!("/proc/{ours}/exe")),
    ) {
        (Ok(a), Ok(b)) => a != b,
        // Unreadable: not ours to judge; the query will say why it is refused.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_the_parent() {
        assert_eq!(ppid("123 (a) b) S 45 123 123 0"), Some(45));
        assert_eq!(ppid("123 (x) R 1 1"), Some(1));
        assert_eq!(ppid("garbage"), None);
    }

    #[test]
    fn snapshots_are_thinned_not_dropped_at_the_end() {
        let mut v = Vec::new();
        for t in 0..(MAX_SNAPSHOTS as u64 + 10) {
            push_snapshot(
                &mut v,
                SnapshotInfo {
                    time_ns: t,
                    ..SnapshotInfo::default()
                },
            );
        }
        assert!(v.len() <= MAX_SNAPSHOTS);
        assert_eq!(v.last().map(|s| s.time_ns), Some(MAX_SNAPSHOTS as u64 + 9));
        assert_eq!(v.first().map(|s| s.time_ns), Some(0));
    }

    /// A kernel without move_pages(2): /proc answers, the system call does not.
    struct NoMovePages;

    impl ProcessReader for NoMovePages {
        fn read(&self, pid: i32, file: &str) -> std::io::Result<String> {
            query::Live.read(pid, file)
        }
        fn nodes_of(&self, _: i32, _: &[u64], _: &mut [i32]) -> Result<(), i32> {
            Err(libc::ENOSYS)
        }
    }

    #[test]
    fn a_kernel_without_move_pages_is_said_once_and_nothing_else_fails() {
        let stop = AtomicBool::new(true);
        let p = run(Who::Pid(std::process::id() as i32), &NoMovePages, &stop);
        let why = p.missing.unwrap_or_default();
        assert!(
            why.contains("ENOSYS") && why.contains("CONFIG_NUMA"),
            "{why}"
        );
        assert!(p.runs.is_empty() && p.snapshots.is_empty());
    }

    #[test]
    fn an_attached_process_is_queried_until_the_end() {
        // This test's own process stands for the target: its pages are there to query.
        let buf = vec![3u8; 256 << 10];
        let w = start(Who::Pid(std::process::id() as i32), Box::new(query::Live));
        std::thread::sleep(Duration::from_millis(250));
        let p = w.finish();
        if p.missing.as_deref().is_some_and(|m| m.contains("ENOSYS")) {
            return;
        }
        assert!(
            p.snapshots.len() >= 2,
            "a query at once, and one more at the end: {:?}",
            p.snapshots.len()
        );
        let addr = buf.as_ptr() as u64;
        assert!(
            p.node(std::process::id(), addr).is_some(),
            "the buffer's pages are placed"
        );
        assert!(p.missing.is_none(), "{:?}", p.missing);
    }
}
