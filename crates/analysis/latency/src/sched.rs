//! When each thread was off the CPU and why, from the scheduler's records: a
//! sched:sched_switch written as the thread left its CPU (its state says blocked or still
//! runnable, `next_pid` who took the CPU, the user call stack where it blocked), the
//! PERF_RECORD_SWITCH switch-in that ended it, and the sched:sched_waking that a waker
//! wrote, with its own stack, when it made the thread runnable again.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use kairos_collector::extra::{field_text, field_uint, TracepointFields};
use kairos_convert::SideSample;
use kairos_model::{Profile, StackIdx, ThreadIdx};
use serde::{Deserialize, Serialize};

/// Offsets (in the raw payload, common header included) of the fields read, from the
/// tracepoints' format files at collection; the defaults are every kernel's since 4.x.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fields {
    pub prev_state: (usize, usize),
    pub next_comm: (usize, usize),
    pub next_pid: (usize, usize),
    pub waking_pid: (usize, usize),
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            prev_state: (32, 8),
            next_comm: (40, 16),
            next_pid: (56, 4),
            waking_pid: (24, 4),
        }
    }
}

/// The tracepoints this reads, as recorded.
pub const SWITCH: &str = "sched:sched_switch";
pub const WAKING: &str = "sched:sched_waking";

impl Fields {
    /// Read from tracefs; the defaults for what cannot be read.
    pub fn from_tracefs() -> Fields {
        let d = Fields::default();
        let sw = TracepointFields::read("sched", "sched_switch").unwrap_or_default();
        let wk = TracepointFields::read("sched", "sched_waking").unwrap_or_default();
        Fields {
            prev_state: sw.get("prev_state").unwrap_or(d.prev_state),
            next_comm: sw.get("next_comm").unwrap_or(d.next_comm),
            next_pid: sw.get("next_pid").unwrap_or(d.next_pid),
            waking_pid: wk.get("pid").unwrap_or(d.waking_pid),
        }
    }
}

/// A signed field (a pid, a task state) of 4 or 8 bytes.
fn int(raw: &[u8], field: (usize, usize)) -> Option<i64> {
    let v = field_uint(raw, field)?;
    Some(match field.1 {
        4 => v as u32 as i32 as i64,
        8 => v as i64,
        _ => return None,
    })
}

fn text(raw: &[u8], field: (usize, usize)) -> String {
    field_text(raw, field).unwrap_or_default()
}

/// One time a thread was off its CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffCpu {
    pub start: u64,
    /// u64::MAX when the switch-in was not seen.
    pub end: u64,
    /// Still runnable when it left (preempted), rather than waiting.
    pub runnable: bool,

    /// Where it blocked (user stack).
    pub stack: Option<StackIdx>,
    pub next_tid: i32,
    pub next_name: String,
    pub waker: Option<Waking>,
}

/// A wake-up of a thread by another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waking {
    pub time: u64,
    pub thread: ThreadIdx,
    pub stack: Option<StackIdx>,
}

/// For each thread of the profile, the first thread with its id: a recording can name one
/// thread twice (its process seen as -1 in one record, its pid in another), and one thread
/// must have one timeline.
pub fn canonical(profile: &Profile) -> Vec<ThreadIdx> {
    let mut first: HashMap<i32, ThreadIdx> = HashMap::default();
    profile
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| *first.entry(t.tid).or_insert(i as ThreadIdx))
        .collect()
}

