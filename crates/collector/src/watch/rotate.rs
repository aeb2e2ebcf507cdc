//! Runs a [`Schedule`] against a [`Watcher`]: arms each watch set in turn, polls the
//! rings during the window, pauses when the budget says so.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::schedule::{DutyConfig, Schedule, SetStats, Step};
use super::{Hit, Losses, Watch, WatchError, Watcher};

/// How often the rings are read during a window: short enough to cut a costly window
/// early, long enough that polling costs us little.
const TICK_NS: u64 = 1_000_000;

/// What a rotation did. The hits themselves stay in the watcher.
#[derive(Debug)]
pub struct RotationReport {
    pub elapsed_ns: u64,
    pub armed_ns: u64,
    pub armed_fraction: f64,
    /// Trap time charged to the busiest thread over the time left to it.
    pub estimated_slowdown: f64,
    pub hits: usize,
    pub sets: Vec<SetStats>,
    pub losses: Losses,
    /// Why the rotation stopped early (the target exited, a slot was refused...).
    pub ended_by: Option<WatchError>,
}

/// Rotates over `sets` (each at most [`Watcher::slots`] watches) for `duration`, or until
/// `stop` is set or the target exits. Never fails: an error ends the rotation and is
/// reported in [`RotationReport::ended_by`], with every hit collected before it.
pub fn run(
    watcher: &mut Watcher,
    sets: &[Vec<Watch>],
    classify: bool,
    cfg: DutyConfig,
    duration: Duration,
    stop: &AtomicBool,
) -> RotationReport {
    let start = crate::monotonic_ns();
    let end = start.saturating_add(duration.as_nanos() as u64);
    let mut sched = Schedule::new(sets.len(), cfg, start);
    let first_hit = watcher.hits().len();
    let pid = watcher.target().pid;
    let mut ended_by = None;
    let mut now = start;
    while now < end && !stop.load(Ordering::Relaxed) {
        if !crate::process_alive(pid) {
            ended_by = Some(WatchError::ProcessGone { pid });
            break;
        }
        match sched.next(now) {
            Step::Pause { until_ns } => {
                if let Err(e) = watcher.disarm() {
                    ended_by = Some(e);
                    break;
                }
                now = sleep_until(until_ns.min(end), stop);
            }
            Step::Arm { set, until_ns } => {
                let before = watcher.hits().len();
                let lost_before = watcher.losses().lost;
                if let Err(e) = watcher.arm(&sets[set], classify) {
                    ended_by = Some(e);
                    break;
                }
                let w_start = crate::monotonic_ns();
                let until = until_ns.min(end);
                let busiest = loop {
                    now = sleep_until(
                        crate::monotonic_ns().saturating_add(TICK_NS).min(until),
                        stop,
                    );
                    watcher.poll();
                    let lost = watcher.losses().lost - lost_before;
                    // Lost hits trapped too: charge them to the busiest thread.
                    let busiest = busiest_thread_hits(&watcher.hits()[before..]) + lost;
                    if now >= until
                        || stop.load(Ordering::Relaxed)
                        || sched.should_cut(w_start, now, busiest)
                    {
                        break busiest;
                    }
                };
                sched.window_done(set, w_start, crate::monotonic_ns(), busiest);
            }
        }
    }
    // Disarm even after an error so the target runs unwatched; keep the first error.
    if let Err(e) = watcher.disarm() {
        ended_by.get_or_insert(e);
    }
    sched.advance(crate::monotonic_ns());
    RotationReport {
        elapsed_ns: sched.elapsed_ns(),
        armed_ns: sched.armed_ns(),
        armed_fraction: sched.armed_fraction(),
        estimated_slowdown: sched.estimated_slowdown(),
        hits: watcher.hits().len() - first_hit,
        sets: sched.sets().to_vec(),
        losses: watcher.losses(),
        ended_by,
    }
}

