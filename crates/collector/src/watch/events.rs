//! The breakpoint events behind the slots: opening, moving, and reading their samples.
//!
//! One event per (slot, thread, CPU), opened disabled on a placeholder address so that the
//! debug register is reserved from the start (ENOSPC shows at open, not mid-run). Each is
//! per-CPU with `inherit`: the kernel refuses to mmap an inherited event opened with
//! cpu = -1, and inheritance is what follows threads the target creates later. All events
//! of one CPU write into one ring buffer (SET_OUTPUT), so there are as many rings as CPUs.

use std::os::fd::{AsRawFd, OwnedFd};

use perf_event_open_sys as sys;
use sys::bindings as b;

use super::records::{parse, Drained};
use super::WatchError;
use crate::ring::Ring;

/// Data pages per CPU ring: a hit record is 56 bytes, so about 4,600 hits fit, far more
/// than a duty-cycled window produces between two drains.
const RING_PAGES: usize = 64;

/// The sample fields, in the order the kernel writes them.
const SAMPLE_TYPE: u64 = (b::PERF_SAMPLE_IDENTIFIER
    | b::PERF_SAMPLE_IP
    | b::PERF_SAMPLE_TID
    | b::PERF_SAMPLE_TIME
    | b::PERF_SAMPLE_ADDR
    | b::PERF_SAMPLE_CPU) as u64;

struct Opened {
    tid: i32,
    fd: OwnedFd,
}

pub(super) struct Events {
    pid: i32,
    cpus: Vec<i32>,
    /// Parent events of each slot, one per (thread, CPU); children follow their parent.
    fds: Vec<Vec<Opened>>,
    /// One ring per CPU, by index into `cpus`; None until a first event exists there.
    rings: Vec<Option<Ring>>,
    leader: Vec<Option<i32>>,
    /// Event id -> slot (samples of inherited events carry their parent's id).
    ids: Vec<(u64, usize)>,
    tids: Vec<i32>,
}

/// The attr of a breakpoint; only bp_addr, bp_len, bp_type and disabled may differ
/// between open and MODIFY_ATTRIBUTES (the kernel compares the rest).
pub(super) fn bp_attr(addr: u64, len: u8, write_only: bool, disabled: bool) -> b::perf_event_attr {
    // SAFETY: perf_event_attr is plain old data; all-zero is its documented default.
    let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
    a.type_ = b::PERF_TYPE_BREAKPOINT;
    a.size = crate::attr::ATTR_SIZE;
    a.bp_type = if write_only {
        b::HW_BREAKPOINT_W
    } else {
        b::HW_BREAKPOINT_RW
    };
    a.__bindgen_anon_3.bp_addr = addr;
    a.__bindgen_anon_4.bp_len = len as u64;
    // Every hit traps anyway; period 1 records each of them.
    a.__bindgen_anon_1.sample_period = 1;
    a.sample_type = SAMPLE_TYPE;
    a.set_disabled(disabled as u64);
    a.set_inherit(1);
    // Threads only (Linux 5.13+): a forked child has another address space, where the
    // same address means something else.
    a.set_inherit_thread(1);
    // User accesses only; also what an unprivileged user may ask for.
    a.set_exclude_kernel(1);
    a.set_exclude_hv(1);
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    a
}

impl Events {
    pub fn new(pid: i32) -> Events {
        let cpus = crate::online_cpus();
        let n = cpus.len();
        Events {
            pid,
            cpus,
            fds: Vec::new(),
            rings: (0..n).map(|_| None).collect(),
            leader: vec![None; n],
            ids: Vec::new(),
            tids: Vec::new(),
        }
    }

    pub fn slots(&self) -> usize {
        self.fds.len()
    }

    pub fn tids(&self) -> &[i32] {
        &self.tids
    }

    /// Opens `slots` placeholder events on every CPU for `tid`. On failure returns the
    /// errno and how many slots were fully opened for this thread.
    pub fn open_thread(&mut self, tid: i32, slots: usize) -> Result<(), (i32, usize)> {
        // Placeholder: a 1-byte W breakpoint on an address no program maps.
        let mut attr = bp_attr(0x1000, 1, true, true);
        while self.fds.len() < slots {
            self.fds.push(Vec::new());
        }
        // Listed first: after a partial ENOSPC the thread keeps its lower slots.
        self.tids.push(tid);
        for slot in 0..slots {
            for ci in 0..self.cpus.len() {
                let fd = crate::open_fd(&mut attr, tid, self.cpus[ci]).map_err(|e| (e, slot))?;
                self.attach(slot, ci, &fd).map_err(|e| (e, slot))?;
                self.fds[slot].push(Opened { tid, fd });
            }
        }
        Ok(())
    }

