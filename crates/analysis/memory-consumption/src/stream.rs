//! The tracker's files turned into `allocations` rows in time order without holding them:
//! what `kairos collect memory-consumption` does with a trace of any size.
//!
//! Holding every event (as [`crate::decode::read_dir`] does) cost five bytes of memory per
//! byte of trace and most of the time went to the page faults of that memory. Here each
//! event file is read twice through a small window instead:
//!
//! 1. [`index`]: every file once, in the order `read_dir` reads them: stacks are interned
//!    in the same order (so site ids are the same), clock anchors and damage found, the
//!    events counted, and where the file's times go back noted: each stretch between
//!    such points (a *run*) is in time order.
//! 2. [`Merge`]: the runs of all files merged by time into the rows `build::build` makes,
//!    in its order (time since the first process started; then process, absolute time,
//!    file and position, which is where its stable sorts leave equal times).
//!
//! A file whose clock anchors go back in time, or whose times go back often, is decoded
//! whole and sorted as `read_dir` does, so any input gives the same rows either way.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::decode::{self, Clock, FrameBuf, Record, Stacks, Trace};
use crate::{AllocRow, Error, Kind};

/// More runs than this in one file: it is decoded whole instead.
const MAX_RUNS: usize = 32;
/// Read windows: together about this much, each between the two bounds below.
const WINDOW_BUDGET: usize = 16 << 20;
const WINDOW_MAX: usize = 1 << 20;
const WINDOW_MIN: usize = 16 << 10;
/// Above this many runs, each window opens its file for every read (file descriptors).
const OPEN_FILES: usize = 256;

/// What the first pass learnt about one event file.
#[derive(Debug)]
struct FileIndex {
    path: PathBuf,
    /// (pid, inst) of its process.
    key: (u32, u64),
    tid: u32,
    clock: Clock,
    /// Where the events end (the file's length, or where the damage starts).
    end: u64,
    /// Start of each run and its events.
    runs: Vec<(u64, u64)>,
    /// Largest (time - time before the call) of its events, in the file's unit.
    lag: u64,
}

/// The trace's processes (their stacks interned, no events) and how to read its events.
#[derive(Debug)]
pub struct Index {
    pub trace: Trace,
    /// Events in all files: the rows [`Merge`] will give.
    pub events: u64,
    files: Vec<FileIndex>,
}

/// First pass over the tracker directory (see the module's comment).
pub fn index(dir: &Path) -> Result<Index, Error> {
    let mut files = Vec::new();
    let mut window = Vec::new();
    let trace = decode::scan(dir, |path, name, p, notes| {
        match index_file(path, p.inst, &mut p.stacks, &mut window)? {
            Ok((mut f, damage)) => {
                if let Some(d) = damage {
                    notes.push(decode::damaged_note(name, &d));
                }
                if !p.threads.contains(&f.tid) {
                    p.threads.push(f.tid);
                }
                let n = f.runs.iter().map(|r| r.1).sum();
                f.key = (p.pid, p.inst);
                files.push(f);
                Ok(n)
            }
            Err(why) => {
                notes.push(decode::skipped_note(name, &why));
                Ok(0)
            }
        }
    })?;
    let events = files.iter().flat_map(|f| &f.runs).map(|r| r.1).sum();
    Ok(Index {
        trace,
        events,
        files,
    })
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source: e,
    }
}

/// Reads `[next, end)` of a file through a buffer; records are parsed in place.
struct Window {
    path: PathBuf,
    file: Option<File>,
    keep_open: bool,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// File position of `buf[0]`.
    base: u64,
    next: u64,
    end: u64,
}

impl Window {
    fn new(path: &Path, file: Option<File>, start: u64, end: u64, buf: Vec<u8>) -> Window {
        Window {
            path: path.to_path_buf(),
            keep_open: file.is_some(),
            file,
            buf,
            pos: 0,
            len: 0,
            base: start,
            next: start,
            end,
        }
    }

    /// Whether the buffer holds everything up to `end`.
    fn last(&self) -> bool {
        self.next >= self.end
    }

