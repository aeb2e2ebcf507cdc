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

use crate::prepare::Prepared;
use crate::Point;

/// What receives the points, in time order.
pub(crate) trait Sink {
    fn put(&mut self, p: Point);
}

impl Sink for Vec<Point> {
    fn put(&mut self, p: Point) {
        self.push(p);
    }
}

pub(crate) struct Out<'a> {
    sink: &'a mut dyn Sink,
    /// Smallest start of the intervals from index k on.
    min_start_from: Vec<u64>,
    /// Interval slot of each interval, to queue points per thread.
    slots: Vec<u32>,
    queues: Vec<VecDeque<(u64, Point)>>,
    /// (time, emission order, slot) of each non-empty queue's head.
    heads: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Index of the interval being emitted, and its sample (to notice the next one).
    cur: usize,
    cur_sample: Option<u32>,
    seq: u64,
    pub records: u64,
    pub out_of_order: bool,
}

impl<'a> Out<'a> {
    pub fn new(p: &Prepared, sink: &'a mut dyn Sink) -> Out<'a> {
        let n = p.intervals.len();
        let mut min_start_from = vec![u64::MAX; n + 1];
        for k in (0..n).rev() {
            min_start_from[k] = min_start_from[k + 1].min(p.intervals[k].start);
        }
        let slots = p.intervals.iter().map(|iv| iv.slot).collect();
        let queues = (0..p.n_threads).map(|_| VecDeque::new()).collect();
        Out {
            sink,
            min_start_from,
            slots,
            queues,
            heads: BinaryHeap::new(),
            cur: 0,
            cur_sample: None,
            seq: 0,
            records: 0,
            out_of_order: false,
        }
    }

    /// Releases every queued point at or before `bound`, oldest first.
    fn release(&mut self, bound: u64) {
        while let Some(&Reverse((t, _, slot))) = self.heads.peek() {
            if t > bound {
                break;
            }
            self.heads.pop();
            let q = &mut self.queues[slot as usize];
            if let Some((_, pt)) = q.pop_front() {
                self.sink.put(pt);
            }
            if let Some(&(s, next)) = q.front() {
                self.heads.push(Reverse((next.time_ns, s, slot)));
            }
        }
    }

    pub fn push(&mut self, pt: Point) {
        if self.cur_sample != Some(pt.sample) {
            if self.cur_sample.is_some() {
                self.cur += 1;
            }
            self.cur_sample = Some(pt.sample);
            let bound = self
                .min_start_from
                .get(self.cur)
                .copied()
                .unwrap_or(u64::MAX);
            self.release(bound);
        }
        self.records += u64::from(pt.record.is_some());
        let slot = self.slots.get(self.cur).copied().unwrap_or(0);
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