/// Groups candidate watches into sets that fit `slots` (an RW watch takes two slots when
/// `classify` gives it a W companion). Watches of one 64-byte cache line go into the same
/// set where they fit, so that the accesses of the threads sharing a line are seen in the
/// same windows; duplicates are dropped.
pub fn plan_sets(candidates: &[Watch], slots: usize, classify: bool) -> Vec<Vec<Watch>> {
    let mut ws: Vec<Watch> = candidates.to_vec();
    ws.sort_by_key(|w| (w.addr(), w.len(), w.kind() == super::WatchKind::ReadWrite));
    ws.dedup();
    let cost = |w: &Watch| {
        if classify && w.kind() == super::WatchKind::ReadWrite {
            2
        } else {
            1
        }
    };
    let slots = slots.max(1);
    let mut sets: Vec<Vec<Watch>> = Vec::new();
    let mut used = 0usize;
    let mut i = 0;
    while i < ws.len() {
        let line = ws[i].addr() / 64;
        let end = ws[i..]
            .iter()
            .position(|w| w.addr() / 64 != line)
            .map_or(ws.len(), |n| i + n);
        let line_cost: usize = ws[i..end].iter().map(|w| cost(w).min(slots)).sum();
        // Start a new set when this line would not fit in what is left of the current one
        // (a line larger than a whole set is split below anyway).
        if used > 0 && used + line_cost > slots {
            used = 0;
        }
        for w in &ws[i..end] {
            let c = cost(w).min(slots);
            if used == 0 || used + c > slots {
                sets.push(Vec::new());
                used = 0;
            }
            if let Some(last) = sets.last_mut() {
                last.push(*w);
            }
            used += c;
        }
        i = end;
    }
    sets
}

/// Hits of the thread that trapped most.
pub fn busiest_thread_hits(hits: &[Hit]) -> u64 {
    let mut per: HashMap<i32, u64> = HashMap::new();
    for h in hits {
        *per.entry(h.tid).or_default() += 1;
    }
    per.values().copied().max().unwrap_or(0)
}

/// Sleeps in short steps (so `stop` is noticed) until `until_ns`; returns the time.
fn sleep_until(until_ns: u64, stop: &AtomicBool) -> u64 {
    loop {
        let now = crate::monotonic_ns();
        if now >= until_ns || stop.load(Ordering::Relaxed) {
            return now;
        }
        std::thread::sleep(Duration::from_nanos((until_ns - now).min(20_000_000)));
    }
}

#[cfg(test)]
mod tests {
    use super::super::WatchKind::{ReadWrite, Write};
    use super::*;

    fn w(addr: u64, kind: super::super::WatchKind) -> Watch {
        Watch::new(addr, 8, kind).unwrap_or_else(|e| unreachable!("{e}"))
    }

    #[test]
    fn sets_keep_lines_together_and_fit_the_slots() {
        let c = [
            w(0x1000, Write),
            w(0x1008, Write),
            w(0x1040, Write),
            w(0x1048, Write),
            w(0x1050, Write),
            w(0x1000, Write),
        ];
        let sets = plan_sets(&c, 4, false);
        assert_eq!(sets, vec![vec![c[0], c[1]], vec![c[2], c[3], c[4]]]);
        // Classified RW watches take two slots each.
        let rw = [
            w(0x2000, ReadWrite),
            w(0x2008, ReadWrite),
            w(0x2010, ReadWrite),
        ];
        let sets = plan_sets(&rw, 4, true);
        assert_eq!(sets, vec![vec![rw[0], rw[1]], vec![rw[2]]]);
        assert_eq!(plan_sets(&rw, 4, false), vec![rw.to_vec()]);
        assert!(plan_sets(&[], 4, true).is_empty());
        assert_eq!(plan_sets(&rw, 1, true).len(), 3);
    }

    #[test]
    fn busiest_thread() {
        let h = |tid| Hit {
            time_ns: 0,
            pid: 1,
            tid,
            cpu: 0,
            ip: 0,
            addr: 0,
            len: 8,
            access: super::super::Access::Write,
        };
        assert_eq!(busiest_thread_hits(&[h(1), h(2), h(2)]), 2);
        assert_eq!(busiest_thread_hits(&[]), 0);
    }
}
