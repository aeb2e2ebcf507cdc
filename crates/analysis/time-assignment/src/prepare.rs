//! Turns a profile into per-thread intervals, each with its sample and new branch records.
//!
//! For each thread, consecutive samples s_{i-1}, s_i define the interval (t_{i-1}, t_i];
//! the first sample of a thread stands for (t_i - weight, t_i] (when weights are event
//! periods, not ns, for the median gap between samples instead). The records of s_i are
//! its branch records with `is_new` (records already seen in the previous snapshot were
//! used by the previous interval), kept oldest first. Functions are identified by name +
//! module; frames that are missing or unknown map to one `[unknown]` key.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::sync::Arc;

use kairos_model::{BranchKind, FrameIdx, Profile, Sample, ThreadIdx};

use crate::slots::ThreadSlots;

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

/// An interval's records: a range of one vector shared by all intervals, so tens of
/// millions of intervals do not each allocate their own.
#[derive(Debug, Clone)]
pub(crate) struct Recs {
    all: Arc<Vec<Rec>>,
    range: Range<usize>,
}

impl Deref for Recs {
    type Target = [Rec];
    fn deref(&self) -> &[Rec] {
        self.all.get(self.range.clone()).unwrap_or(&[])
    }
}

impl<'a> IntoIterator for &'a Recs {
    type Item = &'a Rec;
    type IntoIter = std::slice::Iter<'a, Rec>;
    fn into_iter(self) -> Self::IntoIter {
        self.deref().iter()
    }
}

/// One sample and the interval it closes.
#[derive(Debug, Clone)]
pub(crate) struct Interval {
    /// Index of the sample in the profile's samples.
    pub sample: u32,
    pub thread: ThreadIdx,
    /// Dense index of the thread (0..[`Prepared::n_threads`]), for per-thread tables.
    pub slot: u32,
    pub start: u64,
    pub end: u64,
    pub leaf_frame: Option<FrameIdx>,
    pub leaf_func: FnKey,
    /// New records, oldest first.
    pub recs: Recs,
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
    /// Distinct threads (slots) of the intervals.
    pub n_threads: usize,
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
    /// Key of each frame once seen (u32::MAX: not yet); a vector, as this is looked up
    /// for every record.
    by_frame: Vec<FnKey>,
}

impl<'a> Keys<'a> {
    fn of(&mut self, frame: Option<FrameIdx>) -> FnKey {
        let Some(fi) = frame else { return UNKNOWN };
        match self.by_frame.get(fi as usize) {
            Some(&k) if k != FnKey::MAX => return k,
            Some(_) => {}
            None => return UNKNOWN,
        }
        let Some(f) = self.profile.frames.get(fi as usize) else {
            return UNKNOWN;
        };
        let module = f
            .module
            .and_then(|m| self.profile.modules.get(m as usize))
            .map_or("", |m| m.path.as_str());
        let next = self.names.len() as FnKey;
        let k = *self
            .by_name
            .entry((f.function.as_str(), module))
            .or_insert(next);
        if k == next {
            self.names.push(if module.is_empty() {
                f.function.clone()
            } else {
                format!("{} ({module})", f.function)
            });
        }
        if let Some(slot) = self.by_frame.get_mut(fi as usize) {
            *slot = k;
        }
        k
    }
}

