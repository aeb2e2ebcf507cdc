//! The kernel time of a system call or page fault that its pair of events cannot time.
//!
//! `kairos collect system-overview` times a system call from raw_syscalls:sys_enter to
//! sys_exit and a page fault from exceptions:page_fault_user to the minor/major fault
//! event. Both pairs miss the kernel's entry path before the first event (register save,
//! speculation mitigations, the tracepoint dispatch) and everything after the closing
//! event's time stamp: recording that event itself, then the way back to user mode. Here
//! that was about 1 us per entry, as long as a minor fault's handling proper, so a program
//! that lives in the kernel showed half its kernel time.
//!
//! No event marks the return to user mode, so that part is measured on this machine,
//! with the very events of the recording: the calling thread makes system calls and
//! touches fresh pages back to back, with next to no user code in between, and the gap
//! from each closing event to the next opening one is the per-entry cost the pairs miss.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use perf_event_open_sys as sys;

use crate::extra::ExtraEvent;
use crate::ring::{self, Ring};
use crate::{open_fd, u64_at, CollectError, PERF_RECORD_SAMPLE};

/// Per-entry kernel time outside the timed pairs, in ns; None where not measurable (an
/// event missing, or too few clean gaps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EntryExitCost {
    /// A system call: sys_exit back to user mode, plus user mode to the next sys_enter.
    pub syscall_ns: Option<u64>,
    /// A page fault: the fault event back to user mode, plus the next fault to its
    /// exceptions:page_fault_user.
    pub fault_ns: Option<u64>,
    /// Half the range of the figures of the threads measured (0 with one thread).
    pub syscall_spread_ns: u64,
    pub fault_spread_ns: u64,
}

/// Threads [`entry_exit_cost_on_threads`] measures on.
pub const CALIBRATION_THREADS: usize = 5;

/// [`entry_exit_cost`] measured on `threads` fresh threads in turn: the median of their
/// figures, and half their range as the spread. The same code costs up to half as much
/// again on one thread as on another (seen on a KVM guest: a thread keeps its figure for
/// its life, about 310 or 500 ns a system call), so one thread's figure is a draw, not
/// the machine's cost. Fails as the first thread fails.
pub fn entry_exit_cost_on_threads(
    events: &[ExtraEvent],
    include_kernel: bool,
    threads: usize,
) -> Result<EntryExitCost, CollectError> {
    let mut got: Vec<EntryExitCost> = Vec::new();
    for _ in 0..threads.max(1) {
        let events = events.to_vec();
        let one = std::thread::Builder::new()
            .name("kairos-calibrate".into())
            .spawn(move || entry_exit_cost(&events, include_kernel))
            .map_err(|source| CollectError::Io {
                context: "starting a calibration thread".into(),
                source,
            })?
            .join()
            .map_err(|_| CollectError::Io {
                context: "a calibration thread".into(),
                source: io::Error::other("it panicked"),
            })??;
        got.push(one);
    }
    let summary = |pick: fn(&EntryExitCost) -> Option<u64>| {
        let mut v: Vec<u64> = got.iter().filter_map(pick).collect();
        v.sort_unstable();
        let median = v.get(v.len() / 2).copied();
        let spread = match (v.first(), v.last()) {
            (Some(lo), Some(hi)) => (hi - lo) / 2,
            _ => 0,
        };
        (median, spread)
    };
    let (syscall_ns, syscall_spread_ns) = summary(|c| c.syscall_ns);
    let (fault_ns, fault_spread_ns) = summary(|c| c.fault_ns);
    Ok(EntryExitCost {
        syscall_ns,
        fault_ns,
        syscall_spread_ns,
        fault_spread_ns,
    })
}

const SYSCALLS: usize = 4000;
const WARM_UP: usize = 1000;
const PAGES: usize = 1024;
const WARM_UP_PAGES: usize = 256;
/// Pages of the calibration ring (1 MiB, as each CPU's ring of the recording).
const RING_PAGES: usize = 256;
/// Fewer gaps than this give no figure.
const MIN_GAPS: usize = 50;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    SysEnter,
    SysExit,
    FaultEntry,
    FaultDone,
}

