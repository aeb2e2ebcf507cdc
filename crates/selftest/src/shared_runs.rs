//! The runs more than one check reads, made once by the first check that needs them: the
//! page-fault and system-call checks share one kfaults run of each side, the PEBS/IBS and
//! TMA checks one `memory-access -k source=pmu` run. The context keeps them and the checks
//! make and read them, so these names live here, one layer below both.

use std::path::PathBuf;

/// The page-fault and system-call checks' runs: both sides' figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct KernelRuns {
    /// kairos: completed faults, entries from user mode, from kernel mode, system calls.
    pub kairos: [Option<f64>; 4],
    /// perf: the same, from its events.
    pub perf: [Option<f64>; 4],
    /// The program's own (kernel, user) faults.
    pub truth: Option<(u64, u64)>,
}

/// kairos's run, shared by the PEBS/IBS and TMA checks.
#[derive(Debug, Clone)]
pub(crate) struct PmuMemoryRun {
    /// The result directory.
    pub dir: PathBuf,
    /// What the program printed (its matrices' addresses).
    pub stdout: String,
}
