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

/// Bound on the key bytes kept: past it the cache starts over, so a recording whose
/// chains never repeat cannot make it grow without limit.
const MAX_BYTES: usize = 128 << 20;
/// Bound on the frame cache's entries, for the same reason.
const MAX_FRAMES: usize = 4 << 20;

const K: u64 = 0x9e37_79b9_7f4a_7c15;

#[inline]
fn mix(lane: u64, w: u64) -> u64 {
    (lane ^ w).wrapping_mul(K).rotate_left(31)
}

/// A hash of a key given as a few leading words and the little-endian bytes of the rest,
/// read in place (the call chain as it lies in the record: nothing is copied). The rest
/// goes four words at a time into independent lanes: a chain of a deep recursion is a
/// hundred words, and one multiply chain through all of them would take longer than the
/// rest of the sample's conversion. (Equal keys are still compared.)
fn hash_key(head: &[u64], rest: &[u8]) -> u64 {
    let mut lanes = [
        0x243f_6a88_85a3_08d3u64,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    ];
    for (i, &w) in head.iter().enumerate() {
        lanes[i % 4] = mix(lanes[i % 4], w);
    }
    let chunks = rest.chunks_exact(32);
    let tail = chunks.remainder();
    for c in chunks {
        for (lane, w) in lanes.iter_mut().zip(c.chunks_exact(8)) {
            *lane = mix(*lane, le(w));
        }
    }
    for (lane, w) in lanes.iter_mut().zip(tail.chunks(8)) {
        *lane = mix(*lane, le(w));
    }
    let mut h = (head.len() * 8 + rest.len()) as u64;
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 32)
}

