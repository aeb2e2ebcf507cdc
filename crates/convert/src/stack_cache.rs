//! Identical call chains are common (a hot loop is sampled thousands of times from the
//! same place): remember which raw stack node each (pid, chain) became, so that only the
//! first occurrence pays for mapping lookups and per-frame interning.
//!
//! Entries are only valid while the process's mappings are unchanged, so the owner clears
//! the cache whenever a mapping, exec or fork record arrives.

use rustc_hash::FxHashMap;

use crate::callchain::ChainEntry;

#[derive(Default)]
pub struct StackCache {
    /// Key: pid followed by (address, mode|return flag) pairs of the chain.
    map: FxHashMap<Box<[u64]>, Option<u32>>,
    scratch: Vec<u64>,
}

impl StackCache {
    /// The cached node for this chain, if it was converted before.
    pub fn get(&mut self, pid: i32, chain: &[ChainEntry]) -> Option<Option<u32>> {
        self.encode(pid, chain);
        self.map.get(self.scratch.as_slice()).copied()
    }

    /// Remembers the node of the chain last passed to [`StackCache::get`].
    pub fn insert_last(&mut self, node: Option<u32>) {
        self.map.insert(self.scratch.clone().into_boxed_slice(), node);
    }

    pub fn clear(&mut self) {
        self.map.clear();
    }

    fn encode(&mut self, pid: i32, chain: &[ChainEntry]) {
        self.scratch.clear();
        self.scratch.push(pid as u32 as u64);
        for e in chain {
            self.scratch.push(e.address);
            self.scratch.push(e.mode as u64 | (u64::from(e.is_return_address) << 8));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_model::Mode;

    #[test]
    fn hits_only_for_same_pid_and_chain() {
        let chain = [ChainEntry { address: 1, mode: Mode::User, is_return_address: false }];
        let mut c = StackCache::default();
        assert_eq!(c.get(1, &chain), None);
        c.insert_last(Some(7));
        assert_eq!(c.get(1, &chain), Some(Some(7)));
        assert_eq!(c.get(2, &chain), None);
        let other = [ChainEntry { address: 1, mode: Mode::Kernel, is_return_address: false }];
        assert_eq!(c.get(1, &other), None);
        c.clear();
        assert_eq!(c.get(1, &chain), None);
    }
}
