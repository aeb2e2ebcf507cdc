//! Replays the allocation events in time order: totals, live blocks, peak, what is still
//! allocated at exit, per-object figures, size histogram and heap over time.
//!
//! Accounting (the same as valgrind DHAT's, so the two can be compared):
//! - every successful malloc, calloc, memalign-family call is one block of the requested size;
//! - a realloc of a live block counts as one more block of the new size (and the old one
//!   is released); realloc(NULL, n) is a malloc; realloc(p, 0) frees p;
//! - DHAT counts malloc(0) as 1 byte; Kairos counts 0 and reports how many there were;
//! - anonymous mmap regions are counted apart (DHAT does not see them); file mappings are
//!   not memory consumption and are only counted.

use std::collections::{BTreeMap, HashMap};

use crate::{AllocRow, Kind};

/// Hashing for the replay's address maps: addresses are not attacker-chosen here, and
/// SipHash was a third of the replay's time on millions of events. Multiply-rotate over
/// the written words (the FxHash idea).
#[derive(Debug, Clone, Copy, Default)]
pub struct FastHash;

#[derive(Debug, Clone, Copy, Default)]
pub struct FastHasher(u64);

impl std::hash::BuildHasher for FastHash {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher(0)
    }
}

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A memory object as VTune names them: allocation site and block size.
pub type ObjectKey = (Option<u32>, u64);

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectStats {
    pub bytes: u64,
    pub blocks: u64,
    pub leaked_bytes: u64,
    pub leaked_blocks: u64,
}

/// One time bucket of the heap timeline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bucket {
    pub start_ns: u64,
    /// Heap bytes in use at the end of the bucket.
    pub heap_end: u64,
    /// Highest heap bytes in use during the bucket.
    pub heap_max: u64,
    /// Anonymous mmap bytes mapped at the end of the bucket.
    pub mmap_end: u64,
    pub allocations: u64,
    pub allocated_bytes: u64,
    pub frees: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub heap_bytes: u64,
    pub heap_blocks: u64,
    pub reallocs: u64,
    pub zero_size: u64,
    pub frees: u64,
    /// free or realloc of an address not handed out while tracking (allocated before the
    /// tracker was active, or by the dynamic loader's own allocator).
    pub unknown_frees: u64,
    pub peak_heap_bytes: u64,
    pub peak_heap_blocks: u64,
    pub peak_time_ns: u64,
    pub leaked_bytes: u64,
    pub leaked_blocks: u64,
    pub mmap_bytes: u64,
    pub mmap_regions: u64,
    pub mmap_peak: u64,
    pub mmap_at_exit: u64,
    pub file_mappings: u64,
    pub end_ns: u64,
    pub threads: u64,
    pub processes: u64,
    pub objects: HashMap<ObjectKey, ObjectStats, FastHash>,
    /// Index i: blocks with size in [2^(i-1), 2^i) (index 0: size 0): (blocks, bytes).
    pub histogram: Vec<(u64, u64)>,
    pub timeline: Vec<Bucket>,
}

/// One step of the replay: a release or an acquisition, at a time.
enum Step {
    Release {
        process: u32,
        addr: u64,
    },
    Acquire {
        process: u32,
        addr: u64,
        size: u64,
        object: ObjectKey,
    },
    Unmap {
        process: u32,
        addr: u64,
        len: u64,
    },
    Map {
        process: u32,
        addr: u64,
        len: u64,
    },
}

/// Power-of-two bucket of a size.
pub fn size_class(size: u64) -> usize {
    if size == 0 {
        0
    } else {
        64 - size.leading_zeros() as usize
    }
}

