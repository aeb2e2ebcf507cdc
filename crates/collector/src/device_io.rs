//! Which thread moves data through which device: kernel tracepoints recorded on every CPU
//! for every process (the reads of a socket and the DMA behind them happen in different
//! contexts, so a per-task recording would miss the half that names the device).
//!
//! - `block:block_bio_queue` fires in the submitting task: device, sectors, read or write.
//! - `net:netif_receive_skb` names the interface a packet (skb address) came in on;
//!   `skb:skb_copy_datagram_iovec` fires in the reading task when that packet's data is
//!   copied to user space, with the same skb address.
//! - `net:net_dev_queue` fires where a packet is queued for an interface, usually in the
//!   sending task's system call.
//! - `sched:sched_process_fork` gives the process tree, to keep a launched program's
//!   children; `task:task_rename` the names of tasks that exit before the end (exec).
//!
//! Field offsets come from each tracepoint's tracefs `format` file, so kernel layout
//! changes are followed. Each CPU's events share one ring (SET_OUTPUT).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use perf_event_open_sys as sys;

use crate::extra::TracepointFields as Fields;
use sys::bindings as b;

use crate::extra::{tracepoint_id, TRACEFS};
use crate::ring::Ring;

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceEvent {
    /// A bio queued to block device `dev` (the kernel's dev_t: major << 20 | minor) by
    /// the task named `comm`.
    Block {
        task: Task,
        dev: u32,
        bytes: u64,
        write: bool,
        comm: String,
    },
    /// A received packet on interface `name`, at `time` (perf clock, ns).
    Received { skb: u64, name: String, time: u64 },
    /// Received data copied to the reading task.
    Copied { task: Task, skb: u64, bytes: u64 },
    /// A packet queued for transmission on interface `name`.
    Queued {
        task: Task,
        name: String,
        bytes: u64,
    },
    /// Task `child` created by task `parent`.
    Fork { parent: u32, child: u32 },
    /// Task `tid` took the name `comm` (exec, prctl): names tasks gone before the end.
    Renamed { tid: u32, comm: String },
}

/// Who, where and when: process, thread, CPU, time (perf clock, ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Task {
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub time: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Block,
    Received,
    Copied,
    Queued,
    Fork,
    Renamed,
}

const TRACEPOINTS: [(&str, &str, Kind); 6] = [
    ("block", "block_bio_queue", Kind::Block),
    ("net", "netif_receive_skb", Kind::Received),
    ("skb", "skb_copy_datagram_iovec", Kind::Copied),
    ("net", "net_dev_queue", Kind::Queued),
    ("sched", "sched_process_fork", Kind::Fork),
    ("task", "task_rename", Kind::Renamed),
];

/// The open tracepoints and their rings.
pub struct DeviceTracer {
    rings: Vec<Ring>,
    _fds: Vec<OwnedFd>,
    ids: HashMap<u64, (Kind, usize)>,
    fields: Vec<Fields>,
    /// Records the kernel dropped because a ring was full.
    pub lost: u64,
    /// Tracepoints that could not be opened, with why.
    pub missing: Vec<String>,
}

// Sample layout: IDENTIFIER, TID, TIME, CPU, RAW (perf_event.h order).
const SAMPLE_TYPE: u64 = (b::PERF_SAMPLE_IDENTIFIER
    | b::PERF_SAMPLE_TID
    | b::PERF_SAMPLE_TIME
    | b::PERF_SAMPLE_CPU
    | b::PERF_SAMPLE_RAW) as u64;