/// Builds the intervals of every thread, in sample time order. `samples` stand for the
/// profile's own (a caller that keeps them elsewhere passes them without a copy of the
/// profile and its branch records).
pub(crate) fn prepare(profile: &Profile, samples: &[Sample]) -> Prepared {
    let mut keys = Keys {
        profile,
        by_name: HashMap::new(),
        names: vec!["[unknown]".into()],
        by_frame: vec![FnKey::MAX; profile.frames.len()],
    };
    let mut notes = Vec::new();

    let (snaps, stray) = Snapshots::of(profile, samples.len());
    if stray > 0 {
        notes.push(format!(
            "{stray} branch records name a sample that does not exist and were ignored"
        ));
    }
    let mut depth = profile.branch_info.as_ref().map_or(0, |b| b.depth as usize);
    depth = depth.max(snaps.max_len());
    let wide_cycles = profile
        .branches
        .iter()
        .any(|b| b.cycles.is_some_and(|c| c > u16::MAX as u32));
    let cycles_saturate = if wide_cycles {
        None
    } else {
        Some(u16::MAX as u32)
    };

    let mut order: Vec<usize> = (0..samples.len()).collect();
    // Samples are kept sorted by time; sort only when they are not (same stable order).
    if !samples.windows(2).all(|w| w[0].time_ns <= w[1].time_ns) {
        order.sort_by_key(|&i| samples[i].time_ns);
    }
    let first_len = first_interval(profile, samples, &order);
    let mut slots = ThreadSlots::default();
    let mut last: Vec<Option<u64>> = Vec::new();
    // (interval fields, range of its records), records in one vector for all.
    // Intervals first share an empty record vector; the real one replaces it at the end
    // (no second list of intervals while the records are gathered).
    let none: Arc<Vec<Rec>> = Arc::new(Vec::new());
    let mut intervals: Vec<Interval> = Vec::with_capacity(order.len());
    // At most one record per branch record; only the pages written become resident.
    let mut all_recs: Vec<Rec> = Vec::with_capacity(profile.branches.len());
    let mut unknown_from = 0u64;
    for &si in &order {
        let s = &samples[si];
        let slot = slots.of(s.thread);
        if last.len() <= slot as usize {
            last.resize(slot as usize + 1, None);
        }
        let start = match last[slot as usize].replace(s.time_ns) {
            Some(prev) => prev.min(s.time_ns),
            None => s.time_ns.saturating_sub(if profile.weight_is_time() {
                s.weight
            } else {
                first_len
            }),
        };
        let leaf_frame = s
            .stack
            .and_then(|st| profile.stacks.get(st as usize))
            .map(|n| n.frame);
        let leaf_func = keys.of(leaf_frame);
        let snap = snaps.get(si);
        let has_old = snap.iter().any(|i| !profile.branches[i as usize].is_new);
        let complete = has_old || snap.len() < depth || snap.is_empty();
        let first_rec = all_recs.len();
        let recs = &mut all_recs;
        // Walk oldest first so each record knows the record that opened its segment.
        let mut older: Option<(BranchKind, FnKey, Option<FrameIdx>, FnKey)> = None; // kind, from fn, to frame, to fn
        for bi in snap.iter().rev() {
            let b = &profile.branches[bi as usize];
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
                    record: bi,
                });
            }
            older = Some((b.kind, from, b.to_frame, to));
        }
        let recs = Recs {
            all: none.clone(),
            range: first_rec..all_recs.len(),
        };
        intervals.push(Interval {
            sample: si as u32,
            thread: s.thread,
            slot,
            start,
            end: s.time_ns,
            leaf_frame,
            leaf_func,
            recs,
            complete,
        });
    }
    all_recs.shrink_to_fit();
    let all_recs = Arc::new(all_recs);
    intervals
        .iter_mut()
        .for_each(|iv| iv.recs.all = all_recs.clone());
    if unknown_from > 0 {
        notes.push(format!(
            "{unknown_from} branch records have no known function at FROM"
        ));
    }
    let lost = intervals.iter().filter(|iv| !iv.complete).count();
    if lost > 0 {
        notes.push(format!(
            "{lost} snapshots overflowed (more branches between two samples than the LBR holds)"
        ));
    }

    let mut shares = vec![0.0; keys.names.len()];
    let by_weight = samples.iter().any(|s| s.weight > 0);
    for (&si, iv) in order.iter().zip(&intervals) {
        let w = if by_weight {
            samples[si].weight as f64
        } else {
            1.0
        };
        shares[iv.leaf_func as usize] += w;
    }
    let total: f64 = shares.iter().sum();
    if total > 0.0 {
        shares.iter_mut().for_each(|x| *x /= total);
    }
    Prepared {
        intervals,
        names: keys.names,
        shares,
        cycles_saturate,
        notes,
        n_threads: slots.count as usize,
    }
}

