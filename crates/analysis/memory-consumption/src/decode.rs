//! Reader of the allocation tracker's output directory (runtime/memtrack, format in its
//! README): per-thread `.kmt` event files, `.maps.start`/`.maps.exit` copies and `.info`.
//!
//! Damage never fails the whole read: a cut or corrupt file keeps the events before the
//! damage and adds a note.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{Error, Kind};

/// Folder of the tracker's raw files inside a result (the collection writes there, the
/// finish and any later reader read from there).
pub const RAW_DIR: &str = "memtrack";

const MAGIC: &[u8; 8] = b"KAIROSMT";
const HEADER: usize = 32;
const K_CLOCK: u8 = 15;
const MAX_DEPTH: u64 = 64;

/// One decoded event, times in CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    pub time_ns: u64,
    /// Time before the call, when the old block was still owned (realloc, munmap, mremap).
    pub t0_ns: Option<u64>,
    pub tid: u32,
    pub kind: Kind,
    pub addr: u64,
    pub size: u64,
    pub aux: u64,
    pub aux2: u64,
    /// The allocation stack: index into [`Process::stacks`]; none for free and for blocks
    /// below min-object-size.
    pub stack: Option<u32>,
}

/// Distinct stacks of one process, each stored once (millions of events share a few
/// hundred stacks; one Vec per event cost more than the rest of the decoding).
#[derive(Debug, Clone, Default)]
pub struct Stacks {
    index: std::collections::HashMap<Vec<u64>, u32, crate::replay::FastHash>,
    /// Return addresses, innermost (the caller of the allocation function) first.
    pub list: Vec<Vec<u64>>,
    /// The stack interned last: a loop allocates from one place many times in a row, and
    /// comparing a few words is cheaper than hashing them.
    last: Option<u32>,
}

impl Stacks {
    pub fn intern(&mut self, frames: &[u64]) -> u32 {
        if let Some(i) = self.last {
            if self
                .list
                .get(i as usize)
                .is_some_and(|s| same_words(s, frames))
            {
                return i;
            }
        }
        let i = match self.index.get(frames) {
            Some(&i) => i,
            None => {
                let i = self.list.len() as u32;
                self.list.push(frames.to_vec());
                self.index.insert(frames.to_vec(), i);
                i
            }
        };
        self.last = Some(i);
        i
    }

    /// The index of a stack interned before, without adding it.
    pub fn find(&self, frames: &[u64]) -> Option<u32> {
        self.index.get(frames).copied()
    }

    /// [`Stacks::intern`] of the stack of an event parsed from `b`.
    #[inline]
    pub(crate) fn intern_event(&mut self, b: &[u8], h: &Head) -> u32 {
        if let Some(i) = self.last {
            if self
                .list
                .get(i as usize)
                .is_some_and(|s| frames_are(b, h, s))
            {
                return i;
            }
        }
        let mut buf: FrameBuf = [0; MAX_DEPTH as usize];
        self.intern(frames(b, h, &mut buf))
    }
}

