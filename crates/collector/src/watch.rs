//! Hardware watchpoints (PERF_TYPE_BREAKPOINT) on another process, for the memory-access
//! analysis where no PMU exists: which thread touched which bytes of a cache line, from
//! which instruction, and whether it wrote.
//!
//! Facts this design rests on (measured on our KVM guests, see
//! shared/research/memory-cache-io.md): 4 debug registers per thread; lengths 1/2/4/8,
//! aligned; types W or RW (R alone is refused); the sampled IP is the instruction after the
//! access; every hit traps and costs 11-14 us to the hitting thread (9-11 us of its CPU
//! time in our tests), so watches are armed briefly and in rotation ([`schedule`] decides
//! when, [`rotate`] runs it).
//!
//! - [`Watcher`] holds the slots of one process: one event per (slot, thread running at
//!   open, CPU) with `inherit`, so threads born later are watched at no extra cost, and one
//!   ring buffer per CPU. Per-thread events (cpu = -1) would need one ring per thread and
//!   could not follow new threads (the kernel refuses to mmap them with `inherit`).
//! - Moving a slot is one MODIFY_ATTRIBUTES with `disabled = 0` per parent event; the
//!   kernel applies it to the inherited children. In our tests it never missed a window
//!   nor left a hit of the old address behind; DISABLE, MODIFY, ENABLE did as well.
//! - Under a hypervisor a trap can arrive without DR6 saying which slot fired; the kernel
//!   then sends the thread SIGTRAP, which kills it (KVM here: about one trap in 30,000-
//!   90,000, in bursts, whatever we do to the events; `perf record -e mem:ADDR:w` too). So
//!   a [`Watcher`] traces its target with a helper process that drops those signals
//!   (`guard.rs`): the target cannot be traced by anyone else meanwhile. The calibration
//!   on our own thread catches them with a handler instead ([`calibrate`]).
//! - RW breakpoints do not say whether the access wrote; a W breakpoint on the same bytes
//!   ("companion") fires in the same trap for writes only, which tells them apart exactly,
//!   at the price of a second slot.

pub mod calibrate;
mod classify;
mod error;
mod events;
mod guard;
mod records;
pub mod rotate;
pub mod schedule;
mod slots;
mod watcher;

pub use error::WatchError;
pub use slots::{plan_slots, SlotUse};
pub use watcher::{RearmMode, Watcher};

/// The process to watch: all its threads, those running now and those it creates later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchTarget {
    pub pid: i32,
}

/// Which accesses trap. The hardware has no read-only kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchKind {
    Write,
    ReadWrite,
}

/// Bytes `[addr, addr + len)` of the target; `len` is 1, 2, 4 or 8 and `addr` a multiple
/// of it (the debug registers match aligned ranges only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Watch {
    addr: u64,
    len: u8,
    kind: WatchKind,
}

// A watch is never empty, so `len` needs no `is_empty`.
#[allow(clippy::len_without_is_empty)]
impl Watch {
    pub fn new(addr: u64, len: u8, kind: WatchKind) -> Result<Watch, WatchError> {
        if !matches!(len, 1 | 2 | 4 | 8) {
            return Err(WatchError::BadLength { addr, len });
        }
        // len is a power of two.
        if addr & (len as u64 - 1) != 0 {
            return Err(WatchError::Misaligned { addr, len });
        }
        Ok(Watch { addr, len, kind })
    }

    pub fn addr(&self) -> u64 {
        self.addr
    }
    pub fn len(&self) -> u8 {
        self.len
    }
    pub fn kind(&self) -> WatchKind {
        self.kind
    }
    /// Whether two watches share at least one byte.
    pub fn overlaps(&self, other: &Watch) -> bool {
        self.addr < other.addr + other.len as u64 && other.addr < self.addr + self.len as u64
    }
}

/// What the access did, as far as the armed slots can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Write,
    Read,
    /// An RW watch without a W companion: the hardware does not say which.
    ReadOrWrite,
}

impl Access {
    pub fn is_write(self) -> Option<bool> {
        match self {
            Access::Write => Some(true),
            Access::Read => Some(false),
            Access::ReadOrWrite => None,
        }
    }
}

/// One access that trapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// CLOCK_MONOTONIC, ns (comparable with [`crate::monotonic_ns`]).
    pub time_ns: u64,
    pub pid: i32,
    pub tid: i32,
    pub cpu: u32,
    /// The instruction after the access (x86 debug traps fire once it has completed).
    pub ip: u64,
    /// Start of the watched range that was touched (the hardware does not say which byte).
    pub addr: u64,
    pub len: u8,
    pub access: Access,
}

/// Counters of what the kernel could not deliver; reported so that nothing goes missing
/// silently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Hits dropped because a ring buffer was full (PERF_RECORD_LOST).
    pub lost: u64,
    /// Times the kernel throttled an event for trapping too often.
    pub throttled: u64,
    /// Times a ring buffer was found full (some hits may be missing without a count):
    /// poll more often.
    pub overflows: u64,
    /// Samples of a slot that had moved twice since they were written (poll before
    /// moving; [`Watcher::arm`] does): counted, since their watch is unknown.
    pub unattributed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_validates_length_and_alignment() {
        assert!(Watch::new(0x1000, 8, WatchKind::Write).is_ok());
        assert!(Watch::new(0x1003, 1, WatchKind::ReadWrite).is_ok());
        assert!(matches!(
            Watch::new(0x1004, 8, WatchKind::Write),
            Err(WatchError::Misaligned { .. })
        ));
        assert!(matches!(
            Watch::new(0x1000, 3, WatchKind::Write),
            Err(WatchError::BadLength { .. })
        ));
        assert!(matches!(
            Watch::new(0x1000, 16, WatchKind::Write),
            Err(WatchError::BadLength { .. })
        ));
    }

    #[test]
    fn overlap() {
        let a = Watch::new(0x1000, 8, WatchKind::Write).unwrap_or_else(|e| unreachable!("{e}"));
        let b = Watch::new(0x1004, 4, WatchKind::Write).unwrap_or_else(|e| unreachable!("{e}"));
        let c = Watch::new(0x1008, 8, WatchKind::Write).unwrap_or_else(|e| unreachable!("{e}"));
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c));
    }
}