    /// Drops every event of slot `keep` and above (after a partial ENOSPC).
    pub fn forget_thread(&mut self, tid: i32) {
        self.tids.retain(|&t| t != tid);
    }

    pub fn truncate_slots(&mut self, keep: usize) {
        self.fds.truncate(keep);
        self.ids.retain(|&(_, s)| s < keep);
    }

    fn attach(&mut self, slot: usize, ci: usize, fd: &OwnedFd) -> Result<(), i32> {
        let raw = fd.as_raw_fd();
        match self.leader[ci] {
            None => {
                let ring = Ring::map(raw, RING_PAGES)
                    .map_err(|e| e.raw_os_error().unwrap_or(libc::EINVAL))?;
                self.rings[ci] = Some(ring);
                self.leader[ci] = Some(raw);
            }
            Some(lead) => {
                // SAFETY: both are perf fds we own and keep open.
                if unsafe { sys::ioctls::SET_OUTPUT(raw, lead) } != 0 {
                    return Err(errno());
                }
            }
        }
        let mut id = 0u64;
        // SAFETY: fd is a perf fd; id is a valid out pointer.
        if unsafe { sys::ioctls::ID(raw, &mut id) } != 0 {
            return Err(errno());
        }
        self.ids.push((id, slot));
        Ok(())
    }

    /// Moves slot `slot` (all its threads and their children) to a new address and kind;
    /// `disabled = false` also enables it, in one call.
    pub fn modify(&mut self, slot: usize, attr: &b::perf_event_attr) -> Result<(), WatchError> {
        let pid = self.pid;
        self.for_slot(slot, |fd| {
            let mut a = *attr;
            // SAFETY: fd is a perf fd we own; `a` is a valid attr the kernel only reads.
            unsafe { sys::ioctls::MODIFY_ATTRIBUTES(fd, &mut a) }
        })
        .map_err(|(e, tid)| {
            WatchError::from_errno(e, pid, tid, "moving a watchpoint (MODIFY_ATTRIBUTES)")
        })
    }

    pub fn enable(&mut self, slot: usize, on: bool) -> Result<(), WatchError> {
        let pid = self.pid;
        self.for_slot(slot, |fd| {
            // SAFETY: fd is a perf fd we own; ENABLE/DISABLE also apply to its children.
            unsafe {
                if on {
                    sys::ioctls::ENABLE(fd, 0)
                } else {
                    sys::ioctls::DISABLE(fd, 0)
                }
            }
        })
        .map_err(|(e, tid)| {
            WatchError::from_errno(e, pid, tid, "enabling or disabling a watchpoint")
        })
    }

    /// Runs `op` on every parent event of the slot. Events of threads that have exited
    /// answer ESRCH or nothing at all; only the last living thread's failure matters.
    fn for_slot(&mut self, slot: usize, op: impl Fn(i32) -> i32) -> Result<(), (i32, i32)> {
        let Some(list) = self.fds.get(slot) else {
            return Ok(());
        };
        let mut first_err = None;
        let mut ok = 0usize;
        for o in list {
            if op(o.fd.as_raw_fd()) == 0 {
                ok += 1;
            } else {
                let e = errno();
                if e != libc::ESRCH && first_err.is_none() {
                    first_err = Some((e, o.tid));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None if ok == 0 && !list.is_empty() => Err((libc::ESRCH, self.pid)),
            None => Ok(()),
        }
    }

    /// Reads every ring, in CPU order; records keep their ring order (needed to pair the
    /// samples of one trap).
    pub fn drain(&mut self) -> Vec<Drained> {
        let ids = &self.ids;
        let mut out = Vec::with_capacity(self.rings.len());
        for ring in self.rings.iter_mut() {
            let mut d = Drained::default();
            if let Some(ring) = ring {
                let used = ring.drain(&mut |rec| parse(rec, ids, &mut d));
                // Less room left than one more record: the kernel had to drop.
                d.full = used + 64 > ring_data_bytes();
            }
            out.push(d);
        }
        out
    }
}

/// The data area of each ring, as [`Ring::map`] sizes it.
fn ring_data_bytes() -> u64 {
    (RING_PAGES.next_power_of_two() * crate::ring::page_size()) as u64
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}