/// Whether two short runs of words are equal: a few words, compared in place (a call to
/// memcmp cost more than the comparison).
#[inline]
pub(crate) fn same_words(a: &[u64], b: &[u64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

/// One line of `/proc/PID/maps` (the shared parser's).
pub use kairos_procfs::maps::Mapping;

/// One process image (a PID, or the same PID again after exec or fork).
#[derive(Debug, Clone, Default)]
pub struct Process {
    pub pid: u32,
    /// CLOCK_MONOTONIC ns at which the tracker started in it.
    pub inst: u64,
    pub maps_start: Vec<Mapping>,
    pub maps_exit: Vec<Mapping>,
    /// The exit flush ran (`.info` exists): no buffered events were lost at the end.
    pub exited_cleanly: bool,
    pub lost: u64,
    pub min_size: Option<u64>,
    pub threads: Vec<u32>,
    pub events: Vec<RawEvent>,
    pub stacks: Stacks,
}

/// Everything in a tracker directory.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub processes: Vec<Process>,
    pub notes: Vec<String>,
}

/// Reads a tracker directory. Processes are in start order; their events in time order.
///
/// Every event is held in memory; `kairos collect memory-consumption` streams them instead
/// (crate::stream), this is for analyses that want them all at hand.
pub fn read_dir(dir: &Path) -> Result<Trace, Error> {
    let mut trace = scan(dir, |path, name, p, notes| {
        let bytes = std::fs::read(path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: e,
        })?;
        Ok(match decode_file(&bytes, p.inst, &mut p.stacks) {
            Ok((tid, mut ev, damage)) => {
                if let Some(d) = damage {
                    notes.push(damaged_note(name, &d));
                }
                if !p.threads.contains(&tid) {
                    p.threads.push(tid);
                }
                let n = ev.len() as u64;
                p.events.append(&mut ev);
                n
            }
            Err(d) => {
                notes.push(skipped_note(name, &d));
                0
            }
        })
    })?;
    for p in &mut trace.processes {
        // Stable: within a thread, file order is call order even at equal times.
        p.events.sort_by_key(|e| e.time_ns);
    }
    Ok(trace)
}

pub(crate) fn damaged_note(name: &str, damage: &str) -> String {
    format!("tracker file {name} is damaged ({damage}); the events before that point were kept")
}

pub(crate) fn skipped_note(name: &str, why: &str) -> String {
    format!("tracker file {name} was skipped: {why}")
}

/// The directory's processes with their maps and `.info`; each event file (in name order)
/// goes to `events` with its process, which returns how many events it holds. Processes
/// with neither events nor an exit flush are dropped; the rest are in start order (their
/// `events` are whatever `events` put there). Notes: what `events` added, then one per
/// process that did not end normally or lost batches.
pub(crate) fn scan(
    dir: &Path,
    mut events: impl FnMut(&Path, &str, &mut Process, &mut Vec<String>) -> Result<u64, Error>,
) -> Result<Trace, Error> {
    let io = |e: std::io::Error| Error::Io {
        path: dir.display().to_string(),
        source: e,
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut procs: BTreeMap<(u32, u64), (Process, u64)> = BTreeMap::new();
    let mut notes = Vec::new();
    for name in &names {
        let Some((key, rest)) = parse_name(name) else {
            continue;
        };
        let (p, count) = procs.entry(key).or_insert_with(|| {
            let p = Process {
                pid: key.0,
                inst: key.1,
                ..Default::default()
            };
            (p, 0)
        });
        let path = dir.join(name);
        match rest {
            Rest::MapsStart | Rest::MapsExit => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let maps = parse_maps(&text);
                if matches!(rest, Rest::MapsStart) {
                    p.maps_start = maps
                } else {
                    p.maps_exit = maps
                }
            }
            Rest::Info => {
                p.exited_cleanly = true;
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for line in text.lines() {
                    match line.split_once('=') {
                        Some(("lost", v)) => p.lost = v.trim().parse().unwrap_or(0),
                        Some(("min_size", v)) => p.min_size = v.trim().parse().ok(),
                        _ => {}
                    }
                }
            }
            Rest::Events => *count += events(&path, name, p, &mut notes)?,
        }
    }
    let mut processes: Vec<Process> = procs
        .into_values()
        .filter(|(p, count)| *count > 0 || p.exited_cleanly)
        .map(|(p, _)| p)
        .collect();
    for p in &processes {
        if !p.exited_cleanly {
            notes.push(format!(
                "process {} did not finish normally (killed, _exit or exec): events still in its buffers were lost",
                p.pid
            ));
        }
        if p.lost > 0 {
            notes.push(format!(
                "process {}: the tracker could not write {} event batches",
                p.pid, p.lost
            ));
        }
    }
    processes.sort_by_key(|p| p.inst);
    Ok(Trace { processes, notes })
}