fn open_one(config: u64, cpu: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: perf_event_attr is plain data; zeroed is its documented default.
    let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
    a.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    a.type_ = b::PERF_TYPE_TRACEPOINT;
    a.config = config;
    a.__bindgen_anon_1.sample_period = 1;
    a.sample_type = SAMPLE_TYPE;
    a.set_sample_id_all(1);
    // One clock for all CPUs: a packet's reception and its copy happen on different CPUs,
    // and their order is judged by time.
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    // SAFETY: a valid attr; pid -1 with a CPU records every task on it.
    let fd = unsafe { sys::perf_event_open(&mut a, -1, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as _) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl DeviceTracer {
    /// Opens every tracepoint on every CPU in `cpus` (`pages` data pages a ring). Fails
    /// with the reason when none can be opened.
    pub fn open(cpus: &[i32], pages: usize) -> Result<DeviceTracer, String> {
        let mut t = DeviceTracer {
            rings: Vec::new(),
            _fds: Vec::new(),
            ids: HashMap::new(),
            fields: Vec::new(),
            lost: 0,
            missing: Vec::new(),
        };
        let mut usable = Vec::new();
        for (system, event, kind) in TRACEPOINTS {
            let format = [TRACEFS, "/sys/kernel/debug/tracing"].iter().find_map(|r| {
                std::fs::read_to_string(format!("{r}/events/{system}/{event}/format")).ok()
            });
            match (tracepoint_id(system, event), format) {
                (Ok(id), Some(f)) => {
                    t.fields.push(Fields::parse(&f));
                    usable.push((id, kind, t.fields.len() - 1));
                }
                (Err(e), _) => t.missing.push(format!("{system}:{event}: {e}")),
                (_, None) => t.missing.push(format!("{system}:{event}: no format file")),
            }
        }
        for &cpu in cpus {
            let mut lead: Option<i32> = None;
            for &(config, kind, f) in &usable {
                let fd = match open_one(config, cpu) {
                    Ok(fd) => fd,
                    Err(e) => {
                        let why = format!("opening tracepoint {config} on CPU {cpu}: {e}");
                        if !t.missing.contains(&why) {
                            t.missing.push(why);
                        }
                        continue;
                    }
                };
                match lead {
                    None => {
                        let ring = Ring::map(fd.as_raw_fd(), pages)
                            .map_err(|e| format!("mapping the ring of CPU {cpu}: {e}"))?;
                        t.rings.push(ring);
                        lead = Some(fd.as_raw_fd());
                    }
                    // SAFETY: both fds are perf events on the same CPU.
                    Some(l) => unsafe {
                        if sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), l) != 0 {
                            return Err(format!(
                                "sharing CPU {cpu}'s ring: {}",
                                std::io::Error::last_os_error()
                            ));
                        }
                    },
                }
                let mut id = 0u64;
                // SAFETY: ID writes one u64.
                if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } != 0 {
                    return Err(format!(
                        "reading an event id: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                t.ids.insert(id, (kind, f));
                t._fds.push(fd);
            }
        }
        if t.rings.is_empty() {
            return Err(if t.missing.is_empty() {
                "no CPU to record on".into()
            } else {
                t.missing.join("; ")
            });
        }
        Ok(t)
    }

    /// Decodes every record waiting in the rings.
    pub fn drain(&mut self, sink: &mut dyn FnMut(DeviceEvent)) {
        let (ids, fields) = (&self.ids, &self.fields);
        let mut lost = 0;
        for ring in &mut self.rings {
            ring.drain(&mut |rec| match decode(rec, ids, fields) {
                Decoded::Event(e) => sink(e),
                Decoded::Lost(n) => lost += n,
                Decoded::Other => {}
            });
        }
        self.lost += lost;
    }
}

enum Decoded {
    Event(DeviceEvent),
    Lost(u64),
    Other,
}

fn u32_at(r: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(r.get(o..o + 4)?.try_into().ok()?))
}
fn u64_at(r: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(r.get(o..o + 8)?.try_into().ok()?))
}

fn decode(rec: &[u8], ids: &HashMap<u64, (Kind, usize)>, fields: &[Fields]) -> Decoded {
    let Some(kind) = u32_at(rec, 0) else {
        return Decoded::Other;
    };
    if kind == b::PERF_RECORD_LOST {
        return u64_at(rec, 16).map_or(Decoded::Other, Decoded::Lost);
    }
    if kind != b::PERF_RECORD_SAMPLE {
        return Decoded::Other;
    }
    sample(rec, ids, fields).map_or(Decoded::Other, Decoded::Event)
}

fn sample(rec: &[u8], ids: &HashMap<u64, (Kind, usize)>, fields: &[Fields]) -> Option<DeviceEvent> {
    let id = u64_at(rec, 8)?;
    let (kind, f) = *ids.get(&id)?;
    let f = fields.get(f)?;
    let task = Task {
        pid: u32_at(rec, 16)?,
        tid: u32_at(rec, 20)?,
        cpu: u32_at(rec, 32)?,
        time: u64_at(rec, 24)?,
    };
    let size = u32_at(rec, 40)? as usize;
    let raw = rec.get(44..44 + size)?;
    Some(match kind {
        Kind::Block => {
            let rwbs = f.text(raw, "rwbs")?;
            // Reads and writes only: flushes and discards move no data.
            let write = rwbs.contains('W');
            if !write && !rwbs.contains('R') {
                return None;
            }
            DeviceEvent::Block {
                task,
                dev: f.uint(raw, "dev")? as u32,
                bytes: f.uint(raw, "nr_sector")? * 512,
                write,
                comm: f.text(raw, "comm").unwrap_or_default(),
            }
        }
        Kind::Received => DeviceEvent::Received {
            skb: f.uint(raw, "skbaddr")?,
            name: f.text(raw, "name")?,
            time: task.time,
        },
        Kind::Copied => DeviceEvent::Copied {
            task,
            skb: f.uint(raw, "skbaddr")?,
            bytes: f.uint(raw, "len")?,
        },
        Kind::Queued => DeviceEvent::Queued {
            task,
            name: f.text(raw, "name")?,
            bytes: f.uint(raw, "len")?,
        },
        Kind::Fork => DeviceEvent::Fork {
            parent: f.uint(raw, "parent_pid")? as u32,
            child: f.uint(raw, "child_pid")? as u32,
        },
        Kind::Renamed => DeviceEvent::Renamed {
            tid: f.uint(raw, "pid")? as u32,
            comm: f.text(raw, "newcomm")?,
        },
    })
}

#[cfg(test)]
#[path = "device_io_tests.rs"]
mod tests;