    /// Keeps the unparsed bytes and reads more after them.
    fn refill(&mut self) -> Result<(), Error> {
        self.buf.copy_within(self.pos..self.len, 0);
        self.base += self.pos as u64;
        self.len -= self.pos;
        self.pos = 0;
        let file = match self.file.take() {
            Some(f) => f,
            None => File::open(&self.path).map_err(|e| io_error(&self.path, e))?,
        };
        while self.len < self.buf.len() && self.next < self.end {
            let want = (self.buf.len() - self.len).min((self.end - self.next) as usize);
            let got = file
                .read_at(&mut self.buf[self.len..self.len + want], self.next)
                .map_err(|e| io_error(&self.path, e))?;
            if got == 0 {
                let e = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the file became shorter while it was read",
                );
                return Err(io_error(&self.path, e));
            }
            self.len += got;
            self.next += got as u64;
        }
        if self.keep_open && self.next < self.end {
            self.file = Some(file);
        }
        Ok(())
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
}

/// First pass over one event file; the inner error says why the file is skipped, the
/// damage (if any) comes with the index.
fn index_file(
    path: &Path,
    inst: u64,
    stacks: &mut Stacks,
    buf: &mut Vec<u8>,
) -> Result<Result<(FileIndex, Option<String>), String>, Error> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let len = file.metadata().map_err(|e| io_error(path, e))?.len();
    buf.resize(WINDOW_MAX.min(len as usize).max(decode::HEADER_BYTES), 0);
    let mut w = Window::new(path, Some(file), 0, len, std::mem::take(buf));
    let outcome = index_records(&mut w, inst, stacks);
    *buf = std::mem::take(&mut w.buf);
    outcome
}

fn index_records(
    w: &mut Window,
    inst: u64,
    stacks: &mut Stacks,
) -> Result<Result<(FileIndex, Option<String>), String>, Error> {
    w.refill()?;
    let (tid, tsc) = match decode::header(&w.buf[..w.len]) {
        Ok(h) => h,
        Err(why) => return Ok(Err(why)),
    };
    w.pos = decode::HEADER_BYTES;
    let mut anchors = Vec::new();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    let (mut prev, mut lag, mut damage) = (0u64, 0u64, None);
    let mut h = decode::Head::NONE;
    loop {
        if w.pos >= w.len {
            if w.last() {
                break;
            }
            w.refill()?;
            continue;
        }
        let b = &w.buf[..w.len];
        let n = decode::event(b, w.pos, &mut h);
        if n > 0 {
            if runs.is_empty() || h.time < prev {
                runs.push((w.offset(), 0));
            }
            if let Some(r) = runs.last_mut() {
                r.1 += 1;
            }
            prev = h.time;
            if h.depth > 0 {
                stacks.intern_event(b, &h);
            }
            if let Some(t0) = h.t0 {
                lag = lag.max(h.time.saturating_sub(t0));
            }
            w.pos += n;
            continue;
        }
        let (rec, n) = decode::parse(b, w.pos, w.base, w.last());
        match rec {
            Record::Clock(ticks, ns) => anchors.push((ticks, ns)),
            Record::Event(_) => {
                // event() takes every whole event record; never here.
                damage = Some(format!("unreadable record at byte {}", w.offset()));
                break;
            }
            Record::Short => {
                if w.last() {
                    // parse says Damage at the end of the file; never here.
                    damage = Some(format!("cut record at byte {}", w.offset()));
                    break;
                }
                w.refill()?;
                continue;
            }
            Record::Damage(d) => {
                damage = Some(d);
                break;
            }
        }
        w.pos += n;
    }
    let end = if damage.is_some() { w.offset() } else { w.end };
    let f = FileIndex {
        path: w.path.clone(),
        key: (0, 0),
        tid,
        clock: Clock::new(tsc, inst, anchors),
        end,
        runs,
        lag,
    };
    Ok(Ok((f, damage)))
}

/// One source of rows for the merge, with its next row.
struct Source {
    /// Site id of the process's first stack.
    site0: u32,
    /// Ns subtracted from absolute times (the first process's start).
    origin: u64,
    read: Read,
    /// The next row (process, pid and tid are the source's own) and its absolute time;
    /// none when the source is done.
    head: AllocRow,
    abs: u64,
    live: bool,
}