enum Rest {
    MapsStart,
    MapsExit,
    Info,
    Events,
}

/// `PID-INST.maps.start`, `PID-INST.maps.exit`, `PID-INST.info`, `PID-INST-SEQ.kmt`.
fn parse_name(name: &str) -> Option<((u32, u64), Rest)> {
    let (stem, rest) = if let Some(s) = name.strip_suffix(".maps.start") {
        (s, Rest::MapsStart)
    } else if let Some(s) = name.strip_suffix(".maps.exit") {
        (s, Rest::MapsExit)
    } else if let Some(s) = name.strip_suffix(".info") {
        (s, Rest::Info)
    } else if let Some(s) = name.strip_suffix(".kmt") {
        (s.rsplit_once('-')?.0, Rest::Events)
    } else {
        return None;
    };
    let (pid, inst) = stem.split_once('-')?;
    Some(((pid.parse().ok()?, inst.parse().ok()?), rest))
}

/// Parses `/proc/PID/maps` text; malformed lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    kairos_procfs::maps::parse(text)
}

fn word(b: &[u8], at: usize) -> Option<u64> {
    let s = b.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

fn word32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

/// Bytes of a `.kmt` file's header; records follow it.
pub(crate) const HEADER_BYTES: usize = HEADER;

/// The header of a `.kmt` file (its first bytes): thread id and whether times are TSC
/// ticks; why not, when it is no tracker file this Kairos reads.
pub(crate) fn header(b: &[u8]) -> Result<(u32, bool), String> {
    if b.len() < HEADER || &b[..8] != MAGIC {
        return Err("not a Kairos allocation-tracker file (bad header)".into());
    }
    let version = word32(b, 8).unwrap_or(0);
    if version != 1 {
        return Err(format!(
            "format version {version}, this Kairos reads version 1"
        ));
    }
    Ok((word32(b, 16).unwrap_or(0), word32(b, 20).unwrap_or(0) == 1))
}

/// An event record's fixed words, times as written (ns since INST, or TSC ticks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head {
    pub kind: Kind,
    pub time: u64,
    /// Before the call, when the old block was still owned (realloc of a block, munmap, mremap).
    pub t0: Option<u64>,
    pub addr: u64,
    pub size: u64,
    pub aux: u64,
    pub aux2: u64,
    /// Return addresses: `depth` words at byte `frames_at` of the bytes parsed.
    pub depth: usize,
    pub frames_at: usize,
}

/// What [`parse`] found at a position.
#[derive(Debug)]
pub(crate) enum Record {
    /// A clock anchor: TSC ticks and CLOCK_MONOTONIC ns.
    Clock(u64, u64),
    Event(Head),
    /// The record goes on past the bytes at hand, which are not the end of the file.
    Short,
    /// The file is damaged here (the reason); nothing after it is read.
    Damage(String),
}

/// An event record's words before its stack: 2 for a free, 3 for malloc and calloc, 6
/// for the others.
#[inline]
fn head_words(kind: Kind) -> usize {
    match kind {
        Kind::Free => 2,
        Kind::Malloc | Kind::Calloc => 3,
        _ => 6,
    }
}

const MASK: u64 = (1u64 << 56) - 1;

impl Head {
    pub(crate) const NONE: Head = Head {
        kind: Kind::Free,
        time: 0,
        t0: None,
        addr: 0,
        size: 0,
        aux: 0,
        aux2: 0,
        depth: 0,
        frames_at: 0,
    };
}

