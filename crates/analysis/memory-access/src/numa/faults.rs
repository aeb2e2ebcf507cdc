//! Page faults from the recording, for first touch: the page-fault tracepoints
//! (exceptions:page_fault_user, and page_fault_kernel for a user address the kernel wrote,
//! as read(2) does into a fresh buffer) carry the address and the error code (read or
//! write); the software page-fault events carry the address only. The records are read
//! from perf.data for their payload, and given the user call stack the converter
//! symbolised for the same sample (same time and thread).

use std::collections::HashMap;
use std::path::Path;

use kairos_model::Profile;
use kairos_perf_data::{PerfFile, Record, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
use kairos_session::Conversion;

/// Addresses at and above this are the kernel's (x86-64, arm64).
const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;
/// The error code's write bit (x86 X86_PF_WRITE).
const PF_WRITE: u64 = 1 << 1;

/// One recorded page fault on a user address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    pub time_ns: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub addr: u64,
    /// From the error code; None from a software event, which has none.
    pub write: Option<bool>,
    /// The user call stack (index into the profile's stacks).
    pub stack: Option<u32>,
}

/// The faults of a recording and which events they came from.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    pub faults: Vec<Fault>,
    /// The events read, e.g. "exceptions:page_fault_user"; empty when none was recorded.
    pub events: Vec<String>,
    /// Faults left out as the recording's own: taken while a sample's call stack was
    /// read (`kairos_convert::SideSample::nested`).
    pub recording_faults: u64,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A tracepoint whose payload is (address, ip, error_code).
    Tracepoint,
    /// A software event with PERF_SAMPLE_ADDR.
    Software,
}

fn kind_of(name: &str, type_: u32) -> Option<Kind> {
    let base = name.split(':').take(2).collect::<Vec<_>>();
    match (type_, base.as_slice()) {
        (PERF_TYPE_TRACEPOINT, ["exceptions", "page_fault_user" | "page_fault_kernel"]) => {
            Some(Kind::Tracepoint)
        }
        (PERF_TYPE_SOFTWARE, ["minor-faults" | "major-faults" | "page-faults" | "faults", ..]) => {
            Some(Kind::Software)
        }
        _ => None,
    }
}

/// The faults in `perf_data`, with stacks from the conversion `c` of the same file.
pub fn read(perf_data: &Path, c: &Conversion) -> Faults {
    let mut out = Faults::default();
    let file = match PerfFile::open(perf_data) {
        Ok(f) => f,
        Err(e) => {
            out.notes.push(format!(
                "page faults not read ({e}): first touch is unknown"
            ));
            return out;
        }
    };
    let kinds: Vec<Option<Kind>> = file
        .attrs()
        .iter()
        .map(|a| kind_of(a.name.as_deref().unwrap_or(""), a.attr.type_))
        .collect();
    out.events = file
        .attrs()
        .iter()
        .zip(&kinds)
        .filter(|(_, k)| k.is_some())
        .filter_map(|(a, _)| a.name.clone())
        .collect();
    if out.events.is_empty() {
        return out;
    }
    let stacks = stacks_by_sample(c);
    let own = recording_own(c);
    let mut damaged = None;
    for r in file.records() {
        let s = match r {
            Ok(Record::Sample(s)) => s,
            Ok(_) => continue,
            Err(e) => {
                damaged = Some(e.to_string());
                break;
            }
        };
        let Some(kind) = kinds.get(s.attr_index).copied().flatten() else {
            continue;
        };
        let (addr, write) = match kind {
            Kind::Tracepoint => match s.raw.and_then(payload) {
                Some((a, code)) => (a, Some(code & PF_WRITE != 0)),
                None => continue,
            },
            Kind::Software => match s.addr {
                Some(a) => (a, None),
                None => continue,
            },
        };
        // Kernel-mode faults on kernel addresses place no page of the program.
        if addr >= KERNEL_HALF {
            continue;
        }
        let (time_ns, tid) = (s.time.unwrap_or(0), s.tid.unwrap_or(0).max(0) as u32);
        if own.contains(&(time_ns, tid)) {
            out.recording_faults += 1;
            continue;
        }
        out.faults.push(Fault {
            time_ns,
            pid: s.pid.unwrap_or(0).max(0) as u32,
            tid,
            cpu: s.cpu.unwrap_or(0),
            addr,
            write,
            stack: stacks.get(&(time_ns, tid)).copied(),
        });
    }
    if let Some(e) = damaged {
        out.notes.push(format!("the recording is damaged after {} page faults ({e}): first touch counts the faults before it", out.faults.len()));
    }
    out.faults.sort_by_key(|f| f.time_ns);
    out
}

