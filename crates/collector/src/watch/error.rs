//! Typed errors of the watchpoint module, each a sentence a user can act on.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// ENOSPC: the thread's debug registers are held by someone else.
    #[error(
        "the hardware watchpoint slots of thread {tid} are taken ({free} of {wanted} free), most likely by a \
         debugger (gdb, lldb) or another profiler watching it: delete its hardware watchpoints or detach it, then retry"
    )]
    SlotsTaken {
        tid: i32,
        free: usize,
        wanted: usize,
    },
    #[error("cannot watch {len} bytes at {addr:#x}: the length must be 1, 2, 4 or 8")]
    BadLength { addr: u64, len: u8 },
    #[error("cannot watch {len} bytes at {addr:#x}: the address must be a multiple of the length")]
    Misaligned { addr: u64, len: u8 },
    #[error("{wanted} watches need {needed} slots but only {slots} are held")]
    TooManyWatches {
        wanted: usize,
        needed: usize,
        slots: usize,
    },
    /// EINVAL from the kernel for a watch that passed our own checks.
    #[error("the kernel refused the watchpoint at {addr:#x} ({len} bytes): {detail}")]
    Refused { addr: u64, len: u8, detail: String },
    /// EACCES: ptrace-style access check against the target failed.
    #[error(
        "not allowed to watch process {pid}: it belongs to another user or ptrace access to it is restricted \
         (kernel.yama.ptrace_scope); run as its owner or as root"
    )]
    NotOurProcess { pid: i32 },
    /// EPERM: perf_event_open itself is restricted for us.
    #[error(
        "perf_event_open was refused for process {pid}: kernel.perf_event_paranoid is {paranoid}; run as root \
         (or with CAP_PERFMON) or set it to 2 or less"
    )]
    PerfRestricted { pid: i32, paranoid: i32 },
    /// Another tracer (a debugger, strace) holds the process: our guard, which keeps stray
    /// watchpoint traps from killing it, cannot attach (see `guard.rs`).
    #[error(
        "process {pid} is traced by process {tracer} (a debugger or strace): watchpoints need to trace it themselves, \
         so that a trap the machine delivers without saying which watchpoint fired (a SIGTRAP) does not kill it; \
         detach that tracer, then retry"
    )]
    Traced { pid: i32, tracer: i32 },
    /// PTRACE_SEIZE refused by Yama: the guard (see `guard.rs`) is a helper process, not
    /// an ancestor of the target, so ptrace_scope 1 already forbids it to an ordinary user.
    #[error(
        "watchpoints on process {pid} need to trace it, so that a trap the machine delivers without saying which \
         watchpoint fired (a SIGTRAP) does not kill it, and kernel.yama.ptrace_scope = {scope} forbids that here: \
         run as root (or with CAP_SYS_PTRACE), or set kernel.yama.ptrace_scope to 0"
    )]
    PtraceRestricted { pid: i32, scope: i32 },
    #[error("process {pid} is gone")]
    ProcessGone { pid: i32 },
    /// EMFILE/ENFILE: one descriptor per (thread, CPU, slot) of the threads running at open.
    #[error(
        "out of file descriptors while watching process {pid}: each of its threads running at the start takes \
         one per CPU and slot; raise the limit (ulimit -n) or ask for fewer slots"
    )]
    TooManyFiles { pid: i32 },
    #[error("hardware breakpoints are not available here ({detail})")]
    Unsupported { detail: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl WatchError {
    /// The error for a failed perf_event_open or ioctl on `tid` of process `pid`.
    pub(crate) fn from_errno(errno: i32, pid: i32, tid: i32, what: &str) -> WatchError {
        match errno {
            libc::ENOSPC => WatchError::SlotsTaken {
                tid,
                free: 0,
                wanted: 1,
            },
            libc::EACCES => WatchError::NotOurProcess { pid },
            libc::EPERM => WatchError::PerfRestricted {
                pid,
                paranoid: crate::attr::paranoid(),
            },
            libc::ESRCH => WatchError::ProcessGone { pid },
            libc::EMFILE | libc::ENFILE => WatchError::TooManyFiles { pid },
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => WatchError::Unsupported {
                detail: io::Error::from_raw_os_error(errno).to_string(),
            },
            _ => WatchError::Io {
                context: what.to_string(),
                source: io::Error::from_raw_os_error(errno),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptrace_refusals_say_what_to_do() {
        let e = WatchError::PtraceRestricted { pid: 7, scope: 1 };
        assert!(
            e.to_string().contains("kernel.yama.ptrace_scope = 1"),
            "{e}"
        );
        let e = WatchError::Traced { pid: 7, tracer: 9 };
        assert!(e.to_string().contains("traced by process 9"), "{e}");
    }

    #[test]
    fn errnos_map_to_sentences() {
        let e = WatchError::from_errno(libc::ENOSPC, 10, 11, "open");
        assert!(matches!(e, WatchError::SlotsTaken { tid: 11, .. }));
        assert!(e.to_string().contains("debugger"), "{e}");
        assert!(matches!(
            WatchError::from_errno(libc::EACCES, 10, 11, "x"),
            WatchError::NotOurProcess { pid: 10 }
        ));
        assert!(matches!(
            WatchError::from_errno(libc::EPERM, 10, 11, "x"),
            WatchError::PerfRestricted { pid: 10, .. }
        ));
        assert!(matches!(
            WatchError::from_errno(libc::ESRCH, 10, 11, "x"),
            WatchError::ProcessGone { pid: 10 }
        ));
        assert!(matches!(
            WatchError::from_errno(libc::EMFILE, 10, 11, "x"),
            WatchError::TooManyFiles { pid: 10 }
        ));
        assert!(matches!(
            WatchError::from_errno(libc::EIO, 10, 11, "x"),
            WatchError::Io { .. }
        ));
    }
}