/// Measures [`EntryExitCost`] on the calling thread with the events of `events` that pair
/// (sys_enter/sys_exit, page_fault_user/minor-faults), opened as the recording opens them.
/// Takes a few milliseconds.
pub fn entry_exit_cost(
    events: &[ExtraEvent],
    include_kernel: bool,
) -> Result<EntryExitCost, CollectError> {
    let roles = roles_of(events);
    let Some(mut cal) = Calibration::open(&roles, include_kernel)? else {
        return Ok(EntryExitCost::default());
    };
    let has = |r: Role| roles.iter().any(|(x, _)| *x == r);
    let mut cost = EntryExitCost::default();
    if has(Role::SysEnter) && has(Role::SysExit) {
        cost.syscall_ns = cal.syscall_gap();
    }
    if has(Role::FaultEntry) && has(Role::FaultDone) {
        cost.fault_ns = cal.fault_gap();
    }
    Ok(cost)
}

/// The events of `events` that pair, with their role.
fn roles_of(events: &[ExtraEvent]) -> Vec<(Role, &ExtraEvent)> {
    events
        .iter()
        .filter_map(|e| {
            let role = match e.name.as_str() {
                "raw_syscalls:sys_enter" => Role::SysEnter,
                "raw_syscalls:sys_exit" => Role::SysExit,
                "exceptions:page_fault_user" => Role::FaultEntry,
                "minor-faults" => Role::FaultDone,
                _ => return None,
            };
            Some((role, e))
        })
        .collect()
}

/// The calibration's events on this thread, all writing into one ring.
struct Calibration {
    ring: Ring,
    fds: Vec<OwnedFd>,
    ids: Vec<(u64, Role)>,
}

impl Calibration {
    /// Opens the events; None when there are none.
    fn open(
        roles: &[(Role, &ExtraEvent)],
        include_kernel: bool,
    ) -> Result<Option<Calibration>, CollectError> {
        let mut fds: Vec<OwnedFd> = Vec::new();
        let mut ids: Vec<(u64, Role)> = Vec::new();
        let mut ring: Option<Ring> = None;
        for (role, e) in roles {
            // This thread only (pid 0, any CPU), not inherited: what the recording opens
            // on each task of the target.
            let mut a = e.attr(include_kernel, false, false);
            let fd = open_fd(&mut a, 0, -1).map_err(|errno| CollectError::Io {
                context: format!("opening {} to measure kernel entry and exit", e.name),
                source: io::Error::from_raw_os_error(errno),
            })?;
            match &ring {
                None => {
                    let r = Ring::map(fd.as_raw_fd(), RING_PAGES).map_err(|source| {
                        CollectError::Io {
                            context: "mapping the calibration ring buffer".into(),
                            source,
                        }
                    })?;
                    ring = Some(r);
                }
                Some(_) => {
                    let lead = fds.first().map(|f| f.as_raw_fd()).unwrap_or(-1);
                    // SAFETY: both are perf fds we own.
                    if unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), lead) } != 0 {
                        return Err(CollectError::Io {
                            context: "redirecting a calibration event".into(),
                            source: io::Error::last_os_error(),
                        });
                    }
                }
            }
            let mut id = 0u64;
            // SAFETY: fd is a perf event fd; id is a valid out pointer.
            if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } != 0 {
                return Err(CollectError::Io {
                    context: "reading a calibration event id".into(),
                    source: io::Error::last_os_error(),
                });
            }
            ids.push((id, *role));
            fds.push(fd);
        }
        Ok(ring.map(|ring| Calibration { ring, fds, ids }))
    }

    /// Records `work` with the events enabled around it.
    fn record(&mut self, work: impl FnOnce()) -> Vec<(u64, Role)> {
        record(&self.fds, &mut self.ring, &self.ids, work)
    }

    /// The median gap from sys_exit to the next sys_enter over back-to-back system calls.
    fn syscall_gap(&mut self) -> Option<u64> {
        let syscalls = |n: usize| {
            for _ in 0..n {
                // SAFETY: getppid has no arguments and no side effects.
                unsafe { libc::syscall(libc::SYS_getppid) };
            }
        };
        self.record(|| syscalls(WARM_UP));
        let recs = self.record(|| syscalls(SYSCALLS));
        median_gap(&recs, Role::SysExit, Role::SysEnter)
    }

    /// The median gap from a fault's closing event to the next fault's entry, touching
    /// fresh pages back to back; None when no memory could be mapped.
    fn fault_gap(&mut self) -> Option<u64> {
        let len = (WARM_UP_PAGES + PAGES) * ring::page_size();
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        // One fault per page, as a program touching fresh memory takes them (a
        // transparent huge page would take one fault per 2 MiB).
        // SAFETY: advising our own mapping.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        let base = p as *mut u8;
        let touch = |pages: std::ops::Range<usize>| {
            for i in pages {
                // SAFETY: inside the mapping; a volatile write so the touch happens.
                unsafe { base.add(i * ring::page_size()).write_volatile(1) };
            }
        };
        self.record(|| touch(0..WARM_UP_PAGES));
        let recs = self.record(|| touch(WARM_UP_PAGES..WARM_UP_PAGES + PAGES));
        // SAFETY: unmapping what we mapped.
        unsafe { libc::munmap(p, len) };
        median_gap(&recs, Role::FaultDone, Role::FaultEntry)
    }
}