/// The common case of [`parse`], written straight into `h`: a whole event record at `at`;
/// its length, or 0 for anything else (a clock anchor, a cut record, damage), which
/// [`parse`] then tells apart. (Returning the record by value cost a third of the
/// decoding in stalls of the copies.)
#[inline(always)]
pub(crate) fn event(b: &[u8], at: usize, h: &mut Head) -> usize {
    let Some(w0) = word(b, at) else {
        return 0;
    };
    let Some(kind) = Kind::from_code((w0 >> 56) as u8) else {
        return 0;
    };
    let head = head_words(kind);
    if b.len() < at + 8 * head {
        return 0;
    }
    let w = |i: usize| word(b, at + 8 * i).unwrap_or(0);
    let (size, depth) = if head > 2 {
        let w2 = w(2);
        (w2 & MASK, (w2 >> 56) as usize)
    } else {
        (0, 0)
    };
    let frames_at = at + 8 * head;
    if depth as u64 > MAX_DEPTH || b.len() < frames_at + 8 * depth {
        return 0;
    }
    h.kind = kind;
    h.time = w0 & MASK;
    h.addr = w(1);
    h.size = size;
    h.depth = depth;
    h.frames_at = frames_at;
    if head == 6 {
        h.aux = w(3);
        h.aux2 = w(4);
        let t0 =
            matches!(kind, Kind::Munmap | Kind::Mremap) || (kind == Kind::Realloc && h.aux != 0);
        h.t0 = if t0 { Some(w(5) & MASK) } else { None };
    } else {
        h.aux = 0;
        h.aux2 = 0;
        h.t0 = None;
    }
    8 * (head + depth)
}

/// Parses the record at `at` of `b` and says how many bytes it takes. `offset` is the
/// file position of `b[0]` (for the damage's sentence); `last`: `b` ends where the file
/// does, so a record cut by its end is damage rather than [`Record::Short`].
pub(crate) fn parse(b: &[u8], at: usize, offset: u64, last: bool) -> (Record, usize) {
    let mut h = Head::NONE;
    let n = event(b, at, &mut h);
    if n > 0 {
        return (Record::Event(h), n);
    }
    let cut = || {
        if last {
            Record::Damage(format!("cut record at byte {}", offset + at as u64))
        } else {
            Record::Short
        }
    };
    let Some(w0) = word(b, at) else {
        return (cut(), 0);
    };
    let kind_code = (w0 >> 56) as u8;
    if kind_code == K_CLOCK {
        return match word(b, at + 8) {
            Some(ns) => (Record::Clock(w0 & MASK, ns), 16),
            None => (cut(), 0),
        };
    }
    let Some(kind) = Kind::from_code(kind_code) else {
        let d = format!(
            "unknown record kind {kind_code} at byte {}",
            offset + at as u64
        );
        return (Record::Damage(d), 0);
    };
    let head = head_words(kind);
    if b.len() < at + 8 * head {
        return (cut(), 0);
    }
    let depth = if head > 2 {
        word(b, at + 16).map_or(0, |w2| (w2 >> 56) as usize)
    } else {
        0
    };
    if depth as u64 > MAX_DEPTH {
        let d = format!(
            "impossible stack depth {depth} at byte {}",
            offset + at as u64
        );
        return (Record::Damage(d), 0);
    }
    // Only the stack can be missing now.
    (cut(), 0)
}

/// Whether the `depth` return addresses at `frames_at` of `b` are `words`, compared in place.
#[inline]
pub(crate) fn frames_are(b: &[u8], h: &Head, words: &[u64]) -> bool {
    let Some(bytes) = b.get(h.frames_at..h.frames_at + 8 * h.depth) else {
        return false;
    };
    bytes.len() == 8 * words.len()
        && bytes.chunks_exact(8).zip(words).fold(0, |d, (c, w)| {
            d | (u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ w)
        }) == 0
}

/// The return addresses of an event parsed from `b`, into `out`; the filled part.
#[inline]
pub(crate) fn frames<'a>(b: &[u8], h: &Head, out: &'a mut [u64; MAX_DEPTH as usize]) -> &'a [u64] {
    let bytes = b.get(h.frames_at..h.frames_at + 8 * h.depth).unwrap_or(&[]);
    let mut n = 0;
    for (f, c) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *f = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        n += 1;
    }
    &out[..n]
}

