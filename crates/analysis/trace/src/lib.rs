//! Exact function traces: decoding the tracing runtime's files, pairing entry and exit
//! events into calls, and building the profile of a trace result. See README.md.
//!
//! As an analysis: `collect` (with the recorders in `record`) runs the program, `finish`
//! stores the calls, `run_report` prints the reports of a result; [`SPEC`] ties them to
//! the registry.

mod collect;
pub mod elf_functions;
mod finish;
pub mod maps;
pub mod pair;
pub mod profile;
mod record;
mod recorded;
mod run_report;
pub mod runtime_file;
mod spec;
pub use spec::SPEC;

pub use pair::{pair_thread, Event, EventKind, Paired, RawCall};
pub use profile::{build_profile, FunctionLoc, ThreadInfo, TracedThread};

/// Errors reading a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a kairos trace file: {reason}")]
    BadFile { path: String, reason: String },
}
