//! Where methods put their points: in time order, without sorting.
//!
//! Methods emit the points of one interval after another (intervals in order of their
//! sample's time), each interval's points in time order. A thread's intervals follow
//! each other, so each thread's points arrive in time order; the global order (by time,
//! ties in order of emission, as a stable sort gives) is a merge of the threads. A
//! thread's point is released once no later interval can hold an earlier point: every
//! point lies at or after its interval's start, so once the smallest start of the
//! intervals still to come is known (a suffix minimum), every queued point at or before
//! it can go. Memory is a few intervals per thread instead of a copy of all points, and
//! the work is a merge of a handful of queues instead of a sort of tens of millions.
//!
//! If a thread's points ever arrived out of order (no method does that), the order is
//! flagged and the caller sorts instead.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::prepare::{Interval, Prepared};
use crate::Point;

/// What receives the points, in time order (on the merging thread, see [`crate::pipe`]).
pub(crate) trait Sink: Send {
    fn put(&mut self, p: Point);
}

impl Sink for Vec<Point> {
    fn put(&mut self, p: Point) {
        self.push(p);
    }
}

/// Intervals per block of [`Bounds`].
const BLOCK: usize = 64;

/// Smallest start of the intervals from index k on (a suffix minimum), kept per block
/// of [`BLOCK`] intervals plus the current block's own, not one per interval.
struct Bounds {
    /// Smallest start of the intervals from block b on.
    from_block: Vec<u64>,
    /// The current block: its index and the suffix minimum of each of its intervals.
    block: usize,
    local: [u64; BLOCK],
}

impl Bounds {
    fn new(iv: &[Interval]) -> Bounds {
        let blocks = iv.len().div_ceil(BLOCK);
        let mut from_block = vec![u64::MAX; blocks + 1];
        for b in (0..blocks).rev() {
            let m = iv[b * BLOCK..((b + 1) * BLOCK).min(iv.len())]
                .iter()
                .map(|i| i.start)
                .min()
                .unwrap_or(u64::MAX);
            from_block[b] = from_block[b + 1].min(m);
        }
        Bounds {
            from_block,
            block: usize::MAX,
            local: [u64::MAX; BLOCK],
        }
    }

    /// Smallest start of the intervals from `k` on; u64::MAX past the end.
    fn at(&mut self, iv: &[Interval], k: usize) -> u64 {
        let b = k / BLOCK;
        if b != self.block {
            self.block = b;
            let mut m = self.from_block.get(b + 1).copied().unwrap_or(u64::MAX);
            for j in (0..BLOCK).rev() {
                if let Some(i) = iv.get(b * BLOCK + j) {
                    m = m.min(i.start);
                }
                self.local[j] = m;
            }
        }
        self.local[k % BLOCK]
    }
}

/// The merge of the threads' points, handing them to the sink in time order.
pub(crate) struct Merge<'a> {
    sink: &'a mut dyn Sink,
    intervals: &'a [Interval],
    bounds: Bounds,
    queues: Vec<VecDeque<(u64, Point)>>,
    /// The points one release hands on, reused.
    ready: Vec<(u64, u64, Point)>,
    /// (time, emission order, slot) of each non-empty queue's head.
    heads: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Index of the interval being emitted, and its sample (to notice the next one).
    cur: usize,
    cur_sample: Option<u32>,
    seq: u64,
    pub records: u64,
    pub out_of_order: bool,
}

impl<'a> Merge<'a> {
    pub fn new(p: &'a Prepared, sink: &'a mut dyn Sink) -> Merge<'a> {
        let queues = (0..p.n_threads).map(|_| VecDeque::new()).collect();
        Merge {
            sink,
            intervals: &p.intervals,
            bounds: Bounds::new(&p.intervals),
            queues,
            ready: Vec::new(),
            heads: BinaryHeap::new(),
            cur: 0,
            cur_sample: None,
            seq: 0,
            records: 0,
            out_of_order: false,
        }
    }

    /// Releases every queued point at or before `bound`, oldest first (ties in order
    /// of emission). Each queue's releasable points are taken at once (a heap operation
    /// per queue, not per point) and the few taken are sorted.
    fn release(&mut self, bound: u64) {
        self.ready.clear();
        while let Some(&Reverse((t, _, slot))) = self.heads.peek() {
            if t > bound {
                break;
            }
            self.heads.pop();
            let Some(q) = self.queues.get_mut(slot as usize) else {
                continue;
            };
            while let Some(&(s, pt)) = q.front() {
                if pt.time_ns > bound {
                    self.heads.push(Reverse((pt.time_ns, s, slot)));
                    break;
                }
                self.ready.push((pt.time_ns, s, pt));
                q.pop_front();
            }
        }
        // (time, emission order) is unique, so any sort gives the one order.
        self.ready.sort_unstable_by_key(|&(t, s, _)| (t, s));
        for &(_, _, pt) in &self.ready {
            self.sink.put(pt);
        }
    }

    pub fn push(&mut self, pt: Point) {
        if self.cur_sample != Some(pt.sample) {
            if self.cur_sample.is_some() {
                self.cur += 1;
            }
            self.cur_sample = Some(pt.sample);
            let bound = self.bounds.at(self.intervals, self.cur);
            self.release(bound);
        }
        self.records += u64::from(pt.record.is_some());
        let slot = self.intervals.get(self.cur).map_or(0, |iv| iv.slot);
        let Some(q) = self.queues.get_mut(slot as usize) else {
            self.out_of_order = true;
            return;
        };
        if q.back().is_some_and(|(_, b)| b.time_ns > pt.time_ns) {
            self.out_of_order = true;
        }
        if q.is_empty() {
            self.heads.push(Reverse((pt.time_ns, self.seq, slot)));
        }
        q.push_back((self.seq, pt));
        self.seq += 1;
    }

    /// Releases what is left.
    pub fn finish(mut self) -> (u64, bool) {
        self.release(u64::MAX);
        (self.records, self.out_of_order)
    }
}