/// Room for the deepest stack a record may hold.
pub(crate) type FrameBuf = [u64; MAX_DEPTH as usize];

/// Decodes one `.kmt` file: its thread id, events, and the damage found, if any.
/// `inst` is the process start (ns) that relative times are counted from.
pub fn decode_file(
    b: &[u8],
    inst: u64,
    stacks: &mut Stacks,
) -> Result<(u32, Vec<RawEvent>, Option<String>), String> {
    let (tid, tsc) = header(b)?;
    // A free is 16 bytes, a malloc about 40: reserve for the common mix.
    let mut events = Vec::with_capacity(b.len() / 32);
    let mut anchors: Vec<(u64, u64)> = Vec::new();
    let mut damage = None;
    let mut at = HEADER;
    while at < b.len() {
        let (rec, len) = parse(b, at, 0, true);
        match rec {
            Record::Clock(ticks, ns) => anchors.push((ticks, ns)),
            Record::Event(h) => {
                let stack = (h.depth > 0).then(|| stacks.intern_event(b, &h));
                events.push(RawEvent {
                    time_ns: h.time,
                    t0_ns: h.t0,
                    tid,
                    kind: h.kind,
                    addr: h.addr,
                    size: h.size,
                    aux: h.aux,
                    aux2: h.aux2,
                    stack,
                });
            }
            Record::Damage(d) => {
                damage = Some(d);
                break;
            }
            Record::Short => {
                damage = Some(format!("cut record at byte {at}"));
                break;
            }
        }
        at += len;
    }
    // Relative stamps to absolute ns: plain ns since `inst`, or TSC ticks mapped through
    // this file's clock anchors.
    let mut clock = Clock::new(tsc, inst, anchors);
    for e in &mut events {
        e.time_ns = clock.ns(e.time_ns);
        e.t0_ns = e.t0_ns.map(|t| clock.ns(t));
    }
    Ok((tid, events, damage))
}

/// A file's stamps to CLOCK_MONOTONIC ns: plain ns since `inst`, or TSC ticks mapped
/// through the file's clock anchors.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    tsc: bool,
    inst: u64,
    anchors: Vec<(u64, u64)>,
    /// Slope from each anchor to the next, and of the whole span (computed once: a
    /// division per stamp was a fifth of the decoding).
    slopes: Vec<f64>,
    span: f64,
    /// Anchors in tick order: [`Clock::ns`] may walk from the last anchor it used.
    sorted: bool,
    /// Anchors at or before the last stamp converted.
    cursor: usize,
}

impl Clock {
    pub fn new(tsc: bool, inst: u64, anchors: Vec<(u64, u64)>) -> Clock {
        let sorted = anchors.windows(2).all(|w| w[0].0 <= w[1].0);
        let slopes = anchors.windows(2).map(|w| slope(&w[0], &w[1])).collect();
        let span = match (anchors.first(), anchors.last()) {
            (Some(a), Some(b)) => slope(a, b),
            _ => 1.0,
        };
        Clock {
            tsc,
            inst,
            anchors,
            slopes,
            span,
            sorted,
            cursor: 0,
        }
    }

    #[inline]
    pub fn ns(&mut self, t: u64) -> u64 {
        if !self.tsc {
            return self.inst.saturating_add(t);
        }
        let a = &self.anchors;
        let i = if self.sorted {
            // The partition point of `a.0 <= t`, found from the last one: stamps come in
            // time order, so it rarely moves.
            let mut i = self.cursor.min(a.len());
            while i < a.len() && a[i].0 <= t {
                i += 1;
            }
            while i > 0 && a[i - 1].0 > t {
                i -= 1;
            }
            self.cursor = i;
            i
        } else {
            a.partition_point(|a| a.0 <= t)
        };
        self.interpolate(i, t).unwrap_or(self.inst)
    }

