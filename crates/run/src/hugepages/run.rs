//! `kairos run [--hugepages=hugetlb|thp] [--reserve N] [-r DIR] -- PROGRAM ARGS`: runs a
//! program with malloc's huge pages switched on, checks from /proc that it really got
//! them, restores the pool it changed, and with `-r DIR` writes a small result (manifest
//! only: elapsed time, the program's rusage, the huge pages seen) for `kairos compare`.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kairos_result::{ResultDir, TargetExit};

use super::setup::Setup;
use super::watch::{self, Seen, Watch};
use super::{require_glibc, Mode};
use crate::launch::{self, Forward, StopSignals, Usage, Waited};
use crate::program::{self, args_of, program_of, NewResult};
use crate::{Error, Sink};

/// The refusal of an empty program shows this.
const EXAMPLE: &str = "kairos run --hugepages=hugetlb -- ./app";
/// How often Kairos looks whether the program has ended.
const POLL: Duration = Duration::from_millis(50);

/// What to run, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HugeRunRequest {
    pub mode: Mode,
    /// 2 MiB pages to have free in the pool while the program runs.
    pub reserve: Option<u64>,
    /// Where to write the result (manifest only), for `kairos compare`.
    pub result_dir: Option<PathBuf>,
    /// The program and its arguments.
    pub program: Vec<String>,
}

/// How the run went.
#[derive(Debug)]
pub struct HugeRunOutcome {
    pub elapsed_s: f64,
    pub usage: Usage,
    pub seen: Seen,
    pub exit: TargetExit,
    /// What went wrong with the huge pages, one sentence each.
    pub warnings: Vec<String>,
    /// The result written (when asked), or why it could not be.
    pub result: Option<Result<PathBuf, Error>>,
}

/// Sets up, starts the program, watches it, restores the pool and writes the result.
/// Nothing is changed when the request is refused; the pool is restored on every path.
pub fn run(req: &HugeRunRequest, sink: &Sink) -> Result<HugeRunOutcome, Error> {
    let program = program_of(&req.program, EXAMPLE)?;
    require_glibc(req.mode)?;
    let dir = NewResult::create(req.result_dir.as_deref())?;
    let mut setup = Setup::start(req.mode, req.reserve, sink)?;
    let (pid, started, signals) = launch(program, args_of(&req.program), &setup)?;
    let (waited, seen) = watch(pid, started);
    drop(signals);
    setup.restore();
    let warnings = watch::warnings(
        req.mode,
        Some(pid),
        &seen,
        setup.pool_before,
        waited.elapsed_s,
    );
    let result = dir
        .keep()
        .map(|d| write_result(d, req, &waited, &seen, &warnings));
    Ok(HugeRunOutcome {
        elapsed_s: waited.elapsed_s,
        usage: waited.usage,
        seen,
        exit: waited.exit(),
        warnings,
        result,
    })
}

/// Starts the program with its tunables. Ctrl-C is ignored by Kairos itself: it reaches
/// the program (same process group), which ends, and Kairos then restores the pool as on
/// any exit; SIGTERM and SIGHUP are passed on to it. An ignored signal stays ignored
/// across exec, so the program gets Ctrl-C's default back before it starts.
fn launch(
    program: &str,
    args: &[String],
    setup: &Setup,
) -> Result<(libc::pid_t, Instant, StopSignals), Error> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    // SAFETY: between fork and exec only signal(2), which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    if let Some(v) = &setup.tunables {
        cmd.env("GLIBC_TUNABLES", v);
    }
    let signals = StopSignals::install(&[libc::SIGTERM, libc::SIGHUP], &[libc::SIGINT]);
    let started = Instant::now();
    let child = cmd.spawn().map_err(|source| Error::CannotStart {
        program: program.to_string(),
        source,
    })?;
    Ok((child.id() as libc::pid_t, started, signals))
}

/// Waits for the program while the watch reads its /proc.
fn watch(pid: libc::pid_t, started: Instant) -> (Waited, Seen) {
    let watch = Arc::new(Watch::new());
    watch.start(pid);
    let waited = launch::wait(pid, started, POLL, Forward::First, |_| {});
    (waited, watch.finish())
}

/// The run's manifest, with the program's rusage and the huge pages seen.
fn write_result(
    mut d: ResultDir,
    req: &HugeRunRequest,
    waited: &Waited,
    seen: &Seen,
    warnings: &[String],
) -> Result<PathBuf, Error> {
    let m = d.manifest_mut();
    program::run_manifest(
        m,
        &req.program,
        waited.elapsed_s,
        waited.exit(),
        waited.signalled(),
    );
    let u = waited.usage;
    m.extra.insert(
        "process".into(),
        serde_json::json!({"minor_faults": u.minor_faults, "major_faults": u.major_faults, "user_s": u.user_s, "system_s": u.system_s, "source": "wait4 rusage"}),
    );
    m.extra.insert(
        "hugepages".into(),
        serde_json::json!({"mode": req.mode.name(), "tunable": req.mode.tunable(), "reserved": req.reserve, "proc_samples": seen.samples,
                           "hugetlb_peak_kb": seen.hugetlb_peak_kb, "anon_huge_peak_kb": seen.thp_peak_kb, "warnings": warnings}),
    );
    m.notes.extend(warnings.iter().cloned());
    program::save(&d)
}
