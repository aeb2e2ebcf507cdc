//! PMU events given by the caller (memory-access sampling: PEBS `mem-loads`/`mem-stores`,
//! AMD IBS op), recorded instead of, or next to, the timer, as `perf mem record` does.
//!
//! The caller describes each event as plain perf_event_attr data (kairos-mem-source's
//! `AttrSpec`, converted field by field: this crate does not depend on it). The collector
//! adds what its records need, settles on the settings the kernel accepts (precise_ip from
//! the asked value down to its minimum, physical addresses dropped when refused, kernel
//! excluded when not permitted) on one (task, CPU) pair, then opens the groups on every
//! pair of the tracking event, into the same per-CPU ring buffers and perf.data file.

mod attr;
mod open;

use perf_event_open_sys::bindings as b;

pub use attr::{file_name, REQUIRED_SAMPLE_TYPE};
pub(crate) use open::open_all;

/// How often a PMU event samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmuSampling {
    /// Every N events.
    Period(u64),
    /// About N samples a second (the kernel adjusts the period); capped at
    /// kernel.perf_event_max_sample_rate, as perf does.
    Frequency(u64),
    /// Never samples: a group member whose value the sampling event reads
    /// (PERF_SAMPLE_READ), as the members of perf's `{a,b,c}:S`.
    Count,
}

/// One PMU event, as perf_event_attr data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuEvent {
    /// perf's name (`cpu/mem-loads,ldlat=30/P`): EVENT_DESC name, shown by `perf script`.
    pub name: String,
    pub type_: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    /// Needs a 136-byte (VER8) attr; refused while the collector declares VER7 ones.
    pub config3: u64,
    /// Highest precise_ip to ask for; lowered one at a time down to `precise_min` when
    /// the kernel answers EINVAL/EOPNOTSUPP (perf's `P` modifier).
    pub precise_ip: u8,
    pub precise_min: u8,
    /// PERF_SAMPLE_* bits asked for; [`REQUIRED_SAMPLE_TYPE`] is added, ID and STREAM_ID
    /// are removed (every attr of the file must share one sample_id layout).
    pub sample_type: u64,
    pub sampling: PmuSampling,
    /// Leave exclude_user/exclude_kernel at 0 even when the kernel is not permitted
    /// (AMD IBS cannot filter by privilege level and refuses the exclude bits).
    pub no_exclude: bool,
}

/// An event with the group leader the hardware needs in front of it (Sapphire Rapids'
/// `mem-loads-aux`; both sample, the leader recorded as an event of its own), and
/// counting members read at each of its samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuGroup {
    pub leader: Option<PmuEvent>,
    pub event: PmuEvent,
    /// [`PmuSampling::Count`] events, in the group after `event`. When there are any,
    /// `event`'s samples carry every member's value (PERF_SAMPLE_READ with
    /// PERF_FORMAT_GROUP), so that the reader can give each its delta.
    pub members: Vec<PmuEvent>,
    /// The collection goes on without this group when the kernel refuses it (then its
    /// outcome says why); otherwise a refusal ends the collection.
    pub optional: bool,
    /// The CPUs its PMU drives, when not all: a hybrid CPU's `cpu_core` and `cpu_atom`
    /// each cover one kind of core, and the kernel refuses their events on the others.
    pub cpus: Option<Vec<u32>>,
}

impl PmuGroup {
    /// A group of one event.
    pub fn single(event: PmuEvent) -> PmuGroup {
        PmuGroup {
            leader: None,
            event,
            members: Vec::new(),
            optional: false,
            cpus: None,
        }
    }

    /// Its events in group order: leader, the sampling event, the members.
    pub fn events(&self) -> Vec<&PmuEvent> {
        self.leader
            .iter()
            .chain(std::iter::once(&self.event))
            .chain(&self.members)
            .collect()
    }
}

