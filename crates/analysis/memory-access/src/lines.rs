//! Cache lines: who touched which bytes of each 64-byte line, and the verdict. False
//! sharing: two or more threads at the same time on disjoint bytes, at least one writing.
//! True sharing: a byte written by one thread and touched by another.

use std::collections::{BTreeMap, HashMap};

use crate::objects::{Location, ObjectKind};
use crate::{line_bytes, AccessSample, Source, LINE_BYTES};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Verdict {
    FalseSharing,
    TrueSharing,
    None,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::FalseSharing => "false sharing",
            Verdict::TrueSharing => "true sharing",
            Verdict::None => "none",
        }
    }
}

/// One thread's use of one line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadUse {
    pub tid: u32,
    /// Bit i: byte i of the line was read / written.
    pub read_mask: u64,
    pub write_mask: u64,
    pub loads: u64,
    pub stores: u64,
    pub weight: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// First byte of an access in the line -> (last byte, loads, stores).
    pub by_offset: BTreeMap<u8, (u8, u64, u64)>,
}

impl ThreadUse {
    pub fn touched(&self) -> u64 {
        self.read_mask | self.write_mask
    }
    fn overlaps_in_time(&self, o: &ThreadUse) -> bool {
        self.first_ns <= o.last_ns && o.first_ns <= self.last_ns
    }
}

/// One cache line and what happened on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub addr: u64,
    pub object: u32,
    /// Offset of the line's first byte in its object (negative: the line starts before it).
    pub object_offset: i64,
    /// Sorted by tid.
    pub threads: Vec<ThreadUse>,
    /// Function index -> samples.
    pub functions: BTreeMap<u32, u64>,
    pub samples: u64,
    pub weight: u64,
    pub hitm: u64,
    pub verdict: Verdict,
    /// Watchpoint hits per thread (kept apart: a hit is a count, not time), sorted by tid.
    pub watch: Vec<ThreadUse>,
    pub watch_hits: u64,
    /// What the hits show, for a line with hits: true sharing when a byte one thread wrote
    /// was touched by another while both were hitting it, else false sharing when two or
    /// more threads wrote, otherwise none. None for a line without hits.
    pub confirmed: Option<Verdict>,
}

impl Line {
    /// Byte ranges `[first, last]` of the line a thread touched, merged.
    pub fn ranges(mask: u64) -> Vec<(u8, u8)> {
        let mut out = Vec::new();
        let mut i = 0u8;
        while u64::from(i) < LINE_BYTES {
            if mask >> i & 1 == 1 {
                let start = i;
                while u64::from(i) < LINE_BYTES && mask >> i & 1 == 1 {
                    i += 1;
                }
                out.push((start, i - 1));
            } else {
                i += 1;
            }
        }
        out
    }

    /// The threads that share the line at the same time: one whose accesses all fall
    /// outside every other thread's span (the main thread freeing the block after the
    /// join) needs no line of its own.
    fn concurrent(&self) -> Vec<&ThreadUse> {
        self.threads
            .iter()
            .filter(|t| {
                self.threads
                    .iter()
                    .any(|o| o.tid != t.tid && o.overlaps_in_time(t))
            })
            .collect()
    }

    /// Bytes into a cache line at which the object (the instance this line belongs to)
    /// starts: 0 when it is 64-byte aligned.
    pub fn object_misalignment(&self) -> u64 {
        (-self.object_offset).rem_euclid(LINE_BYTES as i64) as u64
    }

    /// Whether the object's alignment alone makes the sharing: each thread's bytes fall
    /// in 64-byte slices of the object (offsets 0-63, 64-127, ...) no other thread
    /// touches, so the data is already laid out a line apart and only the object's start,
    /// some bytes into a line, makes the slices straddle lines.
    pub fn sharing_from_alignment(&self) -> bool {
        if self.object_misalignment() == 0 {
            return false;
        }
        let slices = |t: &ThreadUse| -> std::collections::BTreeSet<i64> {
            Line::ranges(t.touched())
                .iter()
                .flat_map(|&(a, b)| {
                    let lo = self.object_offset + i64::from(a);
                    let hi = self.object_offset + i64::from(b);
                    lo.div_euclid(LINE_BYTES as i64)..=hi.div_euclid(LINE_BYTES as i64)
                })
                .collect()
        };
        let users = self.concurrent();
        let sets: Vec<_> = users.iter().map(|t| slices(t)).collect();
        sets.len() >= 2
            && sets
                .iter()
                .enumerate()
                .all(|(i, a)| sets.iter().skip(i + 1).all(|b| a.is_disjoint(b)))
    }

