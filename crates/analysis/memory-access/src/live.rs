//! While the collection runs: each timer sample the collector hands over (its
//! `on_sample` hook) is decoded against the live target's code, and the 64-byte lines that
//! more than one thread touched, with at least one store, become watchpoint candidates.
//! The decoding is the converter's, on the code of the running process (`live_code`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kairos_collector::sample_hook::SampleView;
use kairos_collector::watch::{Watch, WatchKind};
use kairos_x86_access::{Bitness, SegmentBases, Site};

use crate::lines::bits;
use crate::live_code::LiveCode;
use crate::{line_bytes, LINE_BYTES};

/// Lines kept per run; past it, new lines are ignored (the busy ones come early).
const MAX_LINES: usize = 1 << 18;
/// Candidate lines handed to the watcher, busiest first: each takes a window in turn, so
/// more would thin out the watching of each.
pub(crate) const MAX_CANDIDATE_LINES: usize = 16;
const PUBLISH_EVERY: Duration = Duration::from_millis(100);

/// What the watcher reads: the words to watch, in one process.
#[derive(Debug, Default, Clone)]
pub(crate) struct Candidates {
    pub pid: i32,
    pub watches: Vec<Watch>,
    /// Bumped at each change, so the watcher re-plans only then.
    pub version: u64,
}

pub(crate) type Shared = Arc<Mutex<Candidates>>;

#[derive(Default)]
struct LineUse {
    samples: u64,
    /// tid -> (bytes touched, bytes written).
    threads: BTreeMap<i32, (u64, u64)>,
}

impl LineUse {
    fn shared_with_store(&self) -> bool {
        self.threads.len() >= 2 && self.threads.values().any(|&(_, w)| w != 0)
    }
}

/// Decodes samples until the sender is gone or `stop` is set.
pub(crate) fn observe(rx: Receiver<SampleView>, shared: Shared, stop: Arc<AtomicBool>) {
    let mut code: HashMap<(i32, u64), Option<Site>> = HashMap::new();
    let mut live = LiveCode::default();
    let mut lines: HashMap<(i32, u64), LineUse> = HashMap::new();
    let mut last = Instant::now();
    let mut dirty = false;
    while !stop.load(Ordering::Relaxed) {
        match rx.recv_timeout(PUBLISH_EVERY) {
            Ok(v) => dirty |= observe_one(&v, &mut code, &mut live, &mut lines),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if dirty && last.elapsed() >= PUBLISH_EVERY {
            publish(&lines, &shared);
            (dirty, last) = (false, Instant::now());
        }
    }
    if dirty {
        publish(&lines, &shared);
    }
}

/// Adds one sample's accesses; true when a candidate line changed.
fn observe_one(
    v: &SampleView,
    code: &mut HashMap<(i32, u64), Option<Site>>,
    live: &mut LiveCode,
    lines: &mut HashMap<(i32, u64), LineUse>,
) -> bool {
    let bitness = match v.regs_abi {
        1 => Bitness::B32,
        2 => Bitness::B64,
        _ => return false,
    };
    let site = code
        .entry((v.pid, v.ip))
        .or_insert_with(|| live.site(v.pid, v.ip, bitness));
    let Some(site) = site.as_ref() else {
        return false;
    };
    let regs = |i: u32| {
        let bit = 1u64.checked_shl(i)?;
        if v.regs_mask & bit == 0 {
            return None;
        }
        v.regs
            .get((v.regs_mask & (bit - 1)).count_ones() as usize)
            .copied()
    };
    let Ok((accesses, _)) = site.resolve(&regs, &SegmentBases::default()) else {
        return false;
    };
    let mut changed = false;
    for a in accesses {
        let (line, first, last) = line_bytes(a.addr, a.size);
        if lines.len() >= MAX_LINES && !lines.contains_key(&(v.pid, line)) {
            continue;
        }
        let mask = bits(first, last);
        let u = lines.entry((v.pid, line)).or_default();
        u.samples += 1;
        let t = u.threads.entry(v.tid).or_default();
        let before = *t;
        t.0 |= mask;
        if a.direction.writes() {
            t.1 |= mask;
        }
        changed |= (before != *t || u.samples.is_power_of_two()) && u.shared_with_store();
    }
    changed
}

/// Publishes the busiest candidate lines of the process with the most of them.
fn publish(lines: &HashMap<(i32, u64), LineUse>, shared: &Shared) {
    let mut cands: Vec<(&(i32, u64), &LineUse)> = lines
        .iter()
        .filter(|(_, u)| u.shared_with_store())
        .collect();
    if cands.is_empty() {
        return;
    }
    cands.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0.cmp(b.0)));
    let Ok(mut c) = shared.lock() else { return };
    // The watcher holds one process: the one chosen first, unless it has no candidate.
    let pid = if c.version > 0 && cands.iter().any(|((p, _), _)| *p == c.pid) {
        c.pid
    } else {
        cands[0].0 .0
    };
    cands.retain(|((p, _), _)| *p == pid);
    let mut watches: Vec<Watch> = cands
        .iter()
        .take(MAX_CANDIDATE_LINES)
        .flat_map(|(&(_, line), u)| words(line, u))
        .collect();
    // By address: a new order of the same lines is no change.
    watches.sort_by_key(|w| w.addr());
    if c.version == 0 || c.pid != pid || c.watches != watches {
        *c = Candidates {
            pid,
            watches,
            version: c.version + 1,
        };
    }
}

/// The line's 8-byte words to watch: RW where a word one thread stored to was touched by
/// another too (so the other's reads trap as well), W on every other word a thread
/// touched. Sampling sees loads far more often than stores, and a W watch on a word
/// nobody writes costs nothing, so the words seen only loaded are watched for writes too.
fn words(line: u64, u: &LineUse) -> Vec<Watch> {
    let word = |m: u64, i: u64| m >> (i * 8) & 0xff != 0;
    (0..LINE_BYTES / 8)
        .filter_map(|i| {
            let writers = u.threads.values().filter(|&&(_, w)| word(w, i)).count();
            let touchers = u.threads.values().filter(|&&(t, _)| word(t, i)).count();
            let kind = match (writers, touchers) {
                (_, 0) => return None,
                (w, t) if w > 0 && t >= 2 => WatchKind::ReadWrite,
                _ => WatchKind::Write,
            };
            Watch::new(line + i * 8, 8, kind).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_a_falsely_shared_line() {
        let mut u = LineUse::default();
        u.threads.insert(1, (0xff, 0xff));
        u.threads.insert(2, (0xff << 8, 0xff << 8));
        u.threads.insert(3, (0xff << 16, 0));
        let w = words(0x1000, &u);
        let kinds = vec![
            (0x1000, WatchKind::Write),
            (0x1008, WatchKind::Write),
            (0x1010, WatchKind::Write),
        ];
        assert_eq!(
            w.iter().map(|w| (w.addr(), w.kind())).collect::<Vec<_>>(),
            kinds
        );
        u.threads.insert(3, (0xff, 0));
        assert_eq!(words(0x1000, &u)[0].kind(), WatchKind::ReadWrite);
    }
}