/// Each sample's branch records (indices into the profile's branches), newest first
/// (by position; equal positions in record order).
struct Snapshots {
    /// Records of sample i: `idx[start[i]..start[i + 1]]`, or the records themselves
    /// when `idx` is None (the profile keeps them sorted by sample and position).
    start: Vec<u32>,
    idx: Option<Vec<u32>>,
}

impl Snapshots {
    /// The snapshots and how many records name no sample.
    fn of(p: &Profile, n: usize) -> (Snapshots, u64) {
        let b = &p.branches;
        // One pass (records can be hundreds of millions): counts, and whether they are
        // in (sample, position) order.
        let mut count = vec![0u32; n + 1];
        let mut stray = 0u64;
        let mut sorted = true;
        let mut prev = (0u32, 0u16);
        for r in b {
            let key = (r.sample, r.position);
            sorted &= prev <= key;
            prev = key;
            match count.get_mut(r.sample as usize + 1) {
                Some(c) if (r.sample as usize) < n => *c += 1,
                _ => stray += 1,
            }
        }
        sorted &= stray == 0;
        for i in 0..n {
            count[i + 1] += count[i];
        }
        if sorted {
            return (
                Snapshots {
                    start: count,
                    idx: None,
                },
                0,
            );
        }
        // Counting sort by sample keeps record order within a sample; then a stable
        // sort by position, as before.
        let mut next = count.clone();
        let mut idx = vec![0u32; count[n] as usize];
        for (i, r) in b.iter().enumerate() {
            if (r.sample as usize) < n {
                let at = &mut next[r.sample as usize];
                idx[*at as usize] = i as u32;
                *at += 1;
            }
        }
        for w in count.windows(2) {
            idx[w[0] as usize..w[1] as usize].sort_by_key(|&i| b[i as usize].position);
        }
        (
            Snapshots {
                start: count,
                idx: Some(idx),
            },
            stray,
        )
    }

    fn max_len(&self) -> usize {
        self.start
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// The records of sample `si`, newest first.
    fn get(&self, si: usize) -> SnapIter<'_> {
        let (a, b) = (
            self.start.get(si).copied().unwrap_or(0),
            self.start.get(si + 1).copied().unwrap_or(0),
        );
        match &self.idx {
            Some(idx) => SnapIter::Listed(idx.get(a as usize..b as usize).unwrap_or(&[])),
            None => SnapIter::Range(a..b.max(a)),
        }
    }
}

/// One snapshot's record indices.
enum SnapIter<'a> {
    Range(Range<u32>),
    Listed(&'a [u32]),
}

impl<'a> SnapIter<'a> {
    fn len(&self) -> usize {
        match self {
            SnapIter::Range(r) => r.len(),
            SnapIter::Listed(l) => l.len(),
        }
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn iter(&self) -> Indices<'a> {
        match self {
            SnapIter::Range(r) => Indices::Range(r.clone()),
            SnapIter::Listed(l) => Indices::Listed(l.iter()),
        }
    }
}

enum Indices<'a> {
    Range(Range<u32>),
    Listed(std::slice::Iter<'a, u32>),
}

impl Iterator for Indices<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        match self {
            Indices::Range(r) => r.next(),
            Indices::Listed(l) => l.next().copied(),
        }
    }
}

impl DoubleEndedIterator for Indices<'_> {
    fn next_back(&mut self) -> Option<u32> {
        match self {
            Indices::Range(r) => r.next_back(),
            Indices::Listed(l) => l.next_back().copied(),
        }
    }
}
/// Length of a thread's first interval when weights are not time (event periods): the
/// median gap between consecutive samples of a thread over the run, 0 if there is none.
fn first_interval(profile: &Profile, samples: &[Sample], order: &[usize]) -> u64 {
    if profile.weight_is_time() {
        return 0;
    }
    let mut last: HashMap<ThreadIdx, u64> = HashMap::new();
    let mut gaps: Vec<u64> = order
        .iter()
        .filter_map(|&i| {
            let s = &samples[i];
            last.insert(s.thread, s.time_ns)
                .map(|p| s.time_ns.saturating_sub(p))
        })
        .collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied().unwrap_or(0)
}
