//! Turns a profile into per-thread intervals, each with its sample and new branch records.
//!
//! For each thread, consecutive samples s_{i-1}, s_i define the interval (t_{i-1}, t_i];
//! the first sample of a thread stands for (t_i - weight, t_i] (when weights are event
//! periods, not ns, for the median gap between samples instead). The records of s_i are
//! its branch records with `is_new` (records already seen in the previous snapshot were
//! used by the previous interval), kept oldest first. Functions are identified by name +
//! module; frames that are missing or unknown map to one `[unknown]` key.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::ops::{Deref, Range};

use kairos_model::{BranchKind, BranchRecord, FrameIdx, Profile, Sample, ThreadIdx};

use crate::slots::ThreadSlots;
use crate::snapshots::{first_interval, Order, Scan, SnapIter, Snapshots};
use crate::{Method, Owners};

/// Index of a function (name + module) in [`Prepared::names`]; 0 is `[unknown]`.
pub(crate) type FnKey = u32;
pub(crate) const UNKNOWN: FnKey = 0;

/// One new branch record, seen as the end of a segment of execution. Packed to 12
/// bytes (tens of millions are written at scale, and fresh memory is what costs): no
/// frame is a sentinel, the function is looked up from the frame ([`Prepared::func`]),
/// what only `nesting` reads is in a [`Link`] beside it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rec {
    /// [`NO_FRAME`] when there is none.
    frame: FrameIdx,
    cycles: Option<NonZeroU32>,
    /// Index of the record in the profile's branches.
    pub record: u32,
}

/// [`Rec::frame`] of a record without one.
const NO_FRAME: FrameIdx = FrameIdx::MAX;

/// How a record's segment is nested: kept for `nesting` only (see [`prepare`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Link {
    /// Function the branch went to (the next segment's function).
    pub to_func: FnKey,
    opened_func: FnKey,
    pub kind: BranchKind,
    opened_kind: Option<BranchKind>,
}

impl Link {
    /// Kind and FROM function of the branch that opened this segment (the next older
    /// record of the snapshot, new or not), when the snapshot has one.
    pub fn opened_by(&self) -> Option<(BranchKind, FnKey)> {
        self.opened_kind.map(|k| (k, self.opened_func))
    }
}

impl Rec {
    /// Frame the point is drawn with: FROM, or the older record's TO when FROM is unknown.
    pub fn frame(&self) -> Option<FrameIdx> {
        (self.frame != NO_FRAME).then_some(self.frame)
    }
    /// Measured cycles since the previous record; None when absent or 0 (not valid).
    pub fn cycles(&self) -> Option<u32> {
        self.cycles.map(NonZeroU32::get)
    }
}

/// One sample and the interval it closes. 40 bytes (one per sample, tens of millions at
/// scale): what can be looked up is, through [`Iv`] (the thread from the slot, the
/// leaf's function from its frame, the records from their range).
#[derive(Debug, Clone)]
pub(crate) struct Interval {
    /// Index of the sample in the profile's samples.
    pub sample: u32,
    /// Dense index of the thread (0..[`Prepared::n_threads`]), for per-thread tables.
    pub slot: u32,
    pub start: u64,
    pub end: u64,
    /// [`NO_FRAME`] when the sample has no stack.
    leaf_frame: FrameIdx,
    /// The interval's new records in [`Prepared`]'s vector of all records.
    rec_range: Range<u32>,
    /// True when no record can have been lost: the snapshot overlaps the previous one
    /// (it holds an old record) or the ring was not full.
    pub complete: bool,
}

impl Interval {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Frame of the sample's leaf, None when it has no stack.
    pub fn leaf_frame(&self) -> Option<FrameIdx> {
        (self.leaf_frame != NO_FRAME).then_some(self.leaf_frame)
    }
}

/// An interval with what [`Prepared`] keeps for it beside: what the methods read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Iv<'p> {
    iv: &'p Interval,
    /// New records, oldest first.
    pub recs: &'p [Rec],
    pub thread: ThreadIdx,
    /// Function of the sample's leaf ([`UNKNOWN`] without one).
    pub leaf_func: FnKey,
}

impl Deref for Iv<'_> {
    type Target = Interval;
    fn deref(&self) -> &Interval {
        self.iv
    }
}

