//! System overview: every kernel entry of the profiled threads (page faults, system
//! calls, interrupts, context switches) with its measured duration, built from the side
//! samples of a recording, stored as `tables/kernel_entries.parquet`, and reported as
//! `summary`, `kernel-entries`, `page-faults` and `timeline`.
//!
//! Durations are measured by pairing events of one thread (or CPU, for interrupts):
//! - system call: raw_syscalls:sys_enter to the thread's next sys_exit;
//! - page fault: exceptions:page_fault_user/kernel (fired on entry to the fault handler)
//!   to the thread's next minor-faults/major-faults software event, which the kernel emits
//!   at the end of handle_mm_fault (mm_account_fault); that event also carries the
//!   faulting instruction and the data address, the entry tracepoint the user call chain;
//! - interrupt: irq:irq_handler_entry/exit and irq_vectors:local_timer_entry/exit on one CPU.
//!
//! The measured kernel time of a thread ([`kernel_time`]) adds to these the entry and exit
//! paths no event times, calibrated per entry at collection time ([`PathCost`]).
//!
//! Stages: `collect` records, `finish` pairs and stores the entries, `run_report` prints
//! the reports of a result; [`SPEC`] ties them to the registry.

mod build;
mod collect;
mod compare;
mod finish;
pub mod kernel_time;
mod page;
pub mod reports;
mod run_report;
mod spec;
pub mod tables;

pub use spec::SPEC;

pub use build::{build, recording_faults, EventNames};
pub use collect::kernel_events;
pub use finish::{record_events, switch_ins};
pub use kernel_time::PathCost;

/// Why the thread entered the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// A page fault taken in user mode.
    UserFault,
    /// A page fault taken in kernel mode (copying from or to user memory).
    KernelFault,
    Syscall,
    Interrupt,
    /// The thread was switched out (sched:sched_switch); counted, not timed.
    ContextSwitch,
}

impl Cause {
    pub const ALL: [Cause; 5] = [
        Cause::UserFault,
        Cause::KernelFault,
        Cause::Syscall,
        Cause::Interrupt,
        Cause::ContextSwitch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Cause::UserFault => "user-page-fault",
            Cause::KernelFault => "kernel-page-fault",
            Cause::Syscall => "syscall",
            Cause::Interrupt => "interrupt",
            Cause::ContextSwitch => "context-switch",
        }
    }

    pub fn parse(s: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.as_str() == s)
    }

    pub fn is_fault(self) -> bool {
        matches!(self, Cause::UserFault | Cause::KernelFault)
    }
}

/// One kernel entry (one row of `kernel_entries`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub time_ns: u64,
    /// Measured time in the kernel; None when the closing event was not seen.
    pub duration_ns: Option<u64>,
    pub cause: Cause,
    /// A major fault (it waited for I/O).
    pub major: bool,
    /// A fault that handle_mm_fault completed (a minor-faults/major-faults event was
    /// seen): what `perf stat -e page-faults` counts. Fault-handler entries that never
    /// reach it (kernel addresses, spurious faults) are false.
    pub completed: bool,
    /// Index into the profile's threads.
    pub thread: u32,
    pub cpu: u32,
    /// User instruction address (the faulting instruction, or where the syscall was made).
    pub ip: u64,
    /// User call stack, into the profile's stacks.
    pub stack: Option<u32>,
    /// Faulting data address.
    pub addr: Option<u64>,
    /// Memory object containing `addr`: file path, `[heap]`, `[anon]`, `[stack]`, `[unmapped]`.
    pub object: Option<String>,
    pub object_start: u64,
    pub object_end: u64,
    /// Syscall number, IRQ number or interrupt vector.
    pub detail: Option<i64>,
}

/// The analysis's only failures are its table's: kairos-table's sentences.
pub use kairos_table::TableError as Error;
