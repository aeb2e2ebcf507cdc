//! Turns a profile into per-thread intervals, each with its sample and new branch records.
//!
//! For each thread, consecutive samples s_{i-1}, s_i define the interval (t_{i-1}, t_i];
//! the first sample of a thread stands for (t_i - weight, t_i] (when weights are event
//! periods, not ns, for the median gap between samples instead). The records of s_i are
//! its branch records with `is_new` (records already seen in the previous snapshot were
//! used by the previous interval), kept oldest first. Functions are identified by name +
//! module; frames that are missing or unknown map to one `[unknown]` key.

use std::collections::HashMap;

use kairos_model::{BranchKind, FrameIdx, Profile, ThreadIdx};

/// Index of a function (name + module) in [`Prepared::names`]; 0 is `[unknown]`.
pub(crate) type FnKey = u32;
pub(crate) const UNKNOWN: FnKey = 0;

/// One new branch record, seen as the end of a segment of execution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rec {
    /// Frame the point is drawn with: FROM, or the older record's TO when FROM is unknown.
    pub frame: Option<FrameIdx>,
    /// Function executing in the segment that this branch ends (FROM).
    pub func: FnKey,
    pub kind: BranchKind,
    /// Function the branch went to (the next segment's function).
    pub to_func: FnKey,
    /// Kind and FROM function of the branch that opened this segment (the next older
    /// record of the snapshot, new or not), when the snapshot has one.
    pub opened_by: Option<(BranchKind, FnKey)>,
    /// Measured cycles since the previous record; None when absent or 0 (not valid).
    pub cycles: Option<u32>,
    /// Index of the record in the profile's branches.
    pub record: u32,
}

/// One sample and the interval it closes.
#[derive(Debug, Clone)]
pub(crate) struct Interval {
    /// Index of the sample in the profile's samples.
    pub sample: u32,
    pub thread: ThreadIdx,
    pub start: u64,
    pub end: u64,
    pub leaf_frame: Option<FrameIdx>,
    pub leaf_func: FnKey,
    /// New records, oldest first.
    pub recs: Vec<Rec>,
    /// True when no record can have been lost: the snapshot overlaps the previous one
    /// (it holds an old record) or the ring was not full.
    pub complete: bool,
}

impl Interval {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
}

/// Everything the methods need, computed once.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub intervals: Vec<Interval>,
    /// Function names ("name (module)"), by key.
    pub names: Vec<String>,
    /// r_f: each function's share of all samples (self, by weight; by count if no weight).
    pub shares: Vec<f64>,
    /// Largest cycles value a record can carry before it saturates (16-bit LBR_INFO),
    /// None when some record exceeds it (emulated or wider counters).
    pub cycles_saturate: Option<u32>,
    pub notes: Vec<String>,
}

impl Prepared {
    pub fn n_funcs(&self) -> usize {
        self.names.len()
    }
}

struct Keys<'a> {
    profile: &'a Profile,
    by_name: HashMap<(&'a str, &'a str), FnKey>,
    names: Vec<String>,
    by_frame: HashMap<FrameIdx, FnKey>,
}

impl<'a> Keys<'a> {
    fn of(&mut self, frame: Option<FrameIdx>) -> FnKey {
        let Some(fi) = frame else { return UNKNOWN };
        if let Some(&k) = self.by_frame.get(&fi) {
            return k;
        }
        let Some(f) = self.profile.frames.get(fi as usize) else { return UNKNOWN };
        let module = f.module.and_then(|m| self.profile.modules.get(m as usize)).map_or("", |m| m.path.as_str());
        let next = self.names.len() as FnKey;
        let k = *self.by_name.entry((f.function.as_str(), module)).or_insert(next);
        if k == next {
            self.names.push(if module.is_empty() { f.function.clone() } else { format!("{} ({module})", f.function) });
        }
        self.by_frame.insert(fi, k);
        k
    }
}