enum Read {
    /// One run of a file: `left` events still to come.
    Run {
        window: Window,
        clock: Clock,
        left: u64,
        /// The stack of the event before, and its index.
        last: (Vec<u64>, u32),
    },
    /// A whole file decoded and sorted by `decode::read_dir`'s rules.
    Decoded {
        events: std::vec::IntoIter<decode::RawEvent>,
    },
}

/// Merge key: time since the origin, process, absolute time, source.
type Key = (u64, u32, u64, usize);

impl Source {
    fn key(&self, i: usize) -> Option<Key> {
        self.live
            .then_some((self.head.time_ns, self.head.process, self.abs, i))
    }

    /// Reads the next row into `head` (or marks the source done).
    #[inline]
    fn advance(&mut self, stacks: &Stacks) -> Result<(), Error> {
        let (origin, site0) = (self.origin, self.site0);
        match &mut self.read {
            Read::Decoded { events } => match events.next() {
                Some(e) => {
                    let t0 = e.t0_ns;
                    let ev = (e.kind, e.addr, e.size, e.aux, e.aux2);
                    fill(&mut self.head, ev, e.time_ns, t0, e.stack, origin, site0);
                    self.abs = e.time_ns;
                }
                None => self.live = false,
            },
            Read::Run {
                window,
                clock,
                left,
                last,
            } => {
                if *left == 0 {
                    self.live = false;
                    return Ok(());
                }
                *left -= 1;
                let (h, stack) = next_head(window, last, stacks)?;
                let abs = clock.ns(h.time);
                let t0 = h.t0.map(|t| clock.ns(t));
                let ev = (h.kind, h.addr, h.size, h.aux, h.aux2);
                fill(&mut self.head, ev, abs, t0, stack, origin, site0);
                self.abs = abs;
            }
        }
        Ok(())
    }
}

/// The next event record of a run and its stack (the first pass counted them; anything
/// else means the file changed in between).
#[inline]
fn next_head(
    w: &mut Window,
    last: &mut (Vec<u64>, u32),
    stacks: &Stacks,
) -> Result<(decode::Head, Option<u32>), Error> {
    loop {
        if w.pos >= w.len {
            if w.last() {
                return Err(changed(w, "fewer events"));
            }
            w.refill()?;
            continue;
        }
        let b = &w.buf[..w.len];
        let mut h = decode::Head::NONE;
        let n = decode::event(b, w.pos, &mut h);
        if n == 0 {
            match decode::parse(b, w.pos, w.base, w.last()) {
                (Record::Clock(..), n) => w.pos += n,
                (Record::Short, _) if !w.last() => w.refill()?,
                _ => return Err(changed(w, "damage")),
            }
            continue;
        }
        let stack = if h.depth == 0 {
            None
        } else {
            if !decode::frames_are(b, &h, &last.0) {
                let mut frames: FrameBuf = [0; 64];
                let f = decode::frames(b, &h, &mut frames);
                let i = stacks.find(f).ok_or_else(|| changed(w, "a new stack"))?;
                *last = (f.to_vec(), i);
            }
            Some(last.1)
        };
        w.pos += n;
        return Ok((h, stack));
    }
}

#[cold]
fn changed(w: &Window, why: &str) -> Error {
    Error::Damaged {
        path: w.path.display().to_string(),
        detail: format!(
            "it changed while it was read ({why} at byte {})",
            w.offset()
        ),
    }
}

/// The row of an event, as `build::build` makes it.
pub(crate) fn row_of(
    e: &decode::RawEvent,
    process: u32,
    pid: u32,
    tid: u32,
    origin: u64,
    site0: u32,
) -> AllocRow {
    let mut r = AllocRow {
        time_ns: 0,
        release_time_ns: None,
        process,
        pid,
        tid,
        kind: e.kind,
        address: 0,
        size: 0,
        old_address: None,
        old_size: None,
        anonymous: None,
        site: None,
    };
    let ev = (e.kind, e.addr, e.size, e.aux, e.aux2);
    fill(&mut r, ev, e.time_ns, e.t0_ns, e.stack, origin, site0);
    r
}

