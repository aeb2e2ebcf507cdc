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
#[derive(Debug, Clone, Copy)]
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
    let end_ns = rows.iter().map(|r| r.time_ns).max().unwrap_or(0);
    let mut state = State::new(bucket_ns, end_ns);
    // Releases happen at the time before the call, acquisitions after it: expand, then sort.
    let mut steps: Vec<(u64, u8, Step)> = Vec::with_capacity(rows.len() + rows.len() / 4);
    for r in rows {
        state.count(r, |t, k, s| steps.push((t, k, s)));
    }
    steps.sort_by_key(|s| (s.0, s.1));
    for (t, _, step) in steps {
        state.apply(t, step);
    }
    state.finish()
}

/// [`replay`] of rows that arrive one by one in time order (by `time_ns`, as the
/// `allocations` table holds them), without keeping them: only the steps not yet known
/// to be in order are held (those at or after the horizon each row comes with). The
/// result is the same as [`replay`]'s of all the rows.
pub struct Replayer {
    state: State,
    /// Steps by (time, release before acquisition, arrival), not yet applied.
    pending: std::collections::VecDeque<(u64, u8, u64, Step)>,
    arrived: u64,
}

impl Replayer {
    /// `end_ns`: the largest `time_ns` to come, for the timeline's length (any value when
    /// `bucket_ns` is 0).
    pub fn new(bucket_ns: u64, end_ns: u64) -> Replayer {
        Replayer {
            state: State::new(bucket_ns, end_ns),
            pending: Default::default(),
            arrived: 0,
        }
    }

    /// The next row: its `time_ns` is not below any row's before it. No row after it has
    /// a step before `horizon` (its release time, if it has one, or its time): the steps
    /// before it are applied.
    pub fn push(&mut self, r: &AllocRow, horizon: u64) {
        if self.pending.is_empty() && r.time_ns < horizon {
            // The common rows, one step each, applied at once (what the general path below
            // does for them, without handing the step around).
            if r.kind.is_heap_alloc() {
                self.state.see(r);
                self.state.count_block(r);
                self.arrived += 1;
                let object = (r.site, r.size);
                self.state
                    .acquire(r.time_ns, r.process, r.address, r.size, object);
                return;
            }
            if r.kind == Kind::Free {
                self.state.see(r);
                self.state.st.frees += 1;
                self.arrived += 1;
                self.state.release(r.time_ns, r.process, r.address);
                return;
            }
        }
        let mut steps: [Option<(u64, u8, u64, Step)>; 2] = [None, None];
        let arrived = &mut self.arrived;
        self.state.count(r, |t, k, s| {
            let slot = usize::from(steps[0].is_some());
            if let Some(x) = steps.get_mut(slot) {
                *x = Some((t, k, *arrived, s));
            }
            *arrived += 1;
        });
        // A row's release may come after its acquisition in time (it is generated first).
        if let [Some(a), Some(b)] = &steps {
            if (b.0, b.1) < (a.0, a.1) {
                steps.swap(0, 1);
            }
        }
        for (t, k, seq, s) in steps.into_iter().flatten() {
            if self.pending.is_empty() && t < horizon {
                // Nothing earlier is waiting and nothing earlier will come.
                self.state.apply(t, s);
                continue;
            }
            // Usually the latest: then it goes at the end.
            let key = (t, k, seq);
            let mut at = self.pending.len();
            while at > 0
                && self
                    .pending
                    .get(at - 1)
                    .is_some_and(|p| (p.0, p.1, p.2) > key)
            {
                at -= 1;
            }
            if at == self.pending.len() {
                self.pending.push_back((t, k, seq, s));
            } else {
                self.pending.insert(at, (t, k, seq, s));
            }
        }
        self.settle_before(horizon);
    }

    /// Applies the steps before `t`: no row to come has a step earlier than `t` (its
    /// release time, if it has one, or its time).
    fn settle_before(&mut self, t: u64) {
        while let Some(&(at, _, _, step)) = self.pending.front() {
            if at >= t {
                break;
            }
            self.pending.pop_front();
            self.state.apply(at, step);
        }
    }

    pub fn finish(mut self) -> Stats {
        while let Some((at, _, _, step)) = self.pending.pop_front() {
            self.state.apply(at, step);
        }
        self.state.finish()
    }
}