    /// Linear interpolation between the anchors around `t` (extrapolation with the slope
    /// of the whole span outside them); `i` is the number of anchors at or before `t`. One
    /// anchor alone: ticks are taken as ns.
    #[inline]
    fn interpolate(&self, i: usize, t: u64) -> Option<u64> {
        let a = &self.anchors;
        let (first, last) = (a.first()?, a.last()?);
        let (a, s) = if i == 0 || i >= a.len() {
            (if i == 0 { first } else { last }, self.span)
        } else {
            (a.get(i - 1)?, *self.slopes.get(i - 1)?)
        };
        let ns = a.1 as f64 + (t as f64 - a.0 as f64) * s;
        Some(if ns <= 0.0 { 0 } else { ns as u64 })
    }

    /// Whether later stamps never convert to earlier times: ns, or anchors whose ticks and
    /// ns both never go back (every slope is then at least 0).
    pub fn monotonic(&self) -> bool {
        !self.tsc || (self.sorted && self.anchors.windows(2).all(|w| w[0].1 <= w[1].1))
    }

    /// An upper bound of how far apart in ns two stamps `d` apart (in the file's unit) can
    /// convert, for a [`Clock::monotonic`] clock.
    pub fn span_bound(&self, d: u64) -> u64 {
        if !self.tsc {
            return d.saturating_add(1);
        }
        if self.anchors.is_empty() {
            return 0;
        }
        let steepest = self.slopes.iter().copied().fold(self.span, f64::max);
        let ns = (d as f64 * steepest).ceil();
        if ns >= u64::MAX as f64 {
            u64::MAX
        } else {
            (ns as u64).saturating_add(2)
        }
    }
}

fn slope(a: &(u64, u64), b: &(u64, u64)) -> f64 {
    if b.0 > a.0 {
        (b.1 as f64 - a.1 as f64) / (b.0 as f64 - a.0 as f64)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(tsc: u32) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        for v in [1u32, 10, 11, tsc] {
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

    #[test]
    fn decodes_and_survives_cuts() {
        let mut b = header(0);
        push(&mut b, &[5 | 1 << 56, 0x1000, 24 | 2 << 56, 0xaaa, 0xbbb]);
        push(&mut b, &[9 | 4 << 56, 0x1000]);
        let mut st = Stacks::default();
        let (tid, ev, dmg) = decode_file(&b, 100, &mut st).expect("valid");
        assert_eq!((tid, ev.len(), dmg), (11, 2, None));
        assert_eq!(
            st.list[ev[0].stack.expect("stack") as usize],
            vec![0xaaa, 0xbbb]
        );
        assert_eq!(ev[0].time_ns, 105);
        assert_eq!(ev[1].kind, Kind::Free);
        // Every prefix decodes without panicking.
        for n in 0..b.len() {
            let _ = decode_file(&b[..n], 0, &mut st);
        }
        b.push(0xff);
        let (_, ev, dmg) = decode_file(&b, 0, &mut st).expect("header ok");
        assert_eq!(ev.len(), 2);
        assert!(dmg.is_some());
    }

    #[test]
    fn tsc_anchors_interpolate() {
        let mut b = header(1);
        push(&mut b, &[15 << 56, 1000]);
        push(&mut b, &[100 | 1 << 56, 0x10, 8]);
        push(&mut b, &[200 | 15 << 56, 1100]);
        let (_, ev, _) = decode_file(&b, 0, &mut Stacks::default()).expect("valid");
        assert_eq!(ev[0].time_ns, 1050);
    }

    #[test]
    fn names() {
        assert!(matches!(
            parse_name("12-345-0.kmt"),
            Some(((12, 345), Rest::Events))
        ));
        assert!(matches!(
            parse_name("12-345.maps.exit"),
            Some(((12, 345), Rest::MapsExit))
        ));
        assert!(parse_name("junk").is_none());
    }
}