/// Everything the methods need, computed once.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// In sample time order; read through [`Prepared::ivs`] and [`Prepared::iv`].
    pub intervals: Vec<Interval>,
    /// The new records of all intervals, each interval's a range.
    recs: Vec<Rec>,
    /// Thread of each slot.
    threads: Vec<ThreadIdx>,
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
    /// Whether some new record has cycles.
    pub has_cycles: bool,
    /// Each record's [`Link`], in the order of the intervals' records; empty unless
    /// asked for.
    links: Vec<Link>,
    /// Function of each frame a record or sample was drawn with.
    fn_of_frame: Vec<FnKey>,
}

impl Prepared {
    /// The intervals, in sample time order.
    pub fn ivs(&self) -> impl ExactSizeIterator<Item = Iv<'_>> + Clone + '_ {
        self.intervals.iter().map(move |iv| self.view(iv))
    }

    /// Interval `k`.
    pub fn iv(&self, k: usize) -> Option<Iv<'_>> {
        self.intervals.get(k).map(|iv| self.view(iv))
    }

    pub fn n_intervals(&self) -> usize {
        self.intervals.len()
    }

    /// All new records, in the order of the intervals.
    pub fn all_recs(&self) -> &[Rec] {
        &self.recs
    }

    #[inline]
    fn view<'p>(&'p self, iv: &'p Interval) -> Iv<'p> {
        let r = &iv.rec_range;
        Iv {
            iv,
            recs: self
                .recs
                .get(r.start as usize..r.end as usize)
                .unwrap_or(&[]),
            thread: self.threads.get(iv.slot as usize).copied().unwrap_or(0),
            leaf_func: func_of_frame(&self.fn_of_frame, iv.leaf_frame()),
        }
    }

    /// Function executing in the segment that `r` ends (its frame's).
    #[inline]
    pub fn func(&self, r: &Rec) -> FnKey {
        func_of(&self.fn_of_frame, r)
    }

    /// What [`Prepared::func`] reads, for a method that keeps its own copy.
    pub fn fn_of_frame(&self) -> &[FnKey] {
        &self.fn_of_frame
    }

    pub fn n_funcs(&self) -> usize {
        self.names.len()
    }

    /// The links of `iv`'s records (empty unless [`prepare`] was asked for them).
    pub fn links(&self, iv: &Interval) -> &[Link] {
        let r = &iv.rec_range;
        self.links
            .get(r.start as usize..r.end as usize)
            .unwrap_or(&[])
    }
}

/// [`Prepared::func`] from the table it reads.
#[inline]
pub(crate) fn func_of(fn_of_frame: &[FnKey], r: &Rec) -> FnKey {
    func_of_frame(fn_of_frame, r.frame())
}