/// Builds the intervals of every thread, in sample time order.
pub(crate) fn prepare(profile: &Profile) -> Prepared {
    let mut keys = Keys { profile, by_name: HashMap::new(), names: vec!["[unknown]".into()], by_frame: HashMap::new() };
    let mut notes = Vec::new();

    // Snapshot of each sample, newest first (position order).
    let mut snaps: Vec<Vec<usize>> = vec![Vec::new(); profile.samples.len()];
    let mut stray = 0u64;
    for (i, b) in profile.branches.iter().enumerate() {
        match snaps.get_mut(b.sample as usize) {
            Some(v) => v.push(i),
            None => stray += 1,
        }
    }
    if stray > 0 {
        notes.push(format!("{stray} branch records name a sample that does not exist and were ignored"));
    }
    let mut depth = profile.branch_info.as_ref().map_or(0, |b| b.depth as usize);
    for v in &mut snaps {
        v.sort_by_key(|&i| profile.branches[i].position);
        depth = depth.max(v.len());
    }
    let wide_cycles = profile.branches.iter().any(|b| b.cycles.is_some_and(|c| c > u16::MAX as u32));
    let cycles_saturate = if wide_cycles { None } else { Some(u16::MAX as u32) };

    let mut order: Vec<usize> = (0..profile.samples.len()).collect();
    order.sort_by_key(|&i| profile.samples[i].time_ns);
    let first_len = first_interval(profile, &order);
    let mut last: HashMap<ThreadIdx, u64> = HashMap::new();
    let mut intervals = Vec::with_capacity(order.len());
    let mut unknown_from = 0u64;
    for &si in &order {
        let s = &profile.samples[si];
        let start = match last.insert(s.thread, s.time_ns) {
            Some(prev) => prev.min(s.time_ns),
            None => s.time_ns.saturating_sub(if profile.weight_is_time() { s.weight } else { first_len }),
        };
        let leaf_frame = s.stack.and_then(|st| profile.stacks.get(st as usize)).map(|n| n.frame);
        let leaf_func = keys.of(leaf_frame);
        let snap = &snaps[si];
        let has_old = snap.iter().any(|&i| !profile.branches[i].is_new);
        let complete = has_old || snap.len() < depth || snap.is_empty();
        let mut recs = Vec::new();
        // Walk oldest first so each record knows the record that opened its segment.
        let mut older: Option<(BranchKind, FnKey, Option<FrameIdx>, FnKey)> = None; // kind, from fn, to frame, to fn
        for &bi in snap.iter().rev() {
            let b = &profile.branches[bi];
            let from = keys.of(b.from_frame);
            let to = keys.of(b.to_frame);
            if b.is_new {
                let (frame, func) = match (b.from_frame, from) {
                    (Some(f), k) if k != UNKNOWN => (Some(f), k),
                    _ => match older {
                        Some((_, _, tf, tk)) if tk != UNKNOWN => (tf, tk),
                        _ => {
                            unknown_from += 1;
                            (b.from_frame, UNKNOWN)
                        }
                    },
                };
                recs.push(Rec {
                    frame,
                    func,
                    kind: b.kind,
                    to_func: to,
                    opened_by: older.map(|(k, f, _, _)| (k, f)),
                    cycles: b.cycles.filter(|&c| c > 0),
                    record: bi as u32,
                });
            }
            older = Some((b.kind, from, b.to_frame, to));
        }
        intervals.push(Interval { sample: si as u32, thread: s.thread, start, end: s.time_ns, leaf_frame, leaf_func, recs, complete });
    }
    if unknown_from > 0 {
        notes.push(format!("{unknown_from} branch records have no known function at FROM"));
    }
    let lost = intervals.iter().filter(|iv| !iv.complete).count();
    if lost > 0 {
        notes.push(format!("{lost} snapshots overflowed (more branches between two samples than the LBR holds)"));
    }

    let mut shares = vec![0.0; keys.names.len()];
    let by_weight = profile.samples.iter().any(|s| s.weight > 0);
    for (&si, iv) in order.iter().zip(&intervals) {
        let w = if by_weight { profile.samples[si].weight as f64 } else { 1.0 };
        shares[iv.leaf_func as usize] += w;
    }
    let total: f64 = shares.iter().sum();
    if total > 0.0 {
        shares.iter_mut().for_each(|x| *x /= total);
    }
    Prepared { intervals, names: keys.names, shares, cycles_saturate, notes }
}

/// Length of a thread's first interval when weights are not time (event periods): the
/// median gap between consecutive samples of a thread over the run, 0 if there is none.
fn first_interval(profile: &Profile, order: &[usize]) -> u64 {
    if profile.weight_is_time() {
        return 0;
    }
    let mut last: HashMap<ThreadIdx, u64> = HashMap::new();
    let mut gaps: Vec<u64> = order
        .iter()
        .filter_map(|&i| {
            let s = &profile.samples[i];
            last.insert(s.thread, s.time_ns).map(|p| s.time_ns.saturating_sub(p))
        })
        .collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied().unwrap_or(0)
}