/// The fields of a row that come from its event (kind, address, size, aux, aux2; times in
/// absolute ns; stack index in its process); the rest are its thread's.
#[inline]
fn fill(
    r: &mut AllocRow,
    (kind, addr, size, aux, aux2): (Kind, u64, u64, u64, u64),
    time: u64,
    t0: Option<u64>,
    stack: Option<u32>,
    origin: u64,
    site0: u32,
) {
    r.time_ns = time.saturating_sub(origin);
    r.release_time_ns = t0.map(|t| t.saturating_sub(origin));
    r.kind = kind;
    r.address = addr;
    r.size = size;
    r.old_address = matches!(kind, Kind::Realloc | Kind::Mremap).then_some(aux);
    r.old_size = (kind == Kind::Mremap).then_some(aux2);
    // MAP_ANONYMOUS is 0x20 on Linux (x86, arm, riscv alike).
    r.anonymous = (kind == Kind::Mmap).then_some((aux >> 32) & 0x20 != 0);
    r.site = stack.map(|i| site0.saturating_add(i));
}

/// Second pass: the rows of every file in `build::build`'s order.
pub struct Merge<'a> {
    index: &'a Index,
    sources: Vec<Source>,
    /// Stacks of each source's process.
    stacks: Vec<&'a Stacks>,
    /// The source with the smallest key, apart from the heap.
    current: Option<Key>,
    heap: BinaryHeap<Reverse<Key>>,
    lag: u64,
}