/// Replays `rows` (any order); `bucket_ns` is the timeline's bucket width (0: no timeline).
pub fn replay(rows: &[AllocRow], bucket_ns: u64) -> Stats {
    let mut st = Stats {
        histogram: vec![(0, 0); 65],
        ..Default::default()
    };
    // Releases happen at the time before the call, acquisitions after it: expand, then sort.
    let mut steps: Vec<(u64, u8, Step)> = Vec::with_capacity(rows.len() + rows.len() / 4);
    let mut threads = std::collections::HashSet::new();
    let mut procs = std::collections::HashSet::new();
    for r in rows {
        threads.insert((r.process, r.tid));
        procs.insert(r.process);
        st.end_ns = st.end_ns.max(r.time_ns);
        let release_t = r.release_time_ns.unwrap_or(r.time_ns);
        let object = (r.site, r.size);
        let count_block = |st: &mut Stats| {
            st.heap_bytes += r.size;
            st.heap_blocks += 1;
            st.zero_size += u64::from(r.size == 0);
            let h = &mut st.histogram[size_class(r.size)];
            h.0 += 1;
            h.1 += r.size;
            let o = st.objects.entry(object).or_default();
            o.bytes += r.size;
            o.blocks += 1;
        };
        match r.kind {
            k if k.is_heap_alloc() => {
                count_block(&mut st);
                steps.push((
                    r.time_ns,
                    1,
                    Step::Acquire {
                        process: r.process,
                        addr: r.address,
                        size: r.size,
                        object,
                    },
                ));
            }
            Kind::Realloc => {
                let old = r.old_address.unwrap_or(0);
                if old != 0 {
                    st.reallocs += 1;
                    steps.push((
                        release_t,
                        0,
                        Step::Release {
                            process: r.process,
                            addr: old,
                        },
                    ));
                }
                if r.address != 0 {
                    count_block(&mut st);
                    steps.push((
                        r.time_ns,
                        1,
                        Step::Acquire {
                            process: r.process,
                            addr: r.address,
                            size: r.size,
                            object,
                        },
                    ));
                } else {
                    st.frees += 1;
                }
            }
            Kind::Free => {
                st.frees += 1;
                steps.push((
                    r.time_ns,
                    0,
                    Step::Release {
                        process: r.process,
                        addr: r.address,
                    },
                ));
            }
            Kind::Mmap if r.anonymous == Some(true) => {
                st.mmap_bytes += r.size;
                st.mmap_regions += 1;
                steps.push((
                    r.time_ns,
                    1,
                    Step::Map {
                        process: r.process,
                        addr: r.address,
                        len: r.size,
                    },
                ));
            }
            Kind::Mmap => st.file_mappings += 1,
            Kind::Munmap => steps.push((
                release_t,
                0,
                Step::Unmap {
                    process: r.process,
                    addr: r.address,
                    len: r.size,
                },
            )),
            Kind::Mremap => {
                let (old, old_len) = (r.old_address.unwrap_or(0), r.old_size.unwrap_or(0));
                steps.push((
                    release_t,
                    0,
                    Step::Unmap {
                        process: r.process,
                        addr: old,
                        len: old_len,
                    },
                ));
                steps.push((
                    r.time_ns,
                    1,
                    Step::Map {
                        process: r.process,
                        addr: r.address,
                        len: r.size,
                    },
                ));
                st.mmap_bytes += r.size.saturating_sub(old_len);
            }
            _ => {}
        }
    }
    st.threads = threads.len() as u64;
    st.processes = procs.len() as u64;
    steps.sort_by_key(|s| (s.0, s.1));

    let mut live: HashMap<(u32, u64), (u64, ObjectKey), FastHash> = HashMap::default();
    // Anonymous regions that we saw mapped: (process, start) -> end.
    let mut regions: BTreeMap<(u32, u64), u64> = BTreeMap::new();
    let (mut heap, mut blocks, mut mapped) = (0u64, 0u64, 0u64);
    let bucket_of = |t: u64| t.checked_div(bucket_ns).unwrap_or(0) as usize;
    if bucket_ns > 0 {
        let n = bucket_of(st.end_ns) + 1;
        st.timeline = (0..n)
            .map(|i| Bucket {
                start_ns: i as u64 * bucket_ns,
                ..Default::default()
            })
            .collect();
    }
    let mut touched = vec![false; st.timeline.len()];
    for (t, _, step) in steps {
        if let Some(x) = touched.get_mut(bucket_of(t)) {
            *x = true;
        }
        match step {
            Step::Acquire {
                process,
                addr,
                size,
                object,
            } => {
                // An address handed out twice without a free in between means the free was
                // not seen (or came from untracked code): release the stale block first.
                if let Some((old, _)) = live.insert((process, addr), (size, object)) {
                    heap -= old;
                    blocks -= 1;
                }
                heap += size;
                blocks += 1;
                if heap >= st.peak_heap_bytes {
                    st.peak_heap_bytes = heap;
                    st.peak_heap_blocks = blocks;
                    st.peak_time_ns = t;
                }
                if let Some(b) = st.timeline.get_mut(bucket_of(t)) {
                    b.allocations += 1;
                    b.allocated_bytes += size;
                }
            }
            Step::Release { process, addr } => match live.remove(&(process, addr)) {
                Some((size, _)) => {
                    heap -= size;
                    blocks -= 1;
                    if let Some(b) = st.timeline.get_mut(bucket_of(t)) {
                        b.frees += 1;
                    }
                }
                None => st.unknown_frees += 1,
            },
            Step::Map { process, addr, len } => {
                regions.insert((process, addr), addr.saturating_add(len));
                mapped += len;
                st.mmap_peak = st.mmap_peak.max(mapped);
            }
            Step::Unmap { process, addr, len } => {
                mapped -= unmap(&mut regions, process, addr, addr.saturating_add(len));
            }
        }
        if let Some(b) = st.timeline.get_mut(bucket_of(t)) {
            b.heap_max = b.heap_max.max(heap);
        }
        if let Some(b) = st.timeline.get_mut(bucket_of(t)) {
            b.heap_end = heap;
            b.mmap_end = mapped;
        }
    }
    // Buckets without events carry the level of the one before.
    #[allow(clippy::needless_range_loop)] // reads bucket i - 1 while writing bucket i
    for i in 1..st.timeline.len() {
        if !touched[i] {
            let (h, m) = (st.timeline[i - 1].heap_end, st.timeline[i - 1].mmap_end);
            let b = &mut st.timeline[i];
            b.heap_end = h;
            b.heap_max = h;
            b.mmap_end = m;
        }
    }
    st.mmap_at_exit = mapped;
    for (size, object) in live.into_values() {
        st.leaked_bytes += size;
        st.leaked_blocks += 1;
        let o = st.objects.entry(object).or_default();
        o.leaked_bytes += size;
        o.leaked_blocks += 1;
    }
    st
}