    /// For false sharing: what to do, naming each thread's bytes as object offsets and,
    /// when the object's start is the cause, how to align it for its kind (a heap block
    /// is aligned by its allocation call, not by padding its type).
    pub fn fix(&self, kind: ObjectKind) -> Option<String> {
        if self.verdict != Verdict::FalseSharing {
            return None;
        }
        let parts: Vec<String> = self
            .concurrent()
            .iter()
            .map(|t| {
                let r: Vec<String> = Line::ranges(t.touched())
                    .iter()
                    .map(|&(a, b)| {
                        format!(
                            "{}..{}",
                            self.object_offset + i64::from(a),
                            self.object_offset + i64::from(b)
                        )
                    })
                    .collect();
                format!("bytes {} (thread {})", r.join(","), t.tid)
            })
            .collect();
        let parts = parts.join("; ");
        let m = self.object_misalignment();
        let heap_align = "allocate the block 64-byte aligned: aligned_alloc(64, size) or posix_memalign(&p, 64, size) in C; in C++ alignas(64) on the element type, which new T[n] honours since C++17 (std::vector needs an aligned allocator before that)";
        Some(if self.sharing_from_alignment() {
            match kind {
                ObjectKind::Heap => format!("each thread's data is already 64 bytes apart in the block, but the block starts {m} bytes into a cache line (malloc and calloc align to 16 bytes): {heap_align}. Padding the type does not move the block: {parts}"),
                ObjectKind::Static => format!("each thread's data is already 64 bytes apart in the variable, but the variable starts {m} bytes into a cache line: declare it alignas(64) (or __attribute__((aligned(64)))): {parts}"),
                _ => format!("each thread's data is already 64 bytes apart in the object, but the object starts {m} bytes into a cache line: align its start to 64 bytes: {parts}"),
            }
        } else {
            match kind {
                ObjectKind::Heap if m != 0 => format!("give each thread's data its own 64-byte line: pad each thread's part to a multiple of 64 bytes, and since the block starts {m} bytes into a line, {heap_align}: {parts}"),
                ObjectKind::Heap => format!("give each thread's data its own 64-byte line: pad each thread's part to a multiple of 64 bytes, and keep the block 64-byte aligned (this run's was, but malloc guarantees only 16: aligned_alloc(64, size) or posix_memalign in C, alignas(64) on the element type in C++17): {parts}"),
                _ => format!("give each thread's data its own 64-byte line (pad to 64 bytes or align with alignas(64)): {parts}"),
            }
        })
    }
}

/// Groups accesses by line; returns the lines by descending samples (ties: address).
pub fn lines<'a>(accesses: impl IntoIterator<Item = (&'a AccessSample, Location)>) -> Vec<Line> {
    let mut map: HashMap<(u32, u64), Line> = HashMap::new();
    for (s, loc) in accesses {
        let (addr, first, last) = line_bytes(s.addr, s.size);
        let line = map.entry((s.pid, addr)).or_insert_with(|| Line {
            addr,
            object: loc.object,
            object_offset: loc.offset as i64 - (s.addr - addr) as i64,
            threads: Vec::new(),
            functions: BTreeMap::new(),
            samples: 0,
            weight: 0,
            hitm: 0,
            verdict: Verdict::None,
            watch: Vec::new(),
            watch_hits: 0,
            confirmed: None,
        });
        if s.source == Source::Watchpoint {
            line.watch_hits += 1;
            add_use(&mut line.watch, s, first, last);
            continue;
        }
        line.samples += 1;
        line.weight += s.weight;
        line.hitm += u64::from(s.hitm);
        *line.functions.entry(s.function).or_default() += 1;
        add_use(&mut line.threads, s, first, last);
    }
    let mut out: Vec<Line> = map.into_values().collect();
    for l in &mut out {
        l.verdict = verdict(&l.threads);
        l.confirmed = (!l.watch.is_empty()).then(|| confirmed(&l.watch));
    }
    out.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.addr.cmp(&b.addr)));
    out
}

