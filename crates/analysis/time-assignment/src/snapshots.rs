//! Each sample's branch records, found in one pass over all of them (hundreds of
//! millions at scale: every extra pass over them costs), and the samples' time order
//! with the length given to a thread's first interval.

use std::collections::HashMap;
use std::ops::Range;

use kairos_model::{Profile, ThreadIdx};

use crate::Owners;

/// Sample indices in time order: listed, or 0..n when the samples already are.
pub(crate) struct Order(Option<Vec<usize>>, usize);

impl Order {
    pub fn of<S: Owners + ?Sized>(samples: &S) -> Order {
        // Samples are kept sorted by time; sort only when they are not (same stable
        // order). The order is a vector only then (tens of millions of entries).
        let n = samples.len();
        let time = |i: usize| samples.get(i).map_or(0, |s| s.time_ns);
        if (1..n).all(|i| time(i - 1) <= time(i)) {
            return Order(None, n);
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| time(i));
        Order(Some(order), n)
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let listed = self.0.as_deref().map(|o| o.iter().copied());
        let plain = self.0.is_none().then_some(0..self.1);
        listed
            .into_iter()
            .flatten()
            .chain(plain.into_iter().flatten())
    }
}

/// What one pass over all branch records found.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Records that name a sample that does not exist.
    pub stray: u64,
    /// Whether some record's cycles exceed 16 bits.
    pub wide_cycles: bool,
    /// Bit k of word w: record 64 w + k is new (what [`crate::RecordTimes`] is made of).
    pub is_new: Vec<u64>,
}

/// Each sample's branch records (indices into the profile's branches), newest first
/// (by position; equal positions in record order).
pub(crate) struct Snapshots {
    /// Records of sample i: `idx[start[i]..start[i + 1]]`, or the records themselves
    /// when `idx` is None (the profile keeps them sorted by sample and position).
    start: Vec<u32>,
    idx: Option<Vec<u32>>,
}

impl Snapshots {
    /// The snapshots and how many records name no sample.
    pub fn of(p: &Profile, n: usize) -> (Snapshots, Scan) {
        let b = &p.branches;
        // One pass (records can be hundreds of millions, each read costs): counts,
        // whether they are in (sample, position) order, and what else is asked of all.
        let mut count = vec![0u32; n + 1];
        let mut scan = Scan {
            is_new: Vec::with_capacity(b.len().div_ceil(64)),
            ..Scan::default()
        };
        let mut sorted = true;
        let mut prev = (0u32, 0u16);
        for chunk in b.chunks(64) {
            let mut word = 0u64;
            for (k, r) in chunk.iter().enumerate() {
                let key = (r.sample, r.position);
                sorted &= prev <= key;
                prev = key;
                scan.wide_cycles |= r.cycles.is_some_and(|c| c > u16::MAX as u32);
                word |= u64::from(r.is_new) << k;
                match count.get_mut(r.sample as usize + 1) {
                    Some(c) if (r.sample as usize) < n => *c += 1,
                    _ => scan.stray += 1,
                }
            }
            scan.is_new.push(word);
        }
        sorted &= scan.stray == 0;
        for i in 0..n {
            count[i + 1] += count[i];
        }
        if sorted {
            return (
                Snapshots {
                    start: count,
                    idx: None,
                },
                scan,
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
            scan,
        )
    }

    pub fn max_len(&self) -> usize {
        self.start
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }

    /// The records of sample `si`, newest first.
    pub fn get(&self, si: usize) -> SnapIter<'_> {
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
pub(crate) enum SnapIter<'a> {
    Range(Range<u32>),
    Listed(&'a [u32]),
}

impl<'a> SnapIter<'a> {
    pub fn len(&self) -> usize {
        match self {
            SnapIter::Range(r) => r.len(),
            SnapIter::Listed(l) => l.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn iter(&self) -> Indices<'a> {
        match self {
            SnapIter::Range(r) => Indices::Range(r.clone()),
            SnapIter::Listed(l) => Indices::Listed(l.iter()),
        }
    }
}

pub(crate) enum Indices<'a> {
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
pub(crate) fn first_interval<S: Owners + ?Sized>(
    profile: &Profile,
    samples: &S,
    order: &Order,
) -> u64 {
    if profile.weight_is_time() {
        return 0;
    }
    let mut last: HashMap<ThreadIdx, u64> = HashMap::new();
    let mut gaps: Vec<u64> = order
        .iter()
        .filter_map(|i| {
            let s = samples.get(i)?;
            last.insert(s.thread, s.time_ns)
                .map(|p| s.time_ns.saturating_sub(p))
        })
        .collect();
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied().unwrap_or(0)
}