/// Little-endian u64 of up to 8 bytes (missing high bytes are 0).
#[inline]
fn le(b: &[u8]) -> u64 {
    if let Some(a) = b.first_chunk::<8>() {
        return u64::from_le_bytes(*a);
    }
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    u64::from_le_bytes(a)
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

/// Where a key's bytes are in `ChainCache::bytes`, and its node.
#[derive(Clone, Copy)]
struct Entry {
    start: u32,
    len: u32,
    node: Option<u32>,
}

/// See `ChainCache::recent`.
#[derive(Default)]
struct Recent {
    head: [u64; 3],
    rest: Vec<u8>,
    node: Option<u32>,
}

/// Slots of `ChainCache::recent`.
const RECENT_SLOTS: usize = 256;

/// Chain (a few leading words, then the raw bytes of the rest) -> raw stack node.
#[derive(Default)]
pub struct ChainCache {
    /// By hash of the key. Distinct keys with one hash (rare) go to `collisions`.
    map: FxHashMap<u64, Entry>,
    collisions: FxHashMap<u64, Vec<Entry>>,
    /// Every key, as the little-endian bytes of its words.
    bytes: Vec<u8>,
    /// A key built by the caller (see [`ChainCache::own_key`]).
    own: Vec<u8>,
    /// The last key seen in each slot (by CPU) and its node: consecutive samples of a CPU
    /// mostly have the very same chain (three in four in system-wide recordings), which a
    /// comparison with the previous one finds without hashing or probing the map.
    recent: Vec<Recent>,
    /// Hash of the key last looked up.
    hash: u64,
    /// Tests: every key gets this hash, to exercise collisions.
    #[cfg(test)]
    same_hash: bool,
}

impl ChainCache {
    fn matches(&self, e: &Entry, head: &[u64], rest: &[u8]) -> bool {
        let Some(key) = self
            .bytes
            .get(e.start as usize..e.start as usize + e.len as usize)
        else {
            return false;
        };
        let n = head.len() * 8;
        key.len() == n + rest.len()
            && key[n..] == *rest
            && key.chunks_exact(8).zip(head).all(|(k, &w)| le(k) == w)
    }

    /// The node of the key made of `head` then `rest` (little-endian words), if cached.
    pub fn get(&mut self, head: &[u64], rest: &[u8]) -> Option<Option<u32>> {
        self.hash = hash_key(head, rest);
        #[cfg(test)]
        if self.same_hash {
            self.hash = 0;
        }
        let e = self.map.get(&self.hash)?;
        if self.matches(e, head, rest) {
            return Some(e.node);
        }
        let others = self.collisions.get(&self.hash)?;
        others
            .iter()
            .find(|e| self.matches(e, head, rest))
            .map(|e| e.node)
    }

    /// [`ChainCache::get`] for a key of three leading words, trying first the last key
    /// of `slot` (the sample's CPU). [`ChainCache::insert_recent`] after a miss.
    pub fn get_recent(&mut self, slot: u32, head: &[u64; 3], rest: &[u8]) -> Option<Option<u32>> {
        let slot = slot as usize % RECENT_SLOTS;
        if let Some(r) = self.recent.get(slot) {
            if r.head == *head && r.rest == rest {
                return Some(r.node);
            }
        }
        let node = self.get(head, rest)?;
        self.remember(slot, head, rest, node);
        Some(node)
    }

    /// [`ChainCache::insert_last`] after a miss of [`ChainCache::get_recent`].
    pub fn insert_recent(&mut self, slot: u32, head: &[u64; 3], rest: &[u8], node: Option<u32>) {
        self.insert_last(head, rest, node);
        self.remember(slot as usize % RECENT_SLOTS, head, rest, node);
    }

    fn remember(&mut self, slot: usize, head: &[u64; 3], rest: &[u8], node: Option<u32>) {
        if self.recent.len() <= slot {
            self.recent.resize_with(slot + 1, Recent::default);
        }
        let r = &mut self.recent[slot];
        r.head = *head;
        r.rest.clear();
        r.rest.extend_from_slice(rest);
        r.node = node;
    }

    /// A buffer, cleared, for a key that is not in a record as is (an unwound chain):
    /// fill it, then call [`ChainCache::get_own`].
    pub fn own_key(&mut self) -> &mut Vec<u8> {
        self.own.clear();
        &mut self.own
    }

    /// [`ChainCache::get`] with the key `head` then the buffer of [`ChainCache::own_key`].
    pub fn get_own(&mut self, head: &[u64]) -> Option<Option<u32>> {
        let own = std::mem::take(&mut self.own);
        let found = self.get(head, &own);
        self.own = own;
        found
    }

    /// [`ChainCache::insert_last`] for the key of [`ChainCache::get_own`].
    pub fn insert_own(&mut self, head: &[u64], node: Option<u32>) {
        let own = std::mem::take(&mut self.own);
        self.insert_last(head, &own, node);
        self.own = own;
    }

    /// Remembers `node` for the key last passed to [`ChainCache::get`] (which missed).
    pub fn insert_last(&mut self, head: &[u64], rest: &[u8], node: Option<u32>) {
        let len = head.len() * 8 + rest.len();
        if self.bytes.len() + len > MAX_BYTES {
            self.map.clear();
            self.collisions.clear();
            self.bytes.clear();
        }
        let e = Entry {
            start: self.bytes.len() as u32,
            len: len as u32,
            node,
        };
        for w in head {
            self.bytes.extend_from_slice(&w.to_le_bytes());
        }
        self.bytes.extend_from_slice(rest);
        match self.map.entry(self.hash) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(e);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.collisions.entry(self.hash).or_default().push(e)
            }
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
        if self.map.len() >= MAX_FRAMES {
            self.map.clear();
        }
        self.map.insert((process, address, flags), id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn lookup(c: &mut ChainCache, words: &[u64]) -> Option<Option<u32>> {
        let (head, rest) = words.split_at(words.len().min(2));
        c.get(head, &bytes(rest))
    }

    fn insert(c: &mut ChainCache, words: &[u64], node: Option<u32>) {
        let (head, rest) = words.split_at(words.len().min(2));
        c.insert_last(head, &bytes(rest), node);
    }

    #[test]
    fn hits_only_for_the_same_words() {
        let mut c = ChainCache::default();
        assert_eq!(lookup(&mut c, &[1, 2, 3]), None);
        insert(&mut c, &[1, 2, 3], Some(7));
        assert_eq!(lookup(&mut c, &[1, 2]), None);
        insert(&mut c, &[1, 2], None);
        assert_eq!(lookup(&mut c, &[1, 2, 3]), Some(Some(7)));
        assert_eq!(lookup(&mut c, &[1, 2]), Some(None));
        assert_eq!(lookup(&mut c, &[1, 2, 3, 0]), None);
        assert_eq!(lookup(&mut c, &[2, 1, 3]), None);
    }

    #[test]
    fn the_recent_key_of_a_slot_is_only_a_shortcut() {
        let mut c = ChainCache::default();
        let (a, b) = ([1, 2, 3], [1, 2, 4]);
        assert_eq!(c.get_recent(0, &a, &bytes(&[9])), None);
        c.insert_recent(0, &a, &bytes(&[9]), Some(1));
        assert_eq!(c.get_recent(0, &a, &bytes(&[9])), Some(Some(1)));
        assert_eq!(c.get_recent(0, &b, &bytes(&[9])), None);
        c.insert_recent(0, &b, &bytes(&[9]), Some(2));
        // Another slot, and the first key again through the map.
        assert_eq!(c.get_recent(7, &b, &bytes(&[9])), Some(Some(2)));
        assert_eq!(c.get_recent(0, &a, &bytes(&[9])), Some(Some(1)));
        assert_eq!(c.get_recent(0, &a, &bytes(&[9, 0])), None);
        assert_eq!(c.get_recent(0, &a, &[]), None);
    }

    #[test]
    fn colliding_hashes_keep_keys_apart() {
        let mut c = ChainCache {
            same_hash: true,
            ..ChainCache::default()
        };
        for (i, key) in [[1, 2], [3, 4], [5, 6]].iter().enumerate() {
            assert_eq!(lookup(&mut c, key), None);
            insert(&mut c, key, Some(i as u32));
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
