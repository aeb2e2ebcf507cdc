//! Live probes: open (and at once close) perf events on this process to learn what the
//! kernel and the CPU accept. Nothing is enabled, nothing is read.

use serde::{Deserialize, Serialize};

pub use crate::probe_outcome::{describe_outcome, errno_meaning, errno_name, ProbeOutcome};

/// One perf_event_open experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PerfProbe {
    /// PERF_TYPE_HARDWARE / CPU_CYCLES, counting, user only.
    HardwareCycles,
    /// PERF_TYPE_SOFTWARE / CPU_CLOCK, sampling every 1 ms, user only.
    CpuClock,
    /// Cycles sampling with PERF_SAMPLE_BRANCH_STACK, user calls and returns only.
    BranchStackCallReturn,
    /// Cycles sampling with PERF_SAMPLE_BRANCH_STACK, user, any branch (no type filter).
    BranchStackAny,
    /// Cycles sampling with precise_ip = 1 (PEBS on Intel).
    Precise,
    /// A tracepoint by its id (PERF_TYPE_TRACEPOINT).
    Tracepoint(u64),
}

/// Source of the facts that cannot come from files: perf_event_open answers and the
/// C library's version. [`LiveProber`] asks this machine; tests use recorded answers.
pub trait Prober {
    fn perf_open(&self, probe: PerfProbe) -> ProbeOutcome;
    fn glibc_version(&self) -> Option<String>;
    /// move_pages(2) in query mode on one page of this process (NUMA placement); recorded
    /// answers that do not say are "not tried".
    fn move_pages_query(&self) -> ProbeOutcome {
        ProbeOutcome::NotTried("no recorded answer for move_pages(2)".into())
    }
}

/// Asks the running kernel.
#[derive(Debug, Default, Clone, Copy)]
pub struct LiveProber;

// perf_event_attr up to PERF_ATTR_SIZE_VER5 (112 bytes); the kernel accepts any
// published size.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_BRANCH_STACK: u64 = 1 << 11;
const PERF_SAMPLE_BRANCH_USER: u64 = 1 << 0;
const PERF_SAMPLE_BRANCH_ANY: u64 = 1 << 3;
const PERF_SAMPLE_BRANCH_ANY_CALL: u64 = 1 << 4;
const PERF_SAMPLE_BRANCH_ANY_RETURN: u64 = 1 << 5;
// attr.flags bits
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PRECISE_IP_SHIFT: u32 = 15;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

impl Prober for LiveProber {
    fn perf_open(&self, probe: PerfProbe) -> ProbeOutcome {
        let mut attr = PerfEventAttr {
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            flags: FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
            ..Default::default()
        };
        match probe {
            PerfProbe::HardwareCycles => {
                attr.type_ = PERF_TYPE_HARDWARE;
                attr.config = PERF_COUNT_HW_CPU_CYCLES;
            }
            PerfProbe::CpuClock => {
                attr.type_ = PERF_TYPE_SOFTWARE;
                attr.config = PERF_COUNT_SW_CPU_CLOCK;
                attr.sample_period = 1_000_000;
                attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
            }
            PerfProbe::BranchStackCallReturn | PerfProbe::BranchStackAny => {
                attr.type_ = PERF_TYPE_HARDWARE;
                attr.config = PERF_COUNT_HW_CPU_CYCLES;
                attr.sample_period = 1_000_000;
                attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_BRANCH_STACK;
                attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER
                    | if probe == PerfProbe::BranchStackAny {
                        PERF_SAMPLE_BRANCH_ANY
                    } else {
                        PERF_SAMPLE_BRANCH_ANY_CALL | PERF_SAMPLE_BRANCH_ANY_RETURN
                    };
            }
            PerfProbe::Precise => {
                attr.type_ = PERF_TYPE_HARDWARE;
                attr.config = PERF_COUNT_HW_CPU_CYCLES;
                attr.sample_period = 1_000_000;
                attr.sample_type = PERF_SAMPLE_IP;
                attr.flags |= 1 << PRECISE_IP_SHIFT;
            }
            PerfProbe::Tracepoint(id) => {
                attr.type_ = PERF_TYPE_TRACEPOINT;
                attr.config = id;
                attr.sample_period = 1;
                attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
            }
        }
        // SAFETY: attr is a valid, fully initialised perf_event_attr of the size given
        // in attr.size; the other arguments are plain integers (this thread, any CPU,
        // no group).
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return ProbeOutcome::Failed { errno };
        }
        // SAFETY: fd is a descriptor we own, closed once.
        unsafe {
            libc::close(fd as libc::c_int);
        }
        ProbeOutcome::Opened
    }

    fn glibc_version(&self) -> Option<String> {
        glibc_version_live()
    }

    fn move_pages_query(&self) -> ProbeOutcome {
        crate::numa::probe_query()
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version_live() -> Option<String> {
    // SAFETY: gnu_get_libc_version returns a pointer to a static NUL-terminated string.
    let p = unsafe { libc::gnu_get_libc_version() };
    if p.is_null() {
        return None;
    }
    // SAFETY: p is non-null and points to a static C string.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    Some(s.to_string_lossy().into_owned())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_version_live() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_size_is_ver5() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);
    }

    #[test]
    fn cpu_clock_opens_on_any_linux_with_perf() {
        // The software clock exists everywhere perf events exist; only a paranoid
        // setting of 3 or more (and no privilege) refuses it.
        let o = LiveProber.perf_open(PerfProbe::CpuClock);
        match o {
            ProbeOutcome::Opened => {}
            ProbeOutcome::Failed { errno } => {
                assert!(
                    errno == libc::EACCES || errno == libc::EPERM || errno == libc::ENOSYS,
                    "{}",
                    describe_outcome(&o)
                )
            }
            ProbeOutcome::NotTried(_) => unreachable!(),
        }
    }
}