impl<'a> Merge<'a> {
    pub fn new(index: &'a Index) -> Result<Merge<'a>, Error> {
        let procs = &index.trace.processes;
        let origin = procs.iter().map(|p| p.inst).min().unwrap_or(0);
        // Site ids: each process's stacks in turn (build::build's numbering).
        let mut site0 = Vec::with_capacity(procs.len());
        let mut next = 0u32;
        for p in procs {
            site0.push(next);
            next = next.saturating_add(p.stacks.list.len() as u32);
        }
        let process_of = |key: (u32, u64)| procs.iter().position(|p| (p.pid, p.inst) == key);
        // Files in process order, each in name order (the order they were indexed in).
        let mut files: Vec<(usize, &FileIndex)> = index
            .files
            .iter()
            .filter_map(|f| Some((process_of(f.key)?, f)))
            .collect();
        files.sort_by_key(|f| f.0);
        let streamed = |f: &FileIndex| f.clock.monotonic() && f.runs.len() <= MAX_RUNS;
        let runs: usize = files
            .iter()
            .filter(|f| streamed(f.1))
            .map(|f| f.1.runs.len())
            .sum();
        let cap = (WINDOW_BUDGET / runs.max(1)).clamp(WINDOW_MIN, WINDOW_MAX);
        let mut sources = Vec::new();
        let mut stacks = Vec::new();
        let mut lag = 0u64;
        for (pi, f) in files {
            let p = &procs[pi];
            let source = |read| Source {
                site0: site0[pi],
                origin,
                read,
                head: AllocRow {
                    time_ns: 0,
                    release_time_ns: None,
                    process: pi as u32,
                    pid: p.pid,
                    tid: f.tid,
                    kind: Kind::Free,
                    address: 0,
                    size: 0,
                    old_address: None,
                    old_size: None,
                    anonymous: None,
                    site: None,
                },
                abs: 0,
                live: true,
            };
            if streamed(f) {
                lag = lag.max(f.clock.span_bound(f.lag));
                for (i, &(start, events)) in f.runs.iter().enumerate() {
                    let end = f.runs.get(i + 1).map_or(f.end, |r| r.0);
                    let file = if runs <= OPEN_FILES {
                        Some(File::open(&f.path).map_err(|e| io_error(&f.path, e))?)
                    } else {
                        None
                    };
                    let size = cap.min((end - start) as usize).max(WINDOW_MIN);
                    let window = Window::new(&f.path, file, start, end, vec![0; size]);
                    sources.push(source(Read::Run {
                        window,
                        clock: f.clock.clone(),
                        left: events,
                        last: (Vec::new(), 0),
                    }));
                    stacks.push(&p.stacks);
                }
            } else {
                let events = decode_whole(f, p.inst, &p.stacks)?;
                for e in &events {
                    if let Some(t0) = e.t0_ns {
                        lag = lag.max(e.time_ns.saturating_sub(t0));
                    }
                }
                sources.push(source(Read::Decoded {
                    events: events.into_iter(),
                }));
                stacks.push(&p.stacks);
            }
        }
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (i, s) in sources.iter_mut().enumerate() {
            s.advance(stacks[i])?;
            if let Some(k) = s.key(i) {
                heap.push(Reverse(k));
            }
        }
        let current = heap.pop().map(|r| r.0);
        Ok(Merge {
            index,
            sources,
            stacks,
            current,
            heap,
            lag,
        })
    }

    /// How far before its time a row's release may lie, at most (ns).
    pub fn lag(&self) -> u64 {
        self.lag
    }

    /// The time of the next row, if any.
    pub fn peek_time(&self) -> Option<u64> {
        self.current.map(|k| k.0)
    }

    /// The next row in time order.
    #[inline]
    pub fn next_row(&mut self) -> Result<Option<AllocRow>, Error> {
        let Some(key) = self.current else {
            return Ok(None);
        };
        let i = key.3;
        let (Some(s), Some(stacks)) = (self.sources.get_mut(i), self.stacks.get(i)) else {
            return Ok(None);
        };
        let row = s.head.clone();
        s.advance(stacks)?;
        self.current = match s.key(i) {
            // Still first: the heap is left alone (one thread's run is the usual case).
            Some(k) if self.heap.peek().is_none_or(|top| k <= top.0) => Some(k),
            Some(k) => {
                self.heap.push(Reverse(k));
                self.heap.pop().map(|r| r.0)
            }
            None => self.heap.pop().map(|r| r.0),
        };
        Ok(Some(row))
    }

    /// Events the first pass counted.
    pub fn events(&self) -> u64 {
        self.index.events
    }
}

/// A file that is not read run by run: decoded whole, sorted as `read_dir` sorts.
fn decode_whole(f: &FileIndex, inst: u64, stacks: &Stacks) -> Result<Vec<decode::RawEvent>, Error> {
    let changed = || Error::Damaged {
        path: f.path.display().to_string(),
        detail: "it changed while it was read".into(),
    };
    let bytes = std::fs::read(&f.path).map_err(|e| io_error(&f.path, e))?;
    // The first pass interned every stack of the file: a copy finds them at the same
    // indices.
    let mut copy = stacks.clone();
    let (_, mut events, _) = decode::decode_file(&bytes, inst, &mut copy).map_err(|_| changed())?;
    let counted = f.runs.iter().map(|r| r.1).sum::<u64>() as usize;
    if events.len() < counted {
        return Err(changed());
    }
    events.truncate(counted);
    let known = stacks.list.len() as u32;
    if events.iter().any(|e| e.stack.is_some_and(|s| s >= known)) {
        return Err(changed());
    }
    events.sort_by_key(|e| e.time_ns);
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{replay, Replayer};
    use crate::{build, decode};

    /// A little pseudo-random generator (the tests must not depend on a crate).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n.max(1)
        }
    }

    fn header(tid: u32, tsc: bool) -> Vec<u8> {
        let mut b = b"KAIROSMT".to_vec();
        for v in [1u32, 1, tid, u32::from(tsc)] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&0u64.to_le_bytes());
        b
    }

    fn push(b: &mut Vec<u8>, words: &[u64]) {
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// One thread's file: `n` events from time `t` on, steps of up to `step`, going back
    /// now and then when `back` says how often (0: never).
    fn thread_file(rng: &mut Lcg, tid: u32, tsc: bool, n: usize, mut t: u64, back: u64) -> Vec<u8> {
        let mut b = header(tid, tsc);
        let mut live: Vec<u64> = Vec::new();
        if tsc {
            push(&mut b, &[t | 15 << 56, 1_000_000 + t * 2]);
        }
        for i in 0..n {
            t += rng.next(40);
            if back > 0 && rng.next(back) == 0 {
                t = t.saturating_sub(rng.next(300));
            }
            let depth = rng.next(4);
            let stack: Vec<u64> = (0..depth)
                .map(|d| 0x400000 + d * 16 + rng.next(3))
                .collect();
            let size = rng.next(100);
            match rng.next(10) {
                0..=3 => {
                    let addr = 0x1000 + rng.next(64) * 16;
                    live.push(addr);
                    push(&mut b, &[t | 1 << 56, addr, size | depth << 56]);
                    push(&mut b, &stack);
                }
                4..=6 => {
                    let addr = if live.is_empty() {
                        0x9999
                    } else {
                        live.swap_remove(rng.next(live.len() as u64) as usize)
                    };
                    push(&mut b, &[t | 4 << 56, addr]);
                }
                7 => {
                    let old = live.pop().unwrap_or(0);
                    let addr = 0x1000 + rng.next(64) * 16;
                    live.push(addr);
                    let t0 = t.saturating_sub(rng.next(50));
                    push(&mut b, &[t | 3 << 56, addr, size | depth << 56, old, 0, t0]);
                    push(&mut b, &stack);
                }
                8 => {
                    let flags = if rng.next(2) == 0 { 0x22u64 } else { 0x02 };
                    push(
                        &mut b,
                        &[
                            t | 10 << 56,
                            0x7f0000 + rng.next(8) * 0x1000,
                            0x2000 | depth << 56,
                            flags << 32 | 3,
                            0,
                            0,
                        ],
                    );
                    push(&mut b, &stack);
                }
                _ => {
                    let t0 = t.saturating_sub(rng.next(20));
                    if rng.next(2) == 0 {
                        push(
                            &mut b,
                            &[
                                t | 11 << 56,
                                0x7f0000 + rng.next(8) * 0x1000,
                                0x1000,
                                0,
                                0,
                                t0,
                            ],
                        );
                    } else {
                        push(
                            &mut b,
                            &[
                                t | 12 << 56,
                                0x7f8000,
                                0x3000,
                                0x7f0000 + rng.next(8) * 0x1000,
                                0x2000,
                                t0,
                            ],
                        );
                    }
                }
            }
            if tsc && i % 97 == 96 {
                push(&mut b, &[t | 15 << 56, 1_000_000 + t * 2 + rng.next(3)]);
            }
        }
        if tsc {
            push(&mut b, &[(t + 1) | 15 << 56, 1_000_000 + (t + 1) * 2 + 5]);
        }
        b
    }

    /// The streaming path's rows, stats and notes against `read_dir` + `build` + `replay`.
    fn same_as_materialised(dir: &Path) -> u64 {
        let trace = decode::read_dir(dir).expect("read_dir");
        let old = build::build(&trace);
        let old_stats = replay(&old.rows, 0);

        let index = index(dir).expect("index");
        let mut merge = Merge::new(&index).expect("merge");
        let lag = merge.lag();
        let mut replayer = Replayer::new(0, 0);
        let mut rows = Vec::new();
        while let Some(r) = merge.next_row().expect("row") {
            let horizon = merge
                .peek_time()
                .map_or(u64::MAX, |t| t.saturating_sub(lag));
            replayer.push(&r, horizon);
            rows.push(r);
        }
        assert_eq!(rows.len() as u64, index.events);
        assert_eq!(rows, old.rows);
        assert_eq!(replayer.finish(), old_stats);
        let (sites, sym) = build::sites(&index.trace);
        assert_eq!(sites, old.sites);
        let mut notes = index.trace.notes.clone();
        notes.extend(sym);
        assert_eq!(notes, old.notes);
        index.events
    }

    #[test]
    fn streams_the_rows_that_read_dir_and_build_make() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let mut rng = Lcg(7);
        let w = |name: &str, b: &[u8]| std::fs::write(d.join(name), b).expect("write");
        // Process 10: three threads in ns (one going back now and then, one with SEQ 10
        // before SEQ 2 in name order), clean exit.
        w(
            "10-1000-0.kmt",
            &thread_file(&mut rng, 10, false, 3000, 0, 0),
        );
        w(
            "10-1000-2.kmt",
            &thread_file(&mut rng, 11, false, 2000, 5, 200),
        );
        w(
            "10-1000-10.kmt",
            &thread_file(&mut rng, 12, false, 1000, 5, 0),
        );
        w("10-1000.info", b"version=1\nlost=2\nmin_size=0\n");
        w(
            "10-1000.maps.start",
            b"00400000-00401000 r-xp 00000000 08:01 1 /nonexistent/app\n",
        );
        // Process 20 started earlier (the origin), TSC with anchors, cut at the end; no
        // .info (killed).
        let mut tsc = thread_file(&mut rng, 20, true, 2500, 100, 0);
        tsc.extend_from_slice(&[1, 2, 3]);
        w("20-500-0.kmt", &tsc);
        // Process 30: anchors that go back (decoded whole), and times that go back too
        // often for runs (decoded whole), a bad header (skipped).
        let mut back = thread_file(&mut rng, 31, true, 500, 10, 0);
        push(&mut back, &[5 | 15 << 56, 999]);
        push(&mut back, &[3 | 15 << 56, 5]);
        w("30-2000-0.kmt", &back);
        w(
            "30-2000-1.kmt",
            &thread_file(&mut rng, 32, false, 3000, 0, 3),
        );
        w("30-2000-2.kmt", b"KAIROSMT junk");
        w("30-2000.info", b"version=1\nlost=0\n");
        // A process with an empty file only: dropped.
        w("40-3000-0.kmt", &header(40, false));
        let events = same_as_materialised(d);
        assert!(events > 10_000, "{events}");

        // The streaming paths were taken: runs for files 0, 2, 10 and 20; whole for 30.
        let index = index(d).expect("index");
        let runs: Vec<usize> = index.files.iter().map(|f| f.runs.len()).collect();
        assert!(runs.iter().any(|&r| r > 1 && r <= MAX_RUNS), "{runs:?}");
        assert!(runs.iter().any(|&r| r > MAX_RUNS), "{runs:?}");
        assert!(index.files.iter().any(|f| !f.clock.monotonic()));
    }

    #[test]
    fn empty_and_damaged_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(same_as_materialised(dir.path()), 0);
        let mut b = header(1, false);
        push(&mut b, &[5 | 1 << 56, 0x10, 8 | 70 << 56]);
        std::fs::write(dir.path().join("1-1-0.kmt"), &b).expect("write");
        std::fs::write(dir.path().join("1-1.info"), b"").expect("write");
        assert_eq!(same_as_materialised(dir.path()), 0);
        assert!(index(Path::new("/nonexistent/kairos")).is_err());
    }

    #[test]
    fn small_windows_and_many_runs() {
        // More runs than files may stay open, each through the smallest window.
        let dir = tempfile::tempdir().expect("tempdir");
        let mut rng = Lcg(11);
        for i in 0..(OPEN_FILES as u32 / 8 + 1) {
            let b = thread_file(&mut rng, 100 + i, false, 400, u64::from(i), 40);
            std::fs::write(dir.path().join(format!("5-5-{i}.kmt")), b).expect("write");
        }
        std::fs::write(dir.path().join("5-5.info"), b"").expect("write");
        same_as_materialised(dir.path());
    }

    #[test]
    fn a_file_that_changes_between_the_passes_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut rng = Lcg(3);
        let path = dir.path().join("1-1-0.kmt");
        std::fs::write(&path, thread_file(&mut rng, 1, false, 100, 0, 0)).expect("write");
        let index = index(dir.path()).expect("index");
        std::fs::write(&path, header(1, false)).expect("write");
        let outcome = Merge::new(&index).and_then(|mut m| {
            while m.next_row()?.is_some() {}
            Ok(())
        });
        assert!(outcome.is_err());
    }
}
