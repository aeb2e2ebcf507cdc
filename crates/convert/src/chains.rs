//! Caches that make converting a large recording cost about one hash per sample.
//!
//! Identical call chains are the rule (a hot loop is sampled thousands of times from the
//! same place), so [`ChainCache`] remembers which raw stack node each chain became, keyed
//! by the chain's raw words as they lie in the file; only the first occurrence pays for
//! mapping look-ups and interning. [`FrameCache`] does the same per address for those
//! first occurrences.
//!
//! Both depend on a process's mappings, which MMAP, exec and fork records change. Rather
//! than clearing everything at each such record (system-wide files have many), each
//! process has a generation that is part of every key: changing a process's mappings
//! gives it a new generation, so only its own entries stop matching.

use rustc_hash::FxHashMap;

/// Bound on the words kept as keys (8 bytes each): past it the cache starts over, so a
/// recording whose chains never repeat cannot make it grow without limit.
const MAX_WORDS: usize = 16 << 20;

/// A hash of a key, four words at a time in independent lanes: a chain of a deep
/// recursion is a hundred words, and one multiply chain through all of them would take
/// longer than the rest of the sample's conversion. (Equal keys are still compared.)
fn hash_words(words: &[u64]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut lanes = [0x243f_6a88_85a3_08d3u64, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89];
    let chunks = words.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        for (lane, &w) in lanes.iter_mut().zip(c) {
            *lane = (*lane ^ w).wrapping_mul(K).rotate_left(31);
        }
    }
    for (lane, &w) in lanes.iter_mut().zip(rest) {
        *lane = (*lane ^ w).wrapping_mul(K).rotate_left(31);
    }
    let mut h = words.len() as u64;
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 32)
}

/// Per-process generations of the mappings.
#[derive(Default)]
pub struct Generations {
    by_pid: FxHashMap<i32, u32>,
    next: u32,
}

impl Generations {
    /// The process's mappings changed: entries made before no longer apply.
    pub fn bump(&mut self, pid: i32) {
        self.next = self.next.wrapping_add(1);
        self.by_pid.insert(pid, self.next);
    }

    /// The key word of a process: pid and generation (unique across processes, since
    /// generations come from one counter).
    pub fn key(&self, pid: i32) -> u64 {
        let generation = self.by_pid.get(&pid).copied().unwrap_or(0);
        (u64::from(generation) << 32) | u64::from(pid as u32)
    }
}

/// Where a key's words are in `ChainCache::words`, and its node.
#[derive(Clone, Copy)]
struct Entry {
    start: u32,
    len: u32,
    node: Option<u32>,
}

/// Chain (as a list of words) -> raw stack node.
#[derive(Default)]
pub struct ChainCache {
    /// By hash of the words. Distinct keys with one hash (rare) go to `collisions`.
    map: FxHashMap<u64, Entry>,
    collisions: FxHashMap<u64, Vec<Entry>>,
    words: Vec<u64>,
    /// The key being looked up, built by [`ChainCache::key`].
    scratch: Vec<u64>,
    hash: u64,
    /// Tests: every key gets this hash, to exercise collisions.
    #[cfg(test)]
    same_hash: bool,
}

impl ChainCache {
    /// Starts a new key; push its words, then call [`ChainCache::get`].
    pub fn key(&mut self) -> &mut Vec<u64> {
        self.scratch.clear();
        &mut self.scratch
    }

    fn words_of(&self, e: &Entry) -> &[u64] {
        self.words.get(e.start as usize..e.start as usize + e.len as usize).unwrap_or(&[])
    }

    /// The node of the key just built, if cached.
    pub fn get(&mut self) -> Option<Option<u32>> {
        self.hash = hash_words(&self.scratch);
        #[cfg(test)]
        if self.same_hash {
            self.hash = 0;
        }
        let e = self.map.get(&self.hash)?;
        if self.words_of(e) == self.scratch {
            return Some(e.node);
        }
        let others = self.collisions.get(&self.hash)?;
        others.iter().find(|e| self.words_of(e) == self.scratch).map(|e| e.node)
    }

    /// Remembers `node` for the key last passed to [`ChainCache::get`] (which missed).
    pub fn insert_last(&mut self, node: Option<u32>) {
        if self.words.len() + self.scratch.len() > MAX_WORDS {
            self.map.clear();
            self.collisions.clear();
            self.words.clear();
        }
        let e = Entry { start: self.words.len() as u32, len: self.scratch.len() as u32, node };
        self.words.extend_from_slice(&self.scratch);
        match self.map.entry(self.hash) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(e);
            }
            std::collections::hash_map::Entry::Occupied(_) => self.collisions.entry(self.hash).or_default().push(e),
        }
    }
}

/// (process key, address, mode and return flag) -> raw frame id.
#[derive(Default)]
pub struct FrameCache {
    map: FxHashMap<(u64, u64, u16), u32>,
}

impl FrameCache {
    pub fn get(&self, process: u64, address: u64, flags: u16) -> Option<u32> {
        self.map.get(&(process, address, flags)).copied()
    }

    pub fn insert(&mut self, process: u64, address: u64, flags: u16, id: u32) {
        if self.map.len() >= MAX_WORDS / 4 {
            self.map.clear();
        }
        self.map.insert((process, address, flags), id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(c: &mut ChainCache, words: &[u64]) -> Option<Option<u32>> {
        c.key().extend_from_slice(words);
        c.get()
    }

    #[test]
    fn hits_only_for_the_same_words() {
        let mut c = ChainCache::default();
        assert_eq!(lookup(&mut c, &[1, 2, 3]), None);
        c.insert_last(Some(7));
        assert_eq!(lookup(&mut c, &[1, 2]), None);
        c.insert_last(None);
        assert_eq!(lookup(&mut c, &[1, 2, 3]), Some(Some(7)));
        assert_eq!(lookup(&mut c, &[1, 2]), Some(None));
        assert_eq!(lookup(&mut c, &[1, 2, 3, 0]), None);
    }

    #[test]
    fn colliding_hashes_keep_keys_apart() {
        let mut c = ChainCache { same_hash: true, ..ChainCache::default() };
        for (i, key) in [[1, 2], [3, 4], [5, 6]].iter().enumerate() {
            assert_eq!(lookup(&mut c, key), None);
            c.insert_last(Some(i as u32));
        }
        assert_eq!(lookup(&mut c, &[3, 4]), Some(Some(1)));
        assert_eq!(lookup(&mut c, &[5, 6]), Some(Some(2)));
        assert_eq!(lookup(&mut c, &[1, 2]), Some(Some(0)));
        assert_eq!(lookup(&mut c, &[7, 8]), None);
    }

    #[test]
    fn a_new_generation_changes_only_that_process_key() {
        let mut g = Generations::default();
        let (a, b) = (g.key(10), g.key(11));
        g.bump(10);
        assert_ne!(g.key(10), a);
        assert_eq!(g.key(11), b);
        g.bump(11);
        assert_ne!(g.key(11), g.key(10));
    }
}