/// A tracepoint payload's address and error code: after the 8-byte common header,
/// `unsigned long address; unsigned long ip; unsigned long error_code;`.
fn payload(raw: &[u8]) -> Option<(u64, u64)> {
    let word = |at: usize| {
        raw.get(at..at + 8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    };
    Some((word(8)?, word(24)?))
}

/// The stack of each converted sample by (time, tid): side samples (a timer-led file puts
/// every other event there) and profile samples (a file led by PMU events keeps them all).
fn stacks_by_sample(c: &Conversion) -> HashMap<(u64, u32), u32> {
    let tid = |p: &Profile, t: u32| p.threads.get(t as usize).map_or(0, |t| t.tid.max(0) as u32);
    let mut m = HashMap::new();
    for s in &c.side_samples {
        if let Some(st) = s.stack {
            m.insert((s.time_ns, tid(&c.profile, s.thread)), st);
        }
    }
    for s in &c.profile.samples {
        if let Some(st) = s.stack {
            m.entry((s.time_ns, tid(&c.profile, s.thread)))
                .or_insert(st);
        }
    }
    m
}

/// (time, tid) of the records the converter found written inside a sample being taken:
/// the faults of the kernel's walk of the user stack, not the program's.
fn recording_own(c: &Conversion) -> std::collections::HashSet<(u64, u32)> {
    let tid = |t: u32| {
        c.profile
            .threads
            .get(t as usize)
            .map_or(0, |t| t.tid.max(0) as u32)
    };
    c.side_samples
        .iter()
        .filter(|s| s.nested)
        .map(|s| (s.time_ns, tid(s.thread)))
        .collect()
}

/// `init_arrays (triad.c:40) <- main (triad.c:88)`, innermost first, at most `depth` frames.
pub fn stack_text(p: &Profile, stack: Option<u32>, depth: usize) -> (String, String) {
    let mut names = Vec::new();
    let mut at = stack;
    while let Some(i) = at {
        let Some(s) = p.stacks.get(i as usize) else {
            break;
        };
        if let Some(f) = p.frames.get(s.frame as usize) {
            let base = f.file.as_deref().map(|x| x.rsplit('/').next().unwrap_or(x));
            names.push(match (base, f.line) {
                (Some(file), Some(line)) => format!("{} ({file}:{line})", f.function),
                _ => f.function.clone(),
            });
        }
        at = s.parent;
        if names.len() >= depth {
            break;
        }
    }
    let leaf = stack
        .and_then(|i| p.stacks.get(i as usize))
        .and_then(|s| p.frames.get(s.frame as usize))
        .map_or("[unknown]".to_string(), |f| f.function.clone());
    (leaf, names.join(" <- "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracepoint_payloads_give_address_and_direction() {
        let mut raw = vec![0u8; 32];
        raw[8..16].copy_from_slice(&0x7f00_1234u64.to_le_bytes());
        raw[24..32].copy_from_slice(&0x6u64.to_le_bytes());
        assert_eq!(payload(&raw), Some((0x7f00_1234, 6)));
        assert_eq!(payload(&raw[..20]), None);
    }

    #[test]
    fn fault_events_are_told_by_name_and_type() {
        assert_eq!(
            kind_of("exceptions:page_fault_user", PERF_TYPE_TRACEPOINT),
            Some(Kind::Tracepoint)
        );
        assert_eq!(
            kind_of("exceptions:page_fault_kernel", PERF_TYPE_TRACEPOINT),
            Some(Kind::Tracepoint)
        );
        assert_eq!(
            kind_of("minor-faults:u", PERF_TYPE_SOFTWARE),
            Some(Kind::Software)
        );
        assert_eq!(kind_of("cpu-clock", PERF_TYPE_SOFTWARE), None);
        assert_eq!(
            kind_of("exceptions:page_fault_user", PERF_TYPE_SOFTWARE),
            None
        );
    }
}