/// The replay's state between steps.
struct State {
    st: Stats,
    bucket_ns: u64,
    threads: std::collections::HashSet<(u32, u32)>,
    procs: std::collections::HashSet<u32>,
    /// The (process, thread) of the row before: most rows come from the same thread as it.
    last_thread: Option<(u32, u32)>,
    live: HashMap<(u32, u64), (u64, ObjectKey), FastHash>,
    /// Anonymous regions that we saw mapped: (process, start) -> end.
    regions: BTreeMap<(u32, u64), u64>,
    heap: u64,
    blocks: u64,
    mapped: u64,
    touched: Vec<bool>,
}

impl State {
    fn new(bucket_ns: u64, end_ns: u64) -> State {
        let mut st = Stats {
            histogram: vec![(0, 0); 65],
            ..Default::default()
        };
        if let Some(n) = end_ns.checked_div(bucket_ns) {
            let n = n + 1;
            st.timeline = (0..n)
                .map(|i| Bucket {
                    start_ns: i * bucket_ns,
                    ..Default::default()
                })
                .collect();
        }
        let touched = vec![false; st.timeline.len()];
        State {
            st,
            bucket_ns,
            threads: Default::default(),
            procs: Default::default(),
            last_thread: None,
            live: HashMap::default(),
            regions: BTreeMap::new(),
            heap: 0,
            blocks: 0,
            mapped: 0,
            touched,
        }
    }

    /// Counts what a row adds to the totals; its steps go to `step` (time, 0 for a
    /// release and 1 for an acquisition, step), releases first.
    fn count(&mut self, r: &AllocRow, mut step: impl FnMut(u64, u8, Step)) {
        self.see(r);
        let release_t = r.release_time_ns.unwrap_or(r.time_ns);
        let object = (r.site, r.size);
        let acquire = Step::Acquire {
            process: r.process,
            addr: r.address,
            size: r.size,
            object,
        };
        match r.kind {
            k if k.is_heap_alloc() => {
                self.count_block(r);
                step(r.time_ns, 1, acquire);
            }
            Kind::Realloc => {
                let old = r.old_address.unwrap_or(0);
                if old != 0 {
                    self.st.reallocs += 1;
                    let release = Step::Release {
                        process: r.process,
                        addr: old,
                    };
                    step(release_t, 0, release);
                }
                if r.address != 0 {
                    self.count_block(r);
                    step(r.time_ns, 1, acquire);
                } else {
                    self.st.frees += 1;
                }
            }
            Kind::Free => {
                self.st.frees += 1;
                let release = Step::Release {
                    process: r.process,
                    addr: r.address,
                };
                step(r.time_ns, 0, release);
            }
            Kind::Mmap if r.anonymous == Some(true) => {
                self.st.mmap_bytes += r.size;
                self.st.mmap_regions += 1;
                let map = Step::Map {
                    process: r.process,
                    addr: r.address,
                    len: r.size,
                };
                step(r.time_ns, 1, map);
            }
            Kind::Mmap => self.st.file_mappings += 1,
            Kind::Munmap => {
                let unmap = Step::Unmap {
                    process: r.process,
                    addr: r.address,
                    len: r.size,
                };
                step(release_t, 0, unmap);
            }
            Kind::Mremap => {
                let (old, old_len) = (r.old_address.unwrap_or(0), r.old_size.unwrap_or(0));
                let unmap = Step::Unmap {
                    process: r.process,
                    addr: old,
                    len: old_len,
                };
                step(release_t, 0, unmap);
                let map = Step::Map {
                    process: r.process,
                    addr: r.address,
                    len: r.size,
                };
                step(r.time_ns, 1, map);
                self.st.mmap_bytes += r.size.saturating_sub(old_len);
            }
            _ => {}
        }
    }

    /// The row's thread and process are counted, its time taken as the end so far.
    #[inline]
    fn see(&mut self, r: &AllocRow) {
        if self.last_thread != Some((r.process, r.tid)) {
            self.last_thread = Some((r.process, r.tid));
            self.threads.insert((r.process, r.tid));
            self.procs.insert(r.process);
        }
        self.st.end_ns = self.st.end_ns.max(r.time_ns);
    }

