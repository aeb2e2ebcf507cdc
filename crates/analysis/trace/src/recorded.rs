//! What a trace collection records and where: the raw folder, the two recorders, what
//! either produced, and the runtime the instrumenting one preloads. The collection, its
//! recorders and its finish all read these, so they live below all three.

use std::path::{Path, PathBuf};

use kairos_analysis_api::Failure;

use crate::profile::{FunctionLoc, TracedThread};

/// Folder of the runtime's raw per-thread files inside the result (kept: they can be
/// decoded again without re-running the program).
pub(crate) const RAW_DIR: &str = "trace";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Instrument,
    Uprobes,
}

/// What either recorder produced.
pub(crate) struct Recorded {
    pub threads: Vec<TracedThread>,
    pub functions: Vec<FunctionLoc>,
    pub traced_seconds: f64,
    pub exit: kairos_result::TargetExit,
    pub notes: Vec<String>,
    pub lost_events: u64,
    pub refused: Vec<(String, String)>,
    pub probed: Option<usize>,
    /// The signal to kairos that ended the recording (and the program) early.
    pub interrupted: Option<i32>,
}

/// The runtime to preload: $KAIROS_TRACE_RUNTIME, else `lib/` next to the kairos binary
/// (where the build puts it).
pub(crate) fn runtime_path() -> Result<PathBuf, Failure> {
    if let Some(p) = std::env::var_os("KAIROS_TRACE_RUNTIME") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| {
        Failure::failed(format!(
            "cannot locate the kairos binary ({e}); set KAIROS_TRACE_RUNTIME to libkairos_trace.so"
        ))
    })?;
    let p = exe
        .parent()
        .unwrap_or(Path::new("."))
        .join("lib/libkairos_trace.so");
    if !p.is_file() {
        return Err(Failure::failed(format!(
            "the tracing runtime {} is missing; rebuild kairos with `cargo build` or set KAIROS_TRACE_RUNTIME to libkairos_trace.so",
            p.display()
        )));
    }
    Ok(p)
}
