//! Records in time order, as perf report replays them (its ordered events). A recording
//! is written one CPU's ring after another, so a sample taken on one CPU can come before
//! the MMAP or COMM it depends on, written from another CPU's ring later in the same
//! round: replayed in file order, a program sampled just after its exec has no mappings
//! yet and its frames are unknown; and a sample of the old image that follows an exec
//! in the file would see the new one.
//!
//! A first look at each record takes its time stamp only ([`Records::peek_next`]); the
//! records wait in a queue, and at each FINISHED_ROUND those no later than the newest
//! record before the previous FINISHED_ROUND (perf's guarantee: nothing older can come)
//! are decoded and replayed, sorted by time, file order among equals; the rest at the
//! end. A record without a time stamp takes the one of the record before it.

use kairos_perf_data::{Records, PERF_RECORD_FINISHED_ROUND};

/// Queue entries before a forced flush of the older half, for files without rounds.
const MAX_PENDING: usize = 1 << 22;

#[derive(Default)]
pub(crate) struct Ordered {
    /// (time, position of the record), in file order.
    pending: Vec<(u64, usize)>,
    /// Time of the record read last, for records without one.
    last: u64,
    /// Newest time read so far, and the newest before the last FINISHED_ROUND.
    newest: u64,
    newest_at_round: u64,
    ready: Vec<usize>,
}

/// What the first look found next.
pub(crate) enum Look<'r> {
    /// Records to replay now, in order (possibly none).
    Ready(&'r [usize]),
    /// The end of what can be framed: replay [`Ordered::rest`]; the main decoder says
    /// whether the data ended or a record was malformed at `position`.
    End { position: usize },
}

impl Ordered {
    /// Looks at the next record of `look` (a copy of the records used to only peek).
    pub fn next<'r>(&'r mut self, look: &mut Records<'_>) -> Look<'r> {
        let position = look.record_position();
        let Some(p) = look.peek_next() else {
            return Look::End { position };
        };
        if p.record_type == PERF_RECORD_FINISHED_ROUND {
            return Look::Ready(self.round());
        }
        self.push(p.time, p.position);
        Look::Ready(self.overflow())
    }

    fn push(&mut self, time: Option<u64>, position: usize) {
        let t = time.unwrap_or(self.last);
        self.last = t;
        self.newest = self.newest.max(t);
        self.pending.push((t, position));
    }

    fn round(&mut self) -> &[usize] {
        let limit = self.newest_at_round;
        self.newest_at_round = self.newest;
        self.take(|t| t <= limit)
    }

    /// Without rounds the queue would hold the whole file: past a bound, the older half.
    fn overflow(&mut self) -> &[usize] {
        if self.pending.len() < MAX_PENDING {
            self.ready.clear();
            return &self.ready;
        }
        let mut times: Vec<u64> = self.pending.iter().map(|p| p.0).collect();
        let mid = times.len() / 2;
        let (_, &mut median, _) = times.select_nth_unstable(mid);
        self.take(|t| t < median.max(1))
    }

    /// Everything left, in time order.
    pub fn rest(&mut self) -> &[usize] {
        self.take(|_| true)
    }

    /// Oldest position still waiting, if any: what must stay readable.
    pub fn oldest_position(&self) -> Option<usize> {
        self.pending.iter().map(|p| p.1).min()
    }

    fn take(&mut self, now: impl Fn(u64) -> bool) -> &[usize] {
        // Stable: equal times keep file order.
        self.pending.sort_by_key(|p| p.0);
        let n = self.pending.partition_point(|p| now(p.0));
        self.ready.clear();
        self.ready.extend(self.pending.drain(..n).map(|p| p.1));
        &self.ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_replays_what_no_later_record_can_precede() {
        let mut o = Ordered::default();
        // Round 1: CPU 0's ring (times 10, 30), then CPU 1's (20: an MMAP, say).
        o.push(Some(10), 0);
        o.push(Some(30), 1);
        o.push(Some(20), 2);
        // Nothing is certain at the first round: round 2 may still hold a 25.
        assert!(o.round().is_empty());
        o.push(Some(25), 3);
        o.push(None, 4); // no time: right after the 25 before it
        o.push(Some(40), 5);
        // Up to round 1's newest (30), sorted; file order among equal times.
        assert_eq!(o.round(), [0, 2, 3, 4, 1]);
        assert_eq!(o.oldest_position(), Some(5));
        assert_eq!(o.rest(), [5]);
        assert!(o.rest().is_empty());
    }

    #[test]
    fn a_file_without_rounds_is_bounded() {
        let mut o = Ordered::default();
        for i in 0..MAX_PENDING {
            o.push(Some((i % 1000) as u64), i);
        }
        let n = o.overflow().len();
        assert!(n > 0 && n < MAX_PENDING, "{n}");
        assert_eq!(o.pending.len() + n, MAX_PENDING);
    }
}