/// Enables the events around `work` and returns the (time, role) of every sample.
fn record(
    fds: &[OwnedFd],
    ring: &mut Ring,
    ids: &[(u64, Role)],
    work: impl FnOnce(),
) -> Vec<(u64, Role)> {
    let ioctl_all = |enable: bool| {
        for fd in fds {
            // SAFETY: enabling or disabling our own perf fd.
            unsafe {
                if enable {
                    sys::ioctls::ENABLE(fd.as_raw_fd(), 0)
                } else {
                    sys::ioctls::DISABLE(fd.as_raw_fd(), 0)
                }
            };
        }
    };
    ring.drain(&mut |_| {});
    ioctl_all(true);
    work();
    ioctl_all(false);
    let mut out = Vec::new();
    ring.drain(&mut |rec| {
        let ty = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
        if ty != PERF_RECORD_SAMPLE || rec.len() < 40 {
            return;
        }
        // IDENTIFIER, IP, TID, TIME lead every sample of ours (see ExtraEvent::attr).
        let id = u64_at(rec, 8);
        if let Some(&(_, role)) = ids.iter().find(|(i, _)| *i == id) {
            out.push((u64_at(rec, 32), role));
        }
    });
    out.sort_by_key(|&(t, _)| t);
    out
}

/// The median gap from a `close` event to the `open` event right after it.
fn median_gap(recs: &[(u64, Role)], close: Role, open: Role) -> Option<u64> {
    let mut gaps: Vec<u64> = recs
        .windows(2)
        .filter(|w| w[0].1 == close && w[1].1 == open)
        .map(|w| w[1].0.saturating_sub(w[0].0))
        .collect();
    if gaps.len() < MIN_GAPS {
        return None;
    }
    gaps.sort_unstable();
    gaps.get(gaps.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_close_to_open_gaps_only() {
        let mut recs = Vec::new();
        for i in 0..100u64 {
            let t = i * 10_000;
            recs.push((t, Role::SysEnter));
            recs.push((t + 3000, Role::SysExit));
            // Interleaved events of another kind never make a gap.
            if i % 10 == 0 {
                recs.push((t + 3500, Role::FaultEntry));
            }
        }
        // exit at t+3000, next enter at t+10000: 7000, except after a fault entry.
        assert_eq!(median_gap(&recs, Role::SysExit, Role::SysEnter), Some(7000));
        assert_eq!(median_gap(&recs[..20], Role::SysExit, Role::SysEnter), None);
    }
}
