//! Counting one event over a process and the threads it creates (no samples, no ring
//! buffer): `kairos run` reads the target's LLC misses this way at each tick. The count is
//! scaled by time enabled over time running, as perf stat does when the PMU multiplexes.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use perf_event_open_sys as sys;
use sys::bindings as b;

/// An event as perf_event_open takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub type_: u32,
    pub config: u64,
}

impl Event {
    /// The last-level cache's read misses (perf's `LLC-load-misses`).
    pub const LLC_LOAD_MISSES: Event = Event {
        type_: b::PERF_TYPE_HW_CACHE,
        config: b::PERF_COUNT_HW_CACHE_LL as u64
            | (b::PERF_COUNT_HW_CACHE_OP_READ as u64) << 8
            | (b::PERF_COUNT_HW_CACHE_RESULT_MISS as u64) << 16,
    };
    /// Page faults (a software event: any kernel has it).
    pub const PAGE_FAULTS: Event = Event {
        type_: b::PERF_TYPE_SOFTWARE,
        config: b::PERF_COUNT_SW_PAGE_FAULTS as u64,
    };
}

/// An open counter on one process.
pub struct TaskCounter {
    fd: OwnedFd,
}

impl TaskCounter {
    /// Counts `ev` in process `pid` and the threads and children it creates from now on,
    /// on any CPU, user and kernel time (kernel excluded where paranoia forbids it).
    pub fn open(pid: libc::pid_t, ev: Event) -> io::Result<TaskCounter> {
        let try_open = |exclude_kernel: bool| {
            // SAFETY: perf_event_attr is plain data; zeroed is its documented default.
            let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
            a.size = std::mem::size_of::<b::perf_event_attr>() as u32;
            a.type_ = ev.type_;
            a.config = ev.config;
            a.read_format =
                (b::PERF_FORMAT_TOTAL_TIME_ENABLED | b::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64;
            a.set_inherit(1);
            a.set_exclude_kernel(u64::from(exclude_kernel));
            a.set_exclude_hv(1);
            // SAFETY: a valid attr; the fd returned is owned below.
            let fd =
                unsafe { sys::perf_event_open(&mut a, pid, -1, -1, b::PERF_FLAG_FD_CLOEXEC as _) };
            if fd < 0 {
                Err(io::Error::last_os_error())
            } else {
                // SAFETY: a fresh fd nothing else owns.
                Ok(unsafe { OwnedFd::from_raw_fd(fd) })
            }
        };
        let fd = try_open(false).or_else(|e| match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => try_open(true),
            _ => Err(e),
        })?;
        Ok(TaskCounter { fd })
    }

    /// The count so far, scaled for multiplexing (None when the event never ran).
    pub fn read(&self) -> io::Result<Option<u64>> {
        let mut v = [0u64; 3];
        // SAFETY: reads at most the 24 bytes of `v` from our own fd.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                v.as_mut_ptr().cast(),
                std::mem::size_of_val(&v),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if (n as usize) < std::mem::size_of_val(&v) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "short read of a counter",
            ));
        }
        let [count, enabled, running] = v;
        Ok(match running {
            0 => None,
            r if r >= enabled => Some(count),
            r => Some((count as f64 * enabled as f64 / r as f64) as u64),
        })
    }
}

/// Why an event cannot be counted here, in words for a report.
pub fn why_not(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            format!("this machine exposes no hardware PMU for it ({e}); virtual machines usually have none")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => {
            format!("the kernel refused ({e}); run as root or lower kernel.perf_event_paranoid")
        }
        _ => format!("perf_event_open failed: {e}"),
    }
}
