//! The platform's memory bandwidth, measured by our own triad per NUMA node pair (see the
//! README): [`measure::measure`] runs it, [`store`] keeps the result per host.

pub mod amd;
pub mod counters;
pub mod fixture;
pub mod kernel;
pub mod mbm;
pub mod measure;
pub mod numa;
pub mod record;
pub mod sampler;
pub mod store;
pub mod timeline;
pub mod umc;

pub use measure::{measure, Measurement, Options, Pair};

/// What can go wrong, each a sentence with the fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("node {node} does not exist: this machine has {have}")]
    NoSuchNode { node: u32, have: String },
    #[error("node {0} has no CPUs to run the triad on")]
    NoCpus(u32),
    #[error("cannot map {mib} MiB for an array ({source}); give a smaller --size-mib")]
    Alloc { mib: usize, source: std::io::Error },
    #[error("cannot bind the arrays to node {node}'s memory (mbind: {source}){hint}")]
    Bind {
        node: u32,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("cannot pin a thread to CPU {cpu} (sched_setaffinity: {source}); is it online and allowed by the cpuset?")]
    Pin { cpu: u32, source: std::io::Error },
    #[error("{0}")]
    Bad(String),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}
