//! The samples time assignment reads, in either form they are kept in: the model's
//! vector (a loaded profile) or columns (the page's index, which would otherwise rebuild
//! a 32-byte sample per row, hundreds of megabytes at scale, only to derive from it).

use kairos_model::{Sample, SampleColumns};

/// Samples read by index.
pub trait Owners: Sync {
    fn len(&self) -> usize;
    /// Sample `i`, None past the end.
    fn get(&self, i: usize) -> Option<Sample>;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Owners for [Sample] {
    fn len(&self) -> usize {
        <[Sample]>::len(self)
    }
    #[inline]
    fn get(&self, i: usize) -> Option<Sample> {
        <[Sample]>::get(self, i).copied()
    }
}

impl Owners for SampleColumns {
    fn len(&self) -> usize {
        SampleColumns::len(self)
    }
    #[inline]
    fn get(&self, i: usize) -> Option<Sample> {
        SampleColumns::get(self, i)
    }
}
