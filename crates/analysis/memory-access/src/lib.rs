//! Memory access: which data a program waits on, and why. Sampled data accesses (from
//! address sampling without a PMU, or PEBS/IBS with one) are attributed to the memory
//! objects that held them at that moment (`objects`), grouped by 64-byte cache line with a
//! sharing verdict per line (`lines`), and summed per object and function (`totals`).
//! See the README for the stages and the data they read.

pub mod bandwidth;
pub mod bandwidth_report;
pub mod blocks;
pub mod build;
pub mod claim;
mod collect;
mod compare;
mod cpu;
mod drops;
mod finish;
pub mod lines;
mod lines_report;
mod live;
mod live_code;
mod manifest_key;
mod notes;
pub mod numa;
pub mod objects;
mod page;
pub mod reports;
mod run_report;
mod spec;
pub mod tables;
pub mod tma;
mod tma_collect;
mod tma_report;
pub mod totals;
mod watch;
pub mod watch_table;

pub use claim::{claim, Claim};
pub use finish::{finish_import, load};
pub use spec::SPEC;

pub use kairos_mem_source::Bucket;
pub use kairos_x86_access::Direction;

/// Bytes per cache line on every x86 and most arm64 parts we meet.
pub const LINE_BYTES: u64 = 64;

/// Where a sample's address came from; it decides what the weight means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Source {
    #[default]
    /// cpu-clock sample, instruction decoded with the user registers: weight is time (ns).
    Registers,
    /// PEBS or IBS: weight is the access's latency in cycles.
    Pmu,
    /// A hardware watchpoint hit: exact, weight is one hit.
    Watchpoint,
    /// An address the kernel recorded for a software event (imported page faults of
    /// `perf record -d`): no direction (counted as a load) or latency; weight is the
    /// event's count.
    Event,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Registers => "address sampling (registers)",
            Source::Pmu => "PMU (PEBS/IBS)",
            Source::Watchpoint => "watchpoints",
            Source::Event => "software event (kernel-recorded addresses)",
        }
    }
}

/// The level breakdown of PMU samples, in report order.
pub const BUCKETS: [Bucket; 10] = [
    Bucket::L1,
    Bucket::Lfb,
    Bucket::L2,
    Bucket::Llc,
    Bucket::LocalHitm,
    Bucket::LocalDram,
    Bucket::RemoteDram,
    Bucket::RemoteCache,
    Bucket::RemoteHitm,
    Bucket::Other,
];

/// The column name of a bucket.
pub fn bucket_name(b: Bucket) -> &'static str {
    match b {
        Bucket::L1 => "L1",
        Bucket::Lfb => "LFB",
        Bucket::L2 => "L2",
        Bucket::Llc => "LLC",
        Bucket::LocalHitm => "local HITM",
        Bucket::LocalDram => "local DRAM",
        Bucket::RemoteDram => "remote DRAM",
        Bucket::RemoteCache => "remote cache",
        Bucket::RemoteHitm => "remote HITM",
        Bucket::Other => "other",
    }
}

/// One sampled access, after decoding.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessSample {
    /// CLOCK_MONOTONIC ns, as the collector and the allocation tracker both stamp.
    pub time_ns: u64,
    pub pid: u32,
    pub tid: u32,
    /// Instruction that made the access (for watchpoints: the one after it).
    pub ip: u64,
    /// The function of `ip`, an index into the caller's function names.
    pub function: u32,
    pub addr: u64,
    /// Bytes accessed (0 when unknown: PMU samples do not say).
    pub size: u32,
    pub direction: Direction,
    /// Registers: ns of CPU time; PMU: latency in cycles; watchpoint: 1.
    pub weight: u64,
    pub source: Source,
    /// The thread's stack pointer when sampled (registers only), to tell its stack.
    pub sp: Option<u64>,
    /// PMU only: the level that served it.
    pub level: Option<Bucket>,
    /// PMU only: a load that hit a modified line in another core's cache.
    pub hitm: bool,
    /// CPU that ran the thread.
    pub cpu: u32,
    /// PMU only, where the kernel gave it (PHYS_ADDR): the physical address.
    pub phys_addr: Option<u64>,
}

/// A memory-access result as the reports read it.
#[derive(Debug, Default)]
pub struct AccessData {
    pub built: build::Built,
    /// Samples that gave no address, by reason.
    pub unresolved: std::collections::BTreeMap<String, u64>,
    pub source: Source,
    /// Why this source (the `auto` choice, or what was asked for).
    pub source_reason: String,
    /// The memory-bound share (TMA) in one sentence, or why it is missing.
    pub memory_bound: Option<String>,
    /// The NUMA side (placement, first touch, remote share), when the result has it.
    pub numa: Option<numa::report::Numa>,
}

impl AccessData {
    /// Each time (or PMU) sample with its object; watchpoint hits are left out, so that
    /// shares and totals never mix time or latency with hit counts.
    pub fn located(&self) -> impl Iterator<Item = (&AccessSample, objects::Location)> + '_ {
        self.located_all()
            .filter(|(s, _)| s.source != Source::Watchpoint)
    }

    /// Every sample with its object, watchpoint hits included (for [`lines::lines`], which
    /// keeps them apart).
    pub fn located_all(&self) -> impl Iterator<Item = (&AccessSample, objects::Location)> + '_ {
        self.built
            .samples
            .iter()
            .zip(self.built.locations.iter().copied())
    }

    /// Whether the result has watchpoint hits (their report columns are shown then only).
    pub fn watched(&self) -> bool {
        self.built
            .samples
            .iter()
            .any(|s| s.source == Source::Watchpoint)
    }

    /// Samples that gave an address, watchpoint hits not counted.
    pub fn sampled(&self) -> u64 {
        self.built
            .samples
            .iter()
            .filter(|s| s.source != Source::Watchpoint)
            .count() as u64
    }

    /// Watchpoint hits: exact accesses, a figure of their own beside [`Self::sampled`].
    pub fn watch_hits(&self) -> u64 {
        self.built
            .samples
            .iter()
            .filter(|s| s.source == Source::Watchpoint)
            .count() as u64
    }
}

/// Bytes `[start, start + len)` of a line touched by one access, clipped to the line.
pub fn line_bytes(addr: u64, size: u32) -> (u64, u8, u8) {
    let line = addr & !(LINE_BYTES - 1);
    let first = (addr - line) as u8;
    let last = addr
        .saturating_add(u64::from(size.max(1)) - 1)
        .min(line.saturating_add(LINE_BYTES - 1))
        - line;
    (line, first, last as u8)
}

#[cfg(test)]
mod tests;