/// read_format of a group whose members are read at each sample: the ids let the reader
/// match values to events; the times let it see that the group shared the counters.
pub(crate) const GROUP_READ_FORMAT: u64 = (b::PERF_FORMAT_GROUP
    | b::PERF_FORMAT_ID
    | b::PERF_FORMAT_TOTAL_TIME_ENABLED
    | b::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64;

/// What was recorded for one PMU event (leaders included), for the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuOutcome {
    /// The name written to the perf.data file (`:u`/`u` appended when the kernel is
    /// excluded, as perf does).
    pub name: String,
    pub precise_ip: u8,
    pub sample_type: u64,
    pub include_kernel: bool,
    /// Changes from what was asked, and why (physical addresses dropped, precise_ip
    /// lowered, kernel excluded, frequency capped).
    pub notes: Vec<String>,
    /// An optional group the kernel refused: not recorded, and why.
    pub refused: Option<String>,
}

/// A PMU event that cannot be recorded here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PmuError {
    /// The kernel refused it with every fallback; `why` turns the errno into a sentence.
    #[error("the CPU's PMU refused event {event} ({}): {why}", errno_name(*.errno))]
    Refused {
        event: String,
        errno: i32,
        why: String,
    },
    /// The description itself cannot be opened (zero period, config3 with a VER7 attr).
    #[error("event {event} cannot be requested: {why}")]
    BadSpec { event: String, why: String },
}

/// Whether PMU events replace the timer: then a `dummy` software event carries the
/// side-band records and owns the ring buffers, as in perf's tracking event.
pub(crate) fn replaces_timer(opts: &crate::CollectOptions) -> bool {
    !opts.pmu_events.is_empty() && !opts.pmu_with_timer
}

/// The summary's reason when the dummy event stands in for the timer.
pub(crate) const DUMMY_REASON: &str =
    "PMU events only: a dummy software event carries the side-band records and owns the ring buffers";

pub(crate) fn errno_name(e: i32) -> &'static str {
    match e {
        libc::ENODATA => "ENODATA",
        libc::ENOSPC => "ENOSPC",
        libc::E2BIG => "E2BIG",
        libc::ENXIO => "ENXIO",
        _ => crate::errno_name(e),
    }
}

/// The kernel's answer to perf_event_open of `ev` as a sentence for the user.
pub(crate) fn refusal_reason(ev: &PmuEvent, errno: i32, precise_ip: u8) -> String {
    match errno {
        libc::ENOENT | libc::ENODEV if is_virtual_machine() => format!(
            "no hardware PMU in this virtual machine (the hypervisor exposes none; the kernel lists only: {})",
            pmu_list()
        ),
        libc::ENOENT | libc::ENODEV => format!(
            "the kernel has no PMU for type {} config {:#x} on this CPU (PMUs here: {})",
            ev.type_,
            ev.config,
            pmu_list()
        ),
        libc::EOPNOTSUPP => format!(
            "the PMU cannot sample it this way (no sampling interrupt, or no precise sampling down to precise_ip {precise_ip})"
        ),
        libc::EINVAL => format!(
            "the PMU rejected its settings (config {:#x}, config1 {:#x}, precise_ip down to {precise_ip}, sample_type {:#x})",
            ev.config, ev.config1, ev.sample_type
        ),
        libc::EACCES | libc::EPERM => format!(
            "not permitted (kernel.perf_event_paranoid is {}; kernel samples and physical addresses need 1 or less, root or CAP_PERFMON)",
            crate::attr::paranoid()
        ),
        libc::EBUSY => "its counters are taken by another user (another profiler or the NMI watchdog)".into(),
        libc::ENODATA => "it needs its auxiliary group leader in front of it (mem-loads-aux on Sapphire Rapids)".into(),
        libc::ENOSPC => "the group needs more counters than the PMU has".into(),
        libc::E2BIG => "the kernel is older than the attr: it does not know its size".into(),
        e => std::io::Error::from_raw_os_error(e).to_string(),
    }
}

/// x86 guests see the `hypervisor` CPU flag.
fn is_virtual_machine() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
        })
        .unwrap_or(false)
}

/// The PMUs the kernel registered, for the error message.
fn pmu_list() -> String {
    let mut names: Vec<String> = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        "none readable".into()
    } else {
        names.join(" ")
    }
}

/// kernel.perf_event_max_sample_rate, the highest frequency the kernel accepts.
fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// True when `sample_type` asks for physical addresses.
fn wants_phys(sample_type: u64) -> bool {
    sample_type & b::PERF_SAMPLE_PHYS_ADDR as u64 != 0
}
