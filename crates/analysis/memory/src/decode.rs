//! Reader of the allocation tracker's output directory (runtime/memtrack, format in its
//! README): per-thread `.kmt` event files, `.maps.start`/`.maps.exit` copies and `.info`.
//!
//! Damage never fails the whole read: a cut or corrupt file keeps the events before the
//! damage and adds a note.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{Error, Kind};

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
}

impl Stacks {
    pub fn intern(&mut self, frames: &[u64]) -> u32 {
        if let Some(&i) = self.index.get(frames) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(frames.to_vec());
        self.index.insert(frames.to_vec(), i);
        i
    }
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
pub fn read_dir(dir: &Path) -> Result<Trace, Error> {
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
    let mut procs: BTreeMap<(u32, u64), Process> = BTreeMap::new();
    let mut notes = Vec::new();
    for name in &names {
        let Some((key, rest)) = parse_name(name) else {
            continue;
        };
        let p = procs.entry(key).or_insert_with(|| Process {
            pid: key.0,
            inst: key.1,
            ..Default::default()
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
            Rest::Events => {
                let bytes = std::fs::read(&path).map_err(|e| Error::Io {
                    path: path.display().to_string(),
                    source: e,
                })?;
                match decode_file(&bytes, key.1, &mut p.stacks) {
                    Ok((tid, mut ev, damage)) => {
                        if let Some(d) = damage {
                            notes.push(format!("tracker file {name} is damaged ({d}); the events before that point were kept"));
                        }
                        if !p.threads.contains(&tid) {
                            p.threads.push(tid);
                        }
                        p.events.append(&mut ev);
                    }
                    Err(d) => notes.push(format!("tracker file {name} was skipped: {d}")),
                }
            }
        }
    }
    let mut processes: Vec<Process> = procs
        .into_values()
        .filter(|p| !p.events.is_empty() || p.exited_cleanly)
        .collect();
    for p in &mut processes {
        // Stable: within a thread, file order is call order even at equal times.
        p.events.sort_by_key(|e| e.time_ns);
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
    let s = b.get(at..at + 8)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

fn word32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_le_bytes(s.try_into().ok()?))
}

/// Decodes one `.kmt` file: its thread id, events, and the damage found, if any.
/// `inst` is the process start (ns) that relative times are counted from.
pub fn decode_file(
    b: &[u8],
    inst: u64,
    stacks: &mut Stacks,
) -> Result<(u32, Vec<RawEvent>, Option<String>), String> {
    if b.len() < HEADER || &b[..8] != MAGIC {
        return Err("not a Kairos allocation-tracker file (bad header)".into());
    }
    let version = word32(b, 8).unwrap_or(0);
    if version != 1 {
        return Err(format!(
            "format version {version}, this Kairos reads version 1"
        ));
    }
    let tid = word32(b, 16).unwrap_or(0);
    let tsc = word32(b, 20).unwrap_or(0) == 1;
    // A free is 16 bytes, a malloc about 40: reserve for the common mix.
    let mut events = Vec::with_capacity(b.len() / 32);
    let mut anchors: Vec<(u64, u64)> = Vec::new();
    let mut damage = None;
    let mut at = HEADER;
    let mask = (1u64 << 56) - 1;
    while at < b.len() {
        let Some(w0) = word(b, at) else {
            damage = Some(format!("cut record at byte {at}"));
            break;
        };
        let kind_code = (w0 >> 56) as u8;
        let time = w0 & mask;
        if kind_code == K_CLOCK {
            match word(b, at + 8) {
                Some(ns) => anchors.push((time, ns)),
                None => damage = Some(format!("cut record at byte {at}")),
            }
            at += 16;
            continue;
        }
        let Some(kind) = Kind::from_code(kind_code) else {
            damage = Some(format!("unknown record kind {kind_code} at byte {at}"));
            break;
        };
        let head = match kind {
            Kind::Free => 2,
            Kind::Malloc | Kind::Calloc => 3,
            _ => 6,
        };
        // Fixed words first (no allocation per event: this loop sees millions of them).
        let mut h = [0u64; 6];
        if b.len() < at + 8 * head {
            damage = Some(format!("cut record at byte {at}"));
            break;
        }
        for (i, w) in h.iter_mut().enumerate().take(head) {
            *w = word(b, at + 8 * i).unwrap_or(0);
        }
        let (size, depth) = if head > 2 {
            (h[2] & mask, (h[2] >> 56) as usize)
        } else {
            (0, 0)
        };
        if depth as u64 > MAX_DEPTH {
            damage = Some(format!("impossible stack depth {depth} at byte {at}"));
            break;
        }
        let frames_at = at + 8 * head;
        let Some(fb) = b.get(frames_at..frames_at + 8 * depth) else {
            damage = Some(format!("cut record at byte {at}"));
            break;
        };
        let mut frames = [0u64; MAX_DEPTH as usize];
        for (f, c) in frames.iter_mut().zip(fb.chunks_exact(8)) {
            *f = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        }
        let stack = (depth > 0).then(|| stacks.intern(&frames[..depth]));
        let t0 =
            matches!(kind, Kind::Munmap | Kind::Mremap) || (kind == Kind::Realloc && h[3] != 0);
        events.push(RawEvent {
            time_ns: time,
            t0_ns: if t0 { Some(h[5] & mask) } else { None },
            tid,
            kind,
            addr: h[1],
            size,
            aux: h[3],
            aux2: h[4],
            stack,
        });
        at = frames_at + 8 * depth;
    }
    // Relative stamps to absolute ns: plain ns since `inst`, or TSC ticks mapped through
    // this file's clock anchors.
    let convert = |t: u64| -> u64 {
        if !tsc {
            return inst.saturating_add(t);
        }
        ticks_to_ns(&anchors, t).unwrap_or(inst)
    };
    for e in &mut events {
        e.time_ns = convert(e.time_ns);
        e.t0_ns = e.t0_ns.map(convert);
    }
    Ok((tid, events, damage))
}

/// Linear interpolation between the anchors around `t` (extrapolation with the slope of
/// the whole span outside them). One anchor alone: ticks are taken as ns.
fn ticks_to_ns(anchors: &[(u64, u64)], t: u64) -> Option<u64> {
    let (first, last) = (anchors.first()?, anchors.last()?);
    let slope = |a: &(u64, u64), b: &(u64, u64)| -> f64 {
        if b.0 > a.0 {
            (b.1 as f64 - a.1 as f64) / (b.0 as f64 - a.0 as f64)
        } else {
            1.0
        }
    };
    let i = anchors.partition_point(|a| a.0 <= t);
    let (a, s) = if i == 0 || i >= anchors.len() {
        let a = if i == 0 { first } else { last };
        (a, slope(first, last))
    } else {
        (&anchors[i - 1], slope(&anchors[i - 1], &anchors[i]))
    };
    let ns = a.1 as f64 + (t as f64 - a.0 as f64) * s;
    Some(if ns <= 0.0 { 0 } else { ns as u64 })
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