/// Removes [lo, hi) from the tracked regions of `process`; returns the bytes removed.
fn unmap(regions: &mut BTreeMap<(u32, u64), u64>, process: u32, lo: u64, hi: u64) -> u64 {
    let hits: Vec<(u64, u64)> = regions
        .range((process, 0)..(process, hi))
        .filter(|(_, &end)| end > lo)
        .map(|(&(_, s), &e)| (s, e))
        .collect();
    let mut removed = 0;
    for (s, e) in hits {
        regions.remove(&(process, s));
        removed += e.min(hi) - s.max(lo);
        if s < lo {
            regions.insert((process, s), lo);
        }
        if e > hi {
            regions.insert((process, hi), e);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, kind: Kind, addr: u64, size: u64) -> AllocRow {
        AllocRow {
            time_ns: t,
            release_time_ns: None,
            process: 0,
            pid: 1,
            tid: 1,
            kind,
            address: addr,
            size,
            old_address: None,
            old_size: None,
            anonymous: (kind == Kind::Mmap).then_some(true),
            site: Some(0),
        }
    }

    #[test]
    fn totals_peak_leaks_realloc_mmap() {
        let mut re = row(3, Kind::Realloc, 0x200, 100);
        re.old_address = Some(0x100);
        re.release_time_ns = Some(2);
        let rows = vec![
            row(1, Kind::Malloc, 0x100, 10),
            re,
            row(4, Kind::Malloc, 0x300, 5),
            row(5, Kind::Free, 0x200, 0),
            row(6, Kind::Free, 0x999, 0),
            row(7, Kind::Mmap, 0x10000, 8192),
            row(8, Kind::Munmap, 0x10000, 4096),
        ];
        let s = replay(&rows, 2);
        assert_eq!((s.heap_bytes, s.heap_blocks, s.reallocs), (115, 3, 1));
        assert_eq!((s.peak_heap_bytes, s.peak_time_ns), (105, 4));
        assert_eq!(
            (s.leaked_bytes, s.leaked_blocks, s.unknown_frees),
            (5, 1, 1)
        );
        assert_eq!(
            (s.mmap_bytes, s.mmap_peak, s.mmap_at_exit),
            (8192, 8192, 4096)
        );
        assert_eq!(s.histogram[size_class(100)], (1, 100));
        assert_eq!(s.timeline.len(), 5);
        assert_eq!(s.timeline[4].heap_end, 5);
    }

    #[test]
    fn empty_is_fine() {
        let s = replay(&[], 1000);
        assert_eq!(s.heap_bytes, 0);
        assert_eq!(s.timeline.len(), 1);
    }
}
