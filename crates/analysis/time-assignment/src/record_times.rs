//! Where each branch record's point is, kept for the new records only.
//!
//! Only records with `is_new` get a point, about a third of them at depth 16, and at
//! scale a value per record is over a gigabyte of fresh memory, so values are stored by
//! rank among the new records: a bit per record says whether it is new, and a count per
//! block of 64 records gives the rank with one popcount. The value is the row of the
//! record's point in the derived samples (4 bytes), whose time column holds its time:
//! the time is not kept twice.

#[cfg(test)]
use kairos_model::BranchRecord;

/// Rows of branch records' points, looked up by the record's index in the profile's
/// branches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordTimes {
    /// Records covered (the profile's branches; 0 when no record gets a time).
    records: usize,
    /// Bit k of word w: record 64 w + k is new.
    is_new: Vec<u64>,
    /// New records before each word.
    before: Vec<u32>,
    /// Row of each new record's point by rank, [`UNSET`] until it gets one.
    rows: Vec<u32>,
}

/// Rank with no point (also for a row past `u32::MAX - 1`, which is not kept).
const UNSET: u32 = u32::MAX;

impl RecordTimes {
    /// Room for a row per new record of `branches`, none set yet.
    #[cfg(test)]
    pub(crate) fn for_records(branches: &[BranchRecord]) -> RecordTimes {
        let is_new: Vec<u64> = branches
            .chunks(64)
            .map(|chunk| {
                chunk
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (k, b)| w | (u64::from(b.is_new) << k))
            })
            .collect();
        RecordTimes::from_bits(branches.len(), &is_new)
    }

    /// Room for a row per new record of `records` records, whose `is_new` flags are
    /// the bits of `is_new` (bit k of word w: record 64 w + k), none set yet.
    pub(crate) fn from_bits(records: usize, is_new: &[u64]) -> RecordTimes {
        let is_new = is_new
            .get(..records.div_ceil(64))
            .unwrap_or(is_new)
            .to_vec();
        let mut before = Vec::with_capacity(is_new.len());
        let mut rank = 0u32;
        for w in &is_new {
            before.push(rank);
            rank = rank.saturating_add(w.count_ones());
        }
        RecordTimes {
            records,
            is_new,
            before,
            rows: vec![UNSET; rank as usize],
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

    pub(crate) fn set(&mut self, i: usize, row: usize) {
        if let Some(r) = self.rank(i).and_then(|r| self.rows.get_mut(r)) {
            *r = u32::try_from(row).unwrap_or(UNSET);
        }
    }

    /// Row of record `i`'s point in the derived samples; None for a record that got no
    /// point (not new, or its sample does not exist) and past the records covered
    /// (every record for `none`).
    pub fn row(&self, i: usize) -> Option<usize> {
        if i >= self.records {
            return None;
        }
        let r = *self.rank(i).and_then(|r| self.rows.get(r))?;
        (r != UNSET).then_some(r as usize)
    }

    /// Time of record `i` given the derived samples' times (see [`RecordTimes::row`]).
    pub fn time(&self, i: usize, times: &[u64]) -> Option<u64> {
        self.row(i).and_then(|r| times.get(r).copied())
    }

    /// Records that can get a point (the new ones).
    pub(crate) fn new_records(&self) -> usize {
        self.rows.len()
    }

    /// Records covered.
    pub fn len(&self) -> usize {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// One time per record (`u64::MAX` without a point), as [`RecordTimes::time`]
    /// gives them.
    pub fn to_vec(&self, times: &[u64]) -> Vec<u64> {
        (0..self.records)
            .map(|i| self.time(i, times).unwrap_or(u64::MAX))
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
        // Record i's point in row 199 - i of these times.
        let times: Vec<u64> = (0..200).map(|r| 1000 + 199 - r as u64).collect();
        for i in 0..200 {
            t.set(i, 199 - i);
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
        assert_eq!(t.to_vec(&times), want);
        assert_eq!(t.time(199, &times), None);
        assert_eq!(t.time(198, &times), Some(1198));
        assert_eq!(t.row(198), Some(1));
        assert_eq!(t.time(200, &times), None);
        assert_eq!(t.len(), 200);
    }

    #[test]
    fn unset_and_empty() {
        let mut t = RecordTimes::for_records(&[rec(true), rec(false)]);
        assert_eq!(t.to_vec(&[5]), vec![u64::MAX, u64::MAX]);
        // A row that does not fit is not kept, and a row past the times has no time.
        t.set(0, usize::MAX);
        assert_eq!(t.row(0), None);
        t.set(0, 3);
        assert_eq!((t.row(0), t.time(0, &[5])), (Some(3), None));
        let e = RecordTimes::default();
        assert!(e.is_empty());
        assert_eq!(e.row(0), None);
    }
}
