//! The raw stack tree, built once at the end from the distinct chains rather than node
//! by node while records stream by.
//!
//! Interning each new node into a hash map of (parent, frame) costs a cache miss or two
//! per node, and a large recording has hundreds of thousands of nodes. Here the distinct
//! chains are only collected (frame ids, root first); at the end they are sorted, so that
//! chains sharing a prefix are neighbours and share its nodes, and the nodes are then
//! numbered in the order in which interning the chains one after the other would have
//! made them: the same tree, with the same numbers.

use kairos_model::Stack;

/// Distinct chains as raw frame ids, root first, numbered in order of appearance.
#[derive(Default)]
pub struct Chains {
    frames: Vec<u32>,
    /// Start of each chain in `frames`; chain `c` ends where `c + 1` starts.
    starts: Vec<usize>,
}

impl Chains {
    /// Adds a chain; returns its number.
    pub fn push(&mut self, root_first: &[u32]) -> u32 {
        self.starts.push(self.frames.len());
        self.frames.extend_from_slice(root_first);
        (self.starts.len() - 1) as u32
    }

    fn range(&self, c: usize) -> std::ops::Range<usize> {
        let start = self.starts[c];
        start..self.starts.get(c + 1).copied().unwrap_or(self.frames.len())
    }

    fn chain(&self, c: usize) -> &[u32] {
        &self.frames[self.range(c)]
    }

    /// The tree's nodes (parents before children) and each chain's leaf node (`None` for
    /// an empty chain).
    pub fn build(&self) -> (Vec<Stack>, Vec<Option<u32>>) {
        let n = self.starts.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by(|&a, &b| self.chain(a as usize).cmp(self.chain(b as usize)));
        // Node of each (chain, depth), numbered in sorted order: a chain shares with the
        // previous sorted chain the nodes of their common prefix, and only those.
        let mut sorted_node = vec![0u32; self.frames.len()];
        let mut count = 0u32;
        let mut prev: Option<usize> = None;
        for &c in &order {
            let (c, r) = (c as usize, self.range(c as usize));
            let common = match prev {
                Some(p) => {
                    let (pr, pc) = (self.range(p), self.chain(p));
                    let common = pc
                        .iter()
                        .zip(&self.frames[r.clone()])
                        .take_while(|(a, b)| a == b)
                        .count();
                    sorted_node.copy_within(pr.start..pr.start + common, r.start);
                    common
                }
                None => 0,
            };
            for slot in &mut sorted_node[r.start + common..r.end] {
                *slot = count;
                count += 1;
            }
            prev = Some(c);
        }
        // Number the nodes in order of first use by the chains in their own order.
        let mut id = vec![u32::MAX; count as usize];
        let mut nodes = Vec::with_capacity(count as usize);
        let mut leaves = Vec::with_capacity(n);
        for c in 0..n {
            let r = self.range(c);
            let mut parent = None;
            for (&frame, &s) in self.frames[r.clone()].iter().zip(&sorted_node[r]) {
                if id[s as usize] == u32::MAX {
                    id[s as usize] = nodes.len() as u32;
                    nodes.push(Stack { parent, frame });
                }
                parent = Some(id[s as usize]);
            }
            leaves.push(parent);
        }
        (nodes, leaves)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_model::StackInterner;

    #[test]
    fn same_tree_and_numbers_as_interning_in_order() {
        let mut x: u64 = 7;
        let mut rnd = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for round in 0..50 {
            let mut chains = Chains::default();
            let (mut want, mut interner, mut want_leaves) =
                (Vec::new(), StackInterner::default(), Vec::new());
            let mut previous: Vec<u32> = Vec::new();
            for _ in 0..(1 + rnd(200)) {
                // Often a variation of the previous chain, as in real recordings.
                let keep = if previous.is_empty() {
                    0
                } else {
                    rnd(previous.len() as u64 + 1) as usize
                };
                let mut chain: Vec<u32> = previous[..keep].to_vec();
                for _ in 0..rnd(6 + round % 5) {
                    chain.push(rnd(8) as u32);
                }
                chains.push(&chain);
                want_leaves.push(interner.intern_path(&mut want, chain.iter().copied()));
                previous = chain;
            }
            let (got, leaves) = chains.build();
            assert_eq!(got, want, "round {round}");
            assert_eq!(leaves, want_leaves, "round {round}");
        }
    }
}