/// Every thread's times off the CPU, in time order, by canonical thread ([`canonical`]).
pub fn off_cpu(
    side: &[SideSample],
    events: &[String],
    switch_ins: &BTreeMap<u32, Vec<u64>>,
    profile: &Profile,
    fields: &Fields,
) -> HashMap<ThreadIdx, Vec<OffCpu>> {
    let attr_of = |name: &str| {
        events
            .iter()
            .position(|e| e.starts_with(name))
            .map(|i| i as u32)
    };
    let (switch, waking) = (attr_of(SWITCH), attr_of(WAKING));
    let canon = canonical(profile);
    let canon_of = |t: ThreadIdx| canon.get(t as usize).copied().unwrap_or(t);
    let tid_index: HashMap<i32, ThreadIdx> = profile
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.tid, canon_of(i as ThreadIdx)))
        .collect();
    let mut wakings: HashMap<ThreadIdx, Vec<Waking>> = HashMap::default();
    let mut out: HashMap<ThreadIdx, Vec<OffCpu>> = HashMap::default();
    // A switch names the thread that gets the CPU: its switch-in, seen even where no
    // PERF_RECORD_SWITCH is (system-wide recordings write the CPU-wide kind).
    let mut switched_in: HashMap<ThreadIdx, Vec<u64>> = HashMap::default();
    for s in side {
        let Some(raw) = s.raw.as_deref() else {
            continue;
        };
        if Some(s.attr) == waking {
            let Some(target) = int(raw, fields.waking_pid).and_then(|p| tid_index.get(&(p as i32)))
            else {
                continue;
            };
            wakings.entry(*target).or_default().push(Waking {
                time: s.time_ns,
                thread: canon_of(s.thread),
                stack: s.stack,
            });
        } else if Some(s.attr) == switch {
            let state = int(raw, fields.prev_state).unwrap_or(0);
            let next = int(raw, fields.next_pid).unwrap_or(0) as i32;
            if let Some(&t) = tid_index.get(&next).filter(|_| next > 0) {
                switched_in.entry(t).or_default().push(s.time_ns);
            }
            out.entry(canon_of(s.thread)).or_default().push(OffCpu {
                start: s.time_ns,
                end: u64::MAX,
                // The low bits are the task states (S, D, T, ...); preemption is reported
                // as a bit above them.
                runnable: state & 0xff == 0,

                stack: s.stack,
                next_tid: int(raw, fields.next_pid).unwrap_or(0) as i32,
                next_name: text(raw, fields.next_comm),
                waker: None,
            });
        }
    }
    let mut recorded_ins: HashMap<ThreadIdx, Vec<u64>> = HashMap::default();
    for (t, v) in switch_ins {
        recorded_ins.entry(canon_of(*t)).or_default().extend(v);
    }
    for (thread, offs) in out.iter_mut() {
        let mut ins = recorded_ins.get(thread).cloned().unwrap_or_default();
        ins.extend(switched_in.get(thread).into_iter().flatten());
        ins.sort_unstable();
        let wakes = wakings.get(thread).map(Vec::as_slice).unwrap_or(&[]);
        let starts: Vec<u64> = offs.iter().map(|o| o.start).collect();
        for (k, o) in offs.iter_mut().enumerate() {
            let i = ins.partition_point(|&t| t < o.start);
            if let Some(&t) = ins.get(i) {
                o.end = t;
            }
            // A thread leaves its CPU again only after it came back: never past its next
            // switch-out, even when the switch-in was not seen.
            if let Some(&next) = starts.get(k + 1) {
                o.end = o.end.min(next);
            }
            o.waker = wakes
                .iter()
                .rev()
                .find(|w| w.time >= o.start && w.time <= o.end)
                .copied();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_from_a_format_file() {
        let f = "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n";
        let f = TracepointFields::parse(f);
        assert_eq!(f.get("prev_state"), Some((32, 8)));
        assert_eq!(f.get("next_comm"), Some((40, 16)));
        assert_eq!(f.get("next_pid"), None);
    }

    fn side(attr: u32, t: u64, thread: u32, raw: Vec<u8>) -> SideSample {
        SideSample {
            attr,
            time_ns: t,
            thread,
            cpu: 0,
            ip: 0,
            stack: None,
            addr: None,
            object: None,
            payload: None,
            nested: false,
            raw: Some(raw.into()),
        }
    }

    #[test]
    fn a_switch_out_ends_at_the_next_switch_in_with_its_waker() {
        let mut profile = Profile::default();
        for tid in [10, 11] {
            profile.threads.push(kairos_model::Thread {
                pid: 10,
                tid,
                name: String::new(),
                process_name: String::new(),
            });
        }
        let mut sw = vec![0u8; 64];
        sw[32..40].copy_from_slice(&1i64.to_le_bytes()); // S: blocked
        sw[56..60].copy_from_slice(&11i32.to_le_bytes());
        sw[40..44].copy_from_slice(b"hog\0");
        let mut wk = vec![0u8; 36];
        wk[24..28].copy_from_slice(&10i32.to_le_bytes());
        let events = vec!["cpu-clock".to_string(), SWITCH.into(), WAKING.into()];
        let samples = vec![side(1, 100, 0, sw.clone()), side(2, 150, 1, wk)];
        let mut ins = BTreeMap::new();
        ins.insert(0u32, vec![50, 180, 400]);
        let off = off_cpu(&samples, &events, &ins, &profile, &Fields::default());
        let o = &off[&0][0];
        assert_eq!((o.start, o.end, o.runnable), (100, 180, false));
        assert_eq!((o.next_tid, o.next_name.as_str()), (11, "hog"));
        assert_eq!(o.waker.map(|w| w.thread), Some(1));
        sw[32..40].copy_from_slice(&0x100i64.to_le_bytes()); // preempted
        let off = off_cpu(
            &[side(1, 100, 0, sw)],
            &events,
            &BTreeMap::new(),
            &profile,
            &Fields::default(),
        );
        assert!(off[&0][0].runnable);
        assert_eq!(off[&0][0].end, u64::MAX);
    }
}
