//! The pages of one process by address, in runs of consecutive pages on one node, each with
//! when a placement query last saw it. A newer query replaces the older answer where it saw
//! pages, and keeps the older one where they are gone since (freed or unmapped before the
//! end), so that an object freed before the program ends still has its placement.

use std::collections::BTreeMap;

/// One run: `[start, end)` on `node`, seen there by every query from `first_ns` to
/// `seen_ns` (CLOCK_MONOTONIC): an object alive at any time between them held these pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub start: u64,
    pub end: u64,
    pub node: u32,
    pub first_ns: u64,
    pub seen_ns: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunMap {
    /// start -> (end, node, first seen, last seen); runs never overlap.
    map: BTreeMap<u64, (u64, u32, u64, u64)>,
}

impl RunMap {
    /// Sets `[start, end)` to `node` seen at `seen_ns`, replacing what overlaps it; where
    /// the pages were on the same node already, they keep when they were first seen there.
    pub fn insert(&mut self, start: u64, end: u64, node: u32, seen_ns: u64) {
        if end <= start {
            return;
        }
        let overlapping: Vec<(u64, (u64, u32, u64, u64))> = self
            .map
            .range(..end)
            .rev()
            .take_while(|(_, &(e, _, _, _))| e > start)
            .map(|(&s, &v)| (s, v))
            .collect();
        // The new answer in pieces: under an old run on the same node it keeps that run's
        // first sighting, elsewhere it starts now.
        let mut pieces: Vec<(u64, u64, u64)> = Vec::new();
        let mut at = start;
        for &(s, (e, n, f, _)) in overlapping.iter().rev() {
            let (lo, hi) = (s.max(start), e.min(end));
            if lo > at {
                pieces.push((at, lo, seen_ns));
            }
            pieces.push((lo, hi, if n == node { f } else { seen_ns }));
            at = hi;
        }
        if at < end {
            pieces.push((at, end, seen_ns));
        }
        for (s, (e, n, f, t)) in overlapping {
            self.map.remove(&s);
            if s < start {
                self.map.insert(s, (start, n, f, t));
            }
            if e > end {
                self.map.insert(end, (e, n, f, t));
            }
        }
        for (lo, hi, first) in pieces {
            self.put(lo, hi, node, first, seen_ns);
        }
    }

    /// Inserts a run into a free range, joined with equal neighbours.
    fn put(&mut self, start: u64, end: u64, node: u32, first: u64, seen: u64) {
        let (mut start, mut end) = (start, end);
        if let Some((&s, &(e, n, f, t))) = self.map.range(..start).next_back() {
            if e == start && (n, f, t) == (node, first, seen) {
                self.map.remove(&s);
                start = s;
            }
        }
        if let Some(&(e, n, f, t)) = self.map.get(&end) {
            if (n, f, t) == (node, first, seen) {
                self.map.remove(&end);
                end = e;
            }
        }
        self.map.insert(start, (end, node, first, seen));
    }

    /// The run holding `addr`.
    pub fn get(&self, addr: u64) -> Option<Run> {
        let (&start, &(end, node, first_ns, seen_ns)) = self.map.range(..=addr).next_back()?;
        (addr < end).then_some(Run {
            start,
            end,
            node,
            first_ns,
            seen_ns,
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = Run> + '_ {
        self.map
            .iter()
            .map(|(&start, &(end, node, first_ns, seen_ns))| Run {
                start,
                end,
                node,
                first_ns,
                seen_ns,
            })
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(m: &RunMap) -> Vec<(u64, u64, u32, u64)> {
        m.iter()
            .map(|r| (r.start, r.end, r.node, r.seen_ns))
            .collect()
    }

    fn firsts(m: &RunMap) -> Vec<(u64, u64, u64)> {
        m.iter().map(|r| (r.start, r.end, r.first_ns)).collect()
    }

    #[test]
    fn newer_answers_replace_older_ones_where_they_overlap() {
        let mut m = RunMap::default();
        m.insert(0x1000, 0x9000, 0, 1);
        m.insert(0x3000, 0x5000, 1, 2);
        assert_eq!(
            all(&m),
            vec![
                (0x1000, 0x3000, 0, 1),
                (0x3000, 0x5000, 1, 2),
                (0x5000, 0x9000, 0, 1)
            ]
        );
        assert_eq!(m.get(0x4fff).map(|r| r.node), Some(1));
        assert_eq!(m.get(0x9000), None);
        assert_eq!(m.get(0x0fff), None);
        // Covering several runs at once: pages still on node 0 keep their first sighting.
        m.insert(0x2000, 0x8000, 0, 3);
        m.insert(0x8000, 0xa000, 0, 3);
        assert_eq!(
            all(&m),
            vec![
                (0x1000, 0x2000, 0, 1),
                (0x2000, 0x3000, 0, 3),
                (0x3000, 0x5000, 0, 3),
                (0x5000, 0x9000, 0, 3),
                (0x9000, 0xa000, 0, 3)
            ]
        );
        assert_eq!(
            firsts(&m),
            vec![
                (0x1000, 0x2000, 1),
                (0x2000, 0x3000, 1),
                (0x3000, 0x5000, 3),
                (0x5000, 0x9000, 1),
                (0x9000, 0xa000, 3)
            ]
        );
        // Nothing for an empty range.
        m.insert(0x5000, 0x5000, 1, 4);
        assert_eq!(m.len(), 5);
    }

    #[test]
    fn runs_of_a_later_query_join_on_both_sides() {
        let mut m = RunMap::default();
        m.insert(0x1000, 0x2000, 1, 5);
        m.insert(0x3000, 0x4000, 1, 5);
        m.insert(0x2000, 0x3000, 1, 5);
        assert_eq!(all(&m), vec![(0x1000, 0x4000, 1, 5)]);
    }
}