/// Adds one access of bytes `first..=last` to its thread's use of a line.
fn add_use(threads: &mut Vec<ThreadUse>, s: &AccessSample, first: u8, last: u8) {
    let i = match threads.binary_search_by_key(&s.tid, |t| t.tid) {
        Ok(i) => i,
        Err(i) => {
            threads.insert(
                i,
                ThreadUse {
                    tid: s.tid,
                    first_ns: s.time_ns,
                    last_ns: s.time_ns,
                    ..Default::default()
                },
            );
            i
        }
    };
    let t = &mut threads[i];
    let mask = bits(first, last);
    let at = t.by_offset.entry(first).or_insert((last, 0, 0));
    at.0 = at.0.max(last);
    if s.direction.reads() {
        t.read_mask |= mask;
        t.loads += 1;
        at.1 += 1;
    }
    if s.direction.writes() {
        t.write_mask |= mask;
        t.stores += 1;
        at.2 += 1;
    }
    t.weight += s.weight;
    t.first_ns = t.first_ns.min(s.time_ns);
    t.last_ns = t.last_ns.max(s.time_ns);
}

/// The verdict watchpoint hits give: exact accesses, so false sharing asks for no overlap
/// in time, only two writers (a watched word is one a sampled thread stored to). True
/// sharing does: one thread's hits all after the other's ended are a hand-over, not
/// sharing (free() writing its list pointers into a block the workers used, for one).
pub fn confirmed(threads: &[ThreadUse]) -> Verdict {
    for (i, a) in threads.iter().enumerate() {
        for b in threads.iter().skip(i + 1) {
            let shared = a.write_mask & b.touched() != 0 || b.write_mask & a.touched() != 0;
            if shared && a.overlaps_in_time(b) {
                return Verdict::TrueSharing;
            }
        }
    }
    if threads.iter().filter(|t| t.write_mask != 0).count() >= 2 {
        Verdict::FalseSharing
    } else {
        Verdict::None
    }
}

/// Bit i set for each byte i of `first..=last`.
pub(crate) fn bits(first: u8, last: u8) -> u64 {
    let n = u32::from(last - first) + 1;
    let ones = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    ones << first
}

/// The verdict of one line from its threads' byte masks. Sharing of either kind needs the
/// two threads' samples to overlap in time: a thread that reads what others wrote after
/// they ended (the main thread summing the workers' counters after joining them) is a
/// hand-over, not sharing, as for the watchpoints' verdict.
pub fn verdict(threads: &[ThreadUse]) -> Verdict {
    let mut disjoint_writer = false;
    for (i, a) in threads.iter().enumerate() {
        for b in threads.iter().skip(i + 1) {
            let same_bytes = a.write_mask & b.touched() != 0 || b.write_mask & a.touched() != 0;
            if same_bytes && a.overlaps_in_time(b) {
                return Verdict::TrueSharing;
            }
            let writes = a.write_mask | b.write_mask != 0;
            if writes && a.touched() & b.touched() == 0 && a.overlaps_in_time(b) {
                disjoint_writer = true;
            }
        }
    }
    if disjoint_writer {
        Verdict::FalseSharing
    } else {
        Verdict::None
    }
}

#[cfg(test)]
mod confirm_tests {
    use super::*;

    fn writer(tid: u32, first: u8, last: u8, from: u64, to: u64) -> ThreadUse {
        ThreadUse {
            tid,
            write_mask: bits(first, last),
            stores: 1,
            first_ns: from,
            last_ns: to,
            ..ThreadUse::default()
        }
    }

    /// Two workers on their own bytes, then the main thread's free() writing the block's
    /// first 16 bytes after both ended: still false sharing. The same write while the
    /// workers run is true sharing.
    #[test]
    fn a_write_after_the_others_ended_is_a_hand_over_not_sharing() {
        let workers = [writer(11, 0, 7, 100, 200), writer(12, 8, 15, 100, 200)];
        let after: Vec<ThreadUse> = workers
            .iter()
            .cloned()
            .chain([writer(10, 0, 15, 300, 300)])
            .collect();
        assert_eq!(confirmed(&after), Verdict::FalseSharing);
        let during: Vec<ThreadUse> = workers
            .iter()
            .cloned()
            .chain([writer(10, 0, 15, 150, 150)])
            .collect();
        assert_eq!(confirmed(&during), Verdict::TrueSharing);
        assert_eq!(confirmed(&workers[..1]), Verdict::None);
    }
}
