//! Sampled memory accesses with a PMU (issue 11, item 1, PMU side), as libraries:
//!
//! - [`DataSrc`]: the kernel's `perf_mem_data_src` word split into fields; [`perf_text`]
//!   prints it in perf 6.1's words; [`classify`] gives our level bucket and flags.
//! - [`C2cStats`]: the counts of `perf c2c report --stats`, computed as perf does.
//! - [`Weight`]: PERF_SAMPLE_WEIGHT vs WEIGHT_STRUCT (latency in the low 32 bits).
//! - [`choose`]: which events to open (Intel PEBS load latency and stores, Sapphire Rapids'
//!   aux leader, AMD IBS op) from a sysfs tree and the CPU, as plain perf_event_attr data,
//!   or a [`Refusal`] with the reason.
//! - [`tma`]: the memory-bound share and its L1/L2/L3/DRAM/store split from Intel's
//!   perfmon metric file, through `kairos-metrics`, and the counter groups that count it.
//! - [`perfmon_events`]: perfmon core event names turned into perf_event_attr encodings;
//!   [`perfmon_dir`]: finding the CPU's files (`data/perfmon`, `-k perfmon=DIR`).

pub mod c2c;
pub mod choice;
pub mod classify;
pub mod cpu;
pub mod data_src;
pub mod perf_text;
pub mod perfmon_dir;
pub mod perfmon_events;
pub mod sample;
pub mod sysfs;
pub mod tma;

pub use c2c::C2cStats;
pub use choice::{choose, AttrSpec, EventGroup, Options, Plan, Refusal, RefusalKind, Source};
pub use classify::{classify, Access, Bucket, Class, Distance, Level};
pub use cpu::{CpuId, Vendor};
pub use data_src::DataSrc;
pub use perf_text::{perf_script_column, perf_text};
pub use sample::{MemSample, Weight};
