//! Which records of a branch snapshot are new since the previous snapshot of the same
//! thread.
//!
//! The LBR is a ring read whole at every sample, so when few branches happen between two
//! samples the newer snapshot repeats the tail of the older one, shifted by the number of
//! new branches. Each record must be used once (time assignment would otherwise count it
//! twice), and a snapshot that shares nothing with a full previous one means the ring
//! wrapped: records were lost between the two samples.

/// A record reduced to what identifies it: (from, to).
pub type Key = (u64, u64);

/// Outcome for one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    /// Entries `[0..new)` (the newest) are new; entries at `new..` were in the previous
    /// snapshot.
    pub new: usize,
    /// No overlap with a previous snapshot although this one is full (`len == depth`):
    /// more branches happened between the two samples than the ring holds.
    pub overflowed: bool,
}

/// Compares `cur` with `prev` (both newest first). The shift `k` chosen is the smallest
/// for which `cur[k..] == prev[..n-k]` with at least one entry in common: the longest
/// overlap, because a long run of equal (from, to) pairs is far less likely to be a
/// coincidence than a single repeated pair (hot loops repeat single pairs all the time).
/// Without a previous snapshot every entry is new and nothing can be said about losses.
pub fn overlap(prev: Option<&[Key]>, cur: &[Key], depth: usize) -> Overlap {
    let n = cur.len();
    let Some(prev) = prev.filter(|p| !p.is_empty()) else {
        return Overlap {
            new: n,
            overflowed: false,
        };
    };
    for k in 0..n {
        let common = n - k;
        if common <= prev.len() && cur[k..] == prev[..common] {
            return Overlap {
                new: k,
                overflowed: false,
            };
        }
    }
    Overlap {
        new: n,
        overflowed: n > 0 && depth > 0 && n >= depth,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &[u64]) -> Vec<Key> {
        v.iter().map(|&x| (x, x + 1000)).collect()
    }

    #[test]
    fn full_overlap_means_nothing_new() {
        let p = keys(&[4, 3, 2, 1]);
        assert_eq!(
            overlap(Some(&p), &p, 4),
            Overlap {
                new: 0,
                overflowed: false
            }
        );
    }

    #[test]
    fn partial_overlap_keeps_the_newest() {
        // Two branches (6, 5) happened since the previous sample.
        let prev = keys(&[4, 3, 2, 1]);
        let cur = keys(&[6, 5, 4, 3]);
        assert_eq!(
            overlap(Some(&prev), &cur, 4),
            Overlap {
                new: 2,
                overflowed: false
            }
        );
        // A shorter previous snapshot (ring not yet full) still overlaps.
        let prev = keys(&[2, 1]);
        let cur = keys(&[3, 2, 1]);
        assert_eq!(overlap(Some(&prev), &cur, 4).new, 1);
    }

    #[test]
    fn no_overlap_with_a_full_ring_is_an_overflow() {
        let prev = keys(&[4, 3, 2, 1]);
        let cur = keys(&[9, 8, 7, 6]);
        assert_eq!(
            overlap(Some(&prev), &cur, 4),
            Overlap {
                new: 4,
                overflowed: true
            }
        );
        // Not full: the ring was cleared (context switch), nothing lost that we know of.
        assert_eq!(
            overlap(Some(&prev), &cur[..3], 4),
            Overlap {
                new: 3,
                overflowed: false
            }
        );
        // First snapshot of a thread: no verdict.
        assert_eq!(
            overlap(None, &cur, 4),
            Overlap {
                new: 4,
                overflowed: false
            }
        );
    }

    #[test]
    fn empty_snapshots() {
        let prev = keys(&[4, 3]);
        assert_eq!(
            overlap(Some(&prev), &[], 4),
            Overlap {
                new: 0,
                overflowed: false
            }
        );
        assert_eq!(
            overlap(Some(&[]), &prev, 2),
            Overlap {
                new: 2,
                overflowed: false
            }
        );
    }

    #[test]
    fn longest_overlap_wins_over_a_coincidental_pair() {
        // cur[3..] == prev[..1] (one pair) and cur[1..] == prev[..3] (three pairs).
        let prev = keys(&[5, 5, 5, 1]);
        let cur = keys(&[6, 5, 5, 5]);
        assert_eq!(overlap(Some(&prev), &cur, 4).new, 1);
    }
}