    /// A new heap block of the row's size, at its site.
    #[inline]
    fn count_block(&mut self, r: &AllocRow) {
        let st = &mut self.st;
        st.heap_bytes += r.size;
        st.heap_blocks += 1;
        st.zero_size += u64::from(r.size == 0);
        if let Some(h) = st.histogram.get_mut(size_class(r.size)) {
            h.0 += 1;
            h.1 += r.size;
        }
        let o = st.objects.entry((r.site, r.size)).or_default();
        o.bytes += r.size;
        o.blocks += 1;
    }

    fn bucket_of(&self, t: u64) -> usize {
        t.checked_div(self.bucket_ns).unwrap_or(0) as usize
    }

    /// One step, at time `t`, after every step before it.
    fn apply(&mut self, t: u64, step: Step) {
        match step {
            Step::Acquire {
                process,
                addr,
                size,
                object,
            } => self.acquire(t, process, addr, size, object),
            Step::Release { process, addr } => self.release(t, process, addr),
            Step::Map { process, addr, len } => {
                self.touch(t);
                self.regions
                    .insert((process, addr), addr.saturating_add(len));
                self.mapped += len;
                self.st.mmap_peak = self.st.mmap_peak.max(self.mapped);
                self.level(t);
            }
            Step::Unmap { process, addr, len } => {
                self.touch(t);
                self.mapped -= unmap(&mut self.regions, process, addr, addr.saturating_add(len));
                self.level(t);
            }
        }
    }

    #[inline]
    fn acquire(&mut self, t: u64, process: u32, addr: u64, size: u64, object: ObjectKey) {
        self.touch(t);
        // An address handed out twice without a free in between means the free was not
        // seen (or came from untracked code): release the stale block first.
        if let Some((old, _)) = self.live.insert((process, addr), (size, object)) {
            self.heap -= old;
            self.blocks -= 1;
        }
        self.heap += size;
        self.blocks += 1;
        let st = &mut self.st;
        if self.heap >= st.peak_heap_bytes {
            st.peak_heap_bytes = self.heap;
            st.peak_heap_blocks = self.blocks;
            st.peak_time_ns = t;
        }
        if !st.timeline.is_empty() {
            let bucket = self.bucket_of(t);
            if let Some(b) = self.st.timeline.get_mut(bucket) {
                b.allocations += 1;
                b.allocated_bytes += size;
            }
        }
        self.level(t);
    }

    #[inline]
    fn release(&mut self, t: u64, process: u32, addr: u64) {
        self.touch(t);
        match self.live.remove(&(process, addr)) {
            Some((size, _)) => {
                self.heap -= size;
                self.blocks -= 1;
                if !self.st.timeline.is_empty() {
                    let bucket = self.bucket_of(t);
                    if let Some(b) = self.st.timeline.get_mut(bucket) {
                        b.frees += 1;
                    }
                }
            }
            None => self.st.unknown_frees += 1,
        }
        self.level(t);
    }

    /// The timeline's bucket of `t` has seen a step.
    #[inline]
    fn touch(&mut self, t: u64) {
        if !self.touched.is_empty() {
            let bucket = self.bucket_of(t);
            if let Some(x) = self.touched.get_mut(bucket) {
                *x = true;
            }
        }
    }

    /// The levels after a step, into its bucket.
    #[inline]
    fn level(&mut self, t: u64) {
        if !self.st.timeline.is_empty() {
            let bucket = self.bucket_of(t);
            let (heap, mapped) = (self.heap, self.mapped);
            if let Some(b) = self.st.timeline.get_mut(bucket) {
                b.heap_max = b.heap_max.max(heap);
                b.heap_end = heap;
                b.mmap_end = mapped;
            }
        }
    }

    fn finish(self) -> Stats {
        let mut st = self.st;
        st.threads = self.threads.len() as u64;
        st.processes = self.procs.len() as u64;
        // Buckets without events carry the level of the one before.
        for i in 1..st.timeline.len() {
            if !self.touched.get(i).copied().unwrap_or(true) {
                let (h, m) = (st.timeline[i - 1].heap_end, st.timeline[i - 1].mmap_end);
                let b = &mut st.timeline[i];
                b.heap_end = h;
                b.heap_max = h;
                b.mmap_end = m;
            }
        }
        st.mmap_at_exit = self.mapped;
        for (size, object) in self.live.into_values() {
            st.leaked_bytes += size;
            st.leaked_blocks += 1;
            let o = st.objects.entry(object).or_default();
            o.leaked_bytes += size;
            o.leaked_blocks += 1;
        }
        st
    }
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
