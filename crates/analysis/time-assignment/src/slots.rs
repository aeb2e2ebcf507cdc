//! Per-thread state without hashing: threads get dense slots once, in `prepare`, and
//! every later per-thread table is a plain vector indexed by slot.

use std::collections::HashMap;

use kairos_model::ThreadIdx;

/// Thread indices below this are looked up in a vector; larger ones (only in damaged
/// profiles) in a map.
const DIRECT: usize = 1 << 16;

#[derive(Debug, Default)]
pub(crate) struct ThreadSlots {
    direct: Vec<u32>,
    other: HashMap<ThreadIdx, u32>,
    pub count: u32,
}

impl ThreadSlots {
    /// The slot of `t`, given a new one the first time.
    pub fn of(&mut self, t: ThreadIdx) -> u32 {
        let next = self.count;
        let i = t as usize;
        let s = if i < DIRECT {
            if self.direct.len() <= i {
                self.direct.resize(i + 1, u32::MAX);
            }
            if self.direct[i] == u32::MAX {
                self.direct[i] = next;
            }
            self.direct[i]
        } else {
            *self.other.entry(t).or_insert(next)
        };
        if s == next {
            self.count += 1;
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_dense_in_order_of_first_sight() {
        let mut s = ThreadSlots::default();
        let got: Vec<u32> = [7, 0, 7, u32::MAX, 3, 0, u32::MAX]
            .iter()
            .map(|&t| s.of(t))
            .collect();
        assert_eq!(got, vec![0, 1, 0, 2, 3, 1, 2]);
        assert_eq!(s.count, 4);
    }
}
