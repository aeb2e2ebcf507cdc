//! The watch of a program's /proc while it runs: whether it really got huge pages (glibc
//! falls back to 4 KiB pages silently), and whether the pool lost pages to someone else;
//! then what went wrong, one sentence each.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kairos_analysis_hugepages::pool::{self, PoolCounts, PoolReading};

use super::pool::{meminfo, pool_now, proc_kb};
use super::Mode;

/// How often the program's /proc is read.
const EVERY: Duration = Duration::from_millis(50);

/// What the watch of a program's /proc saw.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Readings taken (every 50 ms while the program lived).
    pub samples: u64,
    pub hugetlb_peak_kb: u64,
    pub thp_peak_kb: u64,
    pub readings: Vec<PoolReading>,
}

/// One reading of `pid`'s huge pages (and the pool's, for [`pool::lost_to_others`]); false
/// once the process is gone.
fn read_once(pid: i32, seen: &mut Seen) -> bool {
    let page_kb = meminfo("Hugepagesize").unwrap_or(2048);
    // The pool first, the program second (see pool::lost_to_others).
    let pool_then = pool_now();
    let mapped = std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .ok()
        .and_then(|t| pool::smaps_huge(&t, page_kb));
    let (Some(h), t) = (
        proc_kb(&format!("/proc/{pid}/status"), "HugetlbPages"),
        proc_kb(&format!("/proc/{pid}/smaps_rollup"), "AnonHugePages"),
    ) else {
        return false;
    };
    seen.samples += 1;
    seen.hugetlb_peak_kb = seen.hugetlb_peak_kb.max(h);
    seen.thp_peak_kb = seen.thp_peak_kb.max(t.unwrap_or(0));
    // No mapping listed: the program is exiting; its pages are on their way back.
    if let (Some(pool), Some((mapped_kb, held_kb))) = (pool_then, mapped) {
        seen.readings.push(PoolReading {
            pool,
            mapped_kb,
            held_kb,
        });
    }
    true
}

/// A thread reading a started program's huge pages every 50 ms until it ends.
pub struct Watch {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new()
    }
}

impl Watch {
    pub fn new() -> Watch {
        Watch {
            seen: Arc::default(),
            stop: Arc::default(),
            thread: Mutex::new(None),
        }
    }

    /// Starts watching `pid` (the first call only).
    pub fn start(&self, pid: i32) {
        let Ok(mut slot) = self.thread.lock() else {
            return;
        };
        if slot.is_some() {
            return;
        }
        let (seen, stop) = (self.seen.clone(), self.stop.clone());
        *slot = std::thread::Builder::new()
            .name("kairos-hugepages".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let Ok(mut s) = seen.lock() else { break };
                    if !read_once(pid, &mut s) && s.samples > 0 {
                        break;
                    }
                    drop(s);
                    std::thread::sleep(EVERY);
                }
            })
            .ok();
    }

    /// Stops the thread and returns what it saw.
    pub fn finish(&self) -> Seen {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = h.join();
        }
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// What went wrong with the huge pages, one sentence each (none: they were used as asked).
/// `pid`: the program's, when known; `pool_before`: the pool when it started.
pub(crate) fn warnings(
    mode: Mode,
    pid: Option<i32>,
    seen: &Seen,
    pool_before: PoolCounts,
    elapsed_s: f64,
) -> Vec<String> {
    let pid = pid.map_or_else(|| "PID".to_string(), |p| p.to_string());
    let mut w = Vec::new();
    if mode == Mode::None {
        return w;
    }
    if seen.samples == 0 {
        w.push(format!(
            "the target exited after {:.0} ms, before Kairos could read /proc/{pid} once: whether it used huge pages is not verified",
            elapsed_s * 1e3
        ));
    } else if mode == Mode::Hugetlb && seen.hugetlb_peak_kb == 0 {
        w.push(format!(
            "huge pages were NOT used: /proc/{pid}/status never showed HugetlbPages (pool had {} free pages; \
             malloc uses them only for blocks of 2 MiB or more, and falls back to 4 KiB pages when the pool is short)",
            pool_before.free
        ));
    } else if mode == Mode::Thp && seen.thp_peak_kb == 0 {
        w.push(
            "transparent huge pages were NOT used: AnonHugePages stayed 0 (check /sys/kernel/mm/transparent_hugepage/enabled is not \
             'never'; malloc advises only blocks of 2 MiB or more)"
                .to_string(),
        );
    } else if mode == Mode::Hugetlb {
        let page_kb = meminfo("Hugepagesize").unwrap_or(2048);
        let lost = pool::lost_to_others(pool_before, &seen.readings, page_kb);
        if lost > 0 {
            w.push(format!(
                "the pool lost {lost} pages while the program ran that the program neither held nor had reserved; another process used the pool"
            ));
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_of_missing_huge_pages_gets_its_sentence() {
        let before = PoolCounts { free: 7, rsvd: 0 };
        let none = Seen::default();
        assert!(warnings(Mode::None, None, &none, before, 0.1).is_empty());
        let w = warnings(Mode::Hugetlb, Some(42), &none, before, 0.004);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("the target exited after 4 ms") && w[0].contains("/proc/42"),
            "{w:?}"
        );
        let read = Seen {
            samples: 3,
            ..Seen::default()
        };
        let w = warnings(Mode::Hugetlb, None, &read, before, 1.0);
        assert!(
            w[0].contains("/proc/PID/status") && w[0].contains("pool had 7 free pages"),
            "{w:?}"
        );
        let w = warnings(Mode::Thp, None, &read, before, 1.0);
        assert!(
            w[0].starts_with("transparent huge pages were NOT used"),
            "{w:?}"
        );
    }

    #[test]
    fn a_process_that_is_gone_is_not_read() {
        let mut seen = Seen::default();
        assert!(!read_once(i32::MAX, &mut seen));
        assert_eq!(seen.samples, 0);
    }
}
