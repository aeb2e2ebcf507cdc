//! The time each branch record was given, kept for the new records only.
//!
//! Only records with `is_new` get a point, about a third of them at depth 16, and at
//! scale a time per record is over a gigabyte of fresh memory, so times are stored by
//! rank among the new records: a bit per record says whether it is new, and a count per
//! block of 64 records gives the rank with one popcount.

use kairos_model::BranchRecord;

/// Times of branch records, looked up by the record's index in the profile's branches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordTimes {
    /// Records covered (the profile's branches; 0 when no record gets a time).
    records: usize,
    /// Bit k of word w: record 64 w + k is new.
    is_new: Vec<u64>,
    /// New records before each word.
    before: Vec<u32>,
    /// Time of each new record by rank, `u64::MAX` until it gets a point.
    times: Vec<u64>,
}

impl RecordTimes {
    /// Room for a time per new record of `branches`, none set yet.
    pub(crate) fn for_records(branches: &[BranchRecord]) -> RecordTimes {
        let words = branches.len().div_ceil(64);
        let (mut is_new, mut before) = (Vec::with_capacity(words), Vec::with_capacity(words));
        let mut rank = 0u32;
        for chunk in branches.chunks(64) {
            let w = chunk
                .iter()
                .enumerate()
                .fold(0u64, |w, (k, b)| w | (u64::from(b.is_new) << k));
            is_new.push(w);
            before.push(rank);
            rank = rank.saturating_add(w.count_ones());
        }
        RecordTimes {
            records: branches.len(),
            is_new,
            before,
            times: vec![u64::MAX; rank as usize],
        }
    }

    /// Rank among the new records of record `i`, None when it is not new.
    fn rank(&self, i: usize) -> Option<usize> {
        let (w, k) = (i / 64, i % 64);
        let bits = *self.is_new.get(w)?;
        if bits & (1 << k) == 0 {
            return None;
        }
        let below = (bits & ((1u64 << k) - 1)).count_ones();
        Some(*self.before.get(w)? as usize + below as usize)
    }

    pub(crate) fn set(&mut self, i: usize, time_ns: u64) {
        if let Some(t) = self.rank(i).and_then(|r| self.times.get_mut(r)) {
            *t = time_ns;
        }
    }

    /// The time of record `i`: `u64::MAX` for a record that got no point (not new, or its
    /// sample does not exist); None past the records covered (every record for `none`).
    /// The same answers as a vector with one time per record.
    pub fn get(&self, i: usize) -> Option<&u64> {
        if i >= self.records {
            return None;
        }
        Some(
            self.rank(i)
                .and_then(|r| self.times.get(r))
                .unwrap_or(&u64::MAX),
        )
    }

    /// Records that can get a time (the new ones).
    pub(crate) fn new_records(&self) -> usize {
        self.times.len()
    }

    /// Records covered.
    pub fn len(&self) -> usize {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// One time per record, as [`RecordTimes::get`] gives them.
    pub fn to_vec(&self) -> Vec<u64> {
        (0..self.records)
            .map(|i| self.get(i).copied().unwrap_or(u64::MAX))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(is_new: bool) -> BranchRecord {
        BranchRecord {
            sample: 0,
            position: 0,
            from_address: 0,
            to_address: 0,
            from_frame: None,
            to_frame: None,
            kind: kairos_model::BranchKind::Call,
            cycles: None,
            mispredicted: false,
            is_new,
        }
    }

    #[test]
    fn times_of_new_records_by_index_across_words() {
        // 200 records: every third is new, so ranks cross word boundaries.
        let b: Vec<BranchRecord> = (0..200).map(|i| rec(i % 3 == 0)).collect();
        let mut t = RecordTimes::for_records(&b);
        for i in 0..200 {
            t.set(i, 1000 + i as u64);
        }
        let want: Vec<u64> = (0..200)
            .map(|i| {
                if i % 3 == 0 {
                    1000 + i as u64
                } else {
                    u64::MAX
                }
            })
            .collect();
        assert_eq!(t.to_vec(), want);
        assert_eq!(t.get(199), Some(&u64::MAX));
        assert_eq!(t.get(198), Some(&1198));
        assert_eq!(t.get(200), None);
        assert_eq!(t.len(), 200);
    }

    #[test]
    fn unset_and_empty() {
        let t = RecordTimes::for_records(&[rec(true), rec(false)]);
        assert_eq!(t.to_vec(), vec![u64::MAX, u64::MAX]);
        let e = RecordTimes::default();
        assert!(e.is_empty());
        assert_eq!(e.get(0), None);
    }
}