/// The function of a frame from the table [`Prepared::fn_of_frame`] gives; [`UNKNOWN`]
/// without a frame or for one never seen.
#[inline]
fn func_of_frame(fn_of_frame: &[FnKey], frame: Option<FrameIdx>) -> FnKey {
    frame
        .and_then(|f| fn_of_frame.get(f as usize))
        .copied()
        .filter(|&k| k != FnKey::MAX)
        .unwrap_or(UNKNOWN)
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
    /// The key of a frame: a lookup once the frame was seen (tens of millions of calls).
    #[inline]
    fn of(&mut self, frame: Option<FrameIdx>) -> FnKey {
        let Some(fi) = frame else { return UNKNOWN };
        match self.by_frame.get(fi as usize) {
            Some(&k) if k != FnKey::MAX => k,
            Some(_) => self.first(fi),
            None => UNKNOWN,
        }
    }

    /// Gives frame `fi` (not seen yet) its function's key, a new one for a new function.
    #[inline(never)]
    fn first(&mut self, fi: FrameIdx) -> FnKey {
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
/// Only what `method` reads is kept: no records for `none` (their notes are still
/// given), [`Link`]s for `nesting` only.
pub(crate) fn prepare<S: Owners + ?Sized>(
    profile: &Profile,
    samples: &S,
    method: Method,
) -> Prepared {
    prepare_scanned(
        profile,
        samples,
        method,
        Snapshots::of(profile, samples.len()),
    )
}

/// [`prepare`] with the one pass over the records ([`Snapshots::of`]) already made.
pub(crate) fn prepare_scanned<S: Owners + ?Sized>(
    profile: &Profile,
    samples: &S,
    method: Method,
    (snaps, scan): (Snapshots, Scan),
) -> Prepared {
    let mut b = Builder::new(profile, samples.len(), method);
    let stray = scan.stray;
    if stray > 0 {
        b.notes.push(format!(
            "{stray} branch records name a sample that does not exist and were ignored"
        ));
    }
    let mut depth = profile.branch_info.as_ref().map_or(0, |b| b.depth as usize);
    depth = depth.max(snaps.max_len());
    let cycles_saturate = if scan.wide_cycles {
        None
    } else {
        Some(u16::MAX as u32)
    };

    let order = Order::of(samples);
    let first_len = first_interval(profile, samples, &order);
    for si in order.iter() {
        let Some(s) = samples.get(si) else {
            continue;
        };
        let (slot, start) = b.interval_start(&s, first_len);
        let leaf_frame = b.count_leaf(&s);
        let snap = snaps.get(si);
        // Read forward first (the records lie in memory in this order, so the hardware
        // streams them into cache; the walk below goes backwards and would miss).
        let has_old = snap.iter().fold(false, |old, i| {
            old | profile.branches.get(i as usize).is_some_and(|b| !b.is_new)
        });
        let first_rec = b.recs.len();
        b.walk(&snap);
        let complete = has_old || snap.len() < depth || snap.is_empty();
        b.intervals.push(Interval {
            sample: si as u32,
            slot,
            start,
            end: s.time_ns,
            leaf_frame: leaf_frame.unwrap_or(NO_FRAME),
            rec_range: first_rec as u32..b.recs.len() as u32,
            complete,
        });
    }
    b.finish(cycles_saturate)
}

/// What [`prepare_scanned`] builds up, sample by sample.
struct Builder<'p> {
    profile: &'p Profile,
    /// Keep the records ([`Rec`]s), and the [`Link`]s.
    keep: bool,
    links: bool,
    keys: Keys<'p>,
    notes: Vec<String>,
    /// Per function key: (summed weight, samples) of the samples it is the leaf of.
    by_func: Vec<(f64, f64)>,
    slots: ThreadSlots,
    threads: Vec<ThreadIdx>,
    /// Per slot: the time of the thread's last sample.
    last: Vec<Option<u64>>,
    /// Each interval's records are a range of one vector for all.
    intervals: Vec<Interval>,
    recs: Vec<Rec>,
    unknown_from: u64,
    has_cycles: bool,
    all_links: Vec<Link>,
}

impl<'p> Builder<'p> {
    fn new(profile: &'p Profile, samples: usize, method: Method) -> Self {
        let (keep, links) = (method != Method::None, method == Method::Nesting);
        Builder {
            profile,
            keep,
            links,
            keys: Keys {
                profile,
                by_name: HashMap::new(),
                names: vec!["[unknown]".into()],
                by_frame: vec![FnKey::MAX; profile.frames.len()],
            },
            notes: Vec::new(),
            by_func: Vec::new(),
            slots: ThreadSlots::default(),
            threads: Vec::new(),
            last: Vec::new(),
            intervals: Vec::with_capacity(samples),
            // At most one record per branch record; only the pages written become
            // resident.
            recs: Vec::with_capacity(if keep { profile.branches.len() } else { 0 }),
            unknown_from: 0,
            has_cycles: false,
            all_links: if links {
                Vec::with_capacity(profile.branches.len())
            } else {
                Vec::new()
            },
        }
    }

    /// The sample's thread slot and the start of its interval: the thread's previous
    /// sample, or for its first one the sample's weight (when a time) or `first_len` back.
    #[inline]
    fn interval_start(&mut self, s: &Sample, first_len: u64) -> (u32, u64) {
        let slot = self.slots.of(s.thread);
        if slot as usize == self.threads.len() {
            self.threads.push(s.thread);
        }
        if self.last.len() <= slot as usize {
            self.last.resize(slot as usize + 1, None);
        }
        let start = match self.last[slot as usize].replace(s.time_ns) {
            Some(prev) => prev.min(s.time_ns),
            None => s.time_ns.saturating_sub(if self.profile.weight_is_time() {
                s.weight
            } else {
                first_len
            }),
        };
        (slot, start)
    }

    /// The sample's leaf frame, counted for its function's share.
    #[inline]
    fn count_leaf(&mut self, s: &Sample) -> Option<FrameIdx> {
        let leaf_frame = s
            .stack
            .and_then(|st| self.profile.stacks.get(st as usize))
            .map(|n| n.frame);
        let leaf_func = self.keys.of(leaf_frame);
        // r_f, summed in sample time order: by weight, and by count should no sample
        // have a weight.
        let k = leaf_func as usize;
        if self.by_func.len() <= k {
            self.by_func.resize(k + 1, (0.0, 0.0));
        }
        self.by_func[k].0 += s.weight as f64;
        self.by_func[k].1 += 1.0;
        leaf_frame
    }

    /// Walks one snapshot's new records oldest first, so each record knows the record
    /// that opened its segment, keeping a [`Rec`] (and a [`Link`]) for each.
    #[inline]
    fn walk(&mut self, snap: &SnapIter) {
        let profile = self.profile;
        let keys = &mut self.keys;
        // (kind, FROM function, TO frame, TO function) of the record before.
        let mut older: Option<(BranchKind, FnKey, Option<FrameIdx>, FnKey)> = None;
        // The old record just before, looked up only if a new record follows it (most
        // records are old, and their functions were looked up when they were new).
        let mut pending: Option<&BranchRecord> = None;
        for bi in snap.iter().rev() {
            let Some(b) = profile.branches.get(bi as usize) else {
                continue;
            };
            if !b.is_new {
                pending = Some(b);
                continue;
            }
            if let Some(o) = pending.take() {
                older = Some((
                    o.kind,
                    keys.of(o.from_frame),
                    o.to_frame,
                    keys.of(o.to_frame),
                ));
            }
            let from = keys.of(b.from_frame);
            let to = keys.of(b.to_frame);
            let (frame, func) = match (b.from_frame, from) {
                (Some(f), k) if k != UNKNOWN => (Some(f), k),
                _ => match older {
                    Some((_, _, tf, tk)) if tk != UNKNOWN => (tf, tk),
                    _ => {
                        self.unknown_from += 1;
                        (b.from_frame, UNKNOWN)
                    }
                },
            };
            if self.keep {
                // The frame's function is `func` (see `Prepared::func`): both arms
                // above take the key of the frame they give.
                debug_assert_eq!(keys.of(frame), func);
                self.recs.push(Rec {
                    frame: frame.unwrap_or(NO_FRAME),
                    cycles: b.cycles.and_then(NonZeroU32::new),
                    record: bi,
                });
            }
            if self.links {
                self.all_links.push(Link {
                    to_func: to,
                    opened_func: older.map_or(0, |o| o.1),
                    kind: b.kind,
                    opened_kind: older.map(|o| o.0),
                });
            }
            self.has_cycles |= b.cycles.is_some_and(|c| c > 0);
            older = Some((b.kind, from, b.to_frame, to));
        }
    }

    /// The notes on what could not be read, and each function's share of the samples.
    fn finish(mut self, cycles_saturate: Option<u32>) -> Prepared {
        self.recs.shrink_to_fit();
        let unknown_from = self.unknown_from;
        if unknown_from > 0 {
            self.notes.push(format!(
                "{unknown_from} branch records have no known function at FROM"
            ));
        }
        let lost = self.intervals.iter().filter(|iv| !iv.complete).count();
        if lost > 0 {
            self.notes.push(format!(
                "{lost} snapshots overflowed (more branches between two samples than the LBR holds)"
            ));
        }

        let by_weight = self.by_func.iter().any(|f| f.0 > 0.0);
        let mut shares: Vec<f64> = self
            .by_func
            .iter()
            .map(|&(w, n)| if by_weight { w } else { n })
            .collect();
        shares.resize(self.keys.names.len(), 0.0);
        let total: f64 = shares.iter().sum();
        if total > 0.0 {
            shares.iter_mut().for_each(|x| *x /= total);
        }
        Prepared {
            intervals: self.intervals,
            recs: self.recs,
            threads: self.threads,
            names: self.keys.names,
            shares,
            cycles_saturate,
            notes: self.notes,
            n_threads: self.slots.count as usize,
            has_cycles: self.has_cycles,
            links: self.all_links,
            fn_of_frame: self.keys.by_frame,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tens of millions of each are written at scale; a field that grows them shows here.
    #[test]
    fn records_and_intervals_stay_small() {
        assert_eq!(std::mem::size_of::<Rec>(), 12);
        assert_eq!(std::mem::size_of::<Interval>(), 40);
    }
}
