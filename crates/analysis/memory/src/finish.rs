//! The end of a memory-consumption collection: the tracker's files are decoded, their
//! sites symbolised once and stored as the `allocations` and `sites` tables; the manifest
//! says how the program ended; the summary is printed.

use std::process::ExitStatus;

use kairos_analysis_api::Failure;
use kairos_result::{ResultDir, TableInfo};
use kairos_session as session;

use crate::{build, decode, replay, reports, tables};

/// How the tracked program ran.
pub(crate) struct Run {
    pub status: ExitStatus,
    /// The signal to kairos that ended the program early.
    pub interrupted: Option<i32>,
    pub seconds: f64,
    /// As given on the command line, for sentences.
    pub program: String,
}

pub(crate) fn finish(dir: &mut ResultDir, run: Run) -> Result<(), Failure> {
    // The target is the only child Kairos has waited for: its rusage gives the page
    // faults and CPU times `kairos compare` shows (the tracker's own faults included).
    let process = session::children_rusage();
    let raw = dir.path().join(crate::collect::RAW_DIR);
    let trace = decode::read_dir(&raw)
        .map_err(|e| Failure::failed(format!("cannot read the tracker's files: {e}")))?;
    if trace.processes.is_empty() {
        let _ = std::fs::remove_dir_all(dir.path());
        if let Some(sig) = run.interrupted {
            return Err(Failure::failed(format!("interrupted by signal {sig} before the allocation tracker wrote anything; nothing was recorded")));
        }
        return Err(Failure::failed(format!(
            "the allocation tracker was not loaded into {} (it wrote nothing): the program may be setuid, \
             clear LD_PRELOAD, or be statically linked; run it as a dynamically linked program of your own user",
            run.program
        )));
    }
    let data = build::build(&trace);
    drop(trace);
    // The summary's replay and the table writing are independent: run them side by side.
    let (written, st) = std::thread::scope(|s| {
        let summary = s.spawn(|| replay::replay(&data.rows, 0));
        let written = tables::write(&dir.tables_path(), &data);
        (written, summary.join())
    });
    let st = st.map_err(|_| {
        Failure::failed(
            "the analysis of the allocation events failed unexpectedly; please report this",
        )
    })?;
    let infos = written.map_err(|e| {
        Failure::failed(format!(
            "cannot write the result tables: {e}; check free disk space and permissions"
        ))
    })?;
    {
        let m = dir.manifest_mut();
        m.duration_secs = Some(run.seconds);
        m.stopped_by = Some(match run.interrupted {
            Some(sig) => session::stop_reason(&kairos_collector::StopReason::Signal(sig)),
            None => "target exited".into(),
        });
        m.target_exit = Some(session::exit_of(run.status));
        m.notes.extend(data.notes.iter().cloned());
        m.extra.insert("process".into(), process);
        m.tables = infos
            .into_iter()
            .map(|(name, file, rows, bytes)| TableInfo {
                name,
                file,
                rows,
                bytes,
            })
            .collect();
    }
    session::save(dir)?;
    let mut doc = reports::summary(&data, &st, &crate::run_report::meta(dir), 10);
    doc.title = Some("Memory consumption".into());
    print!("{}", doc.to_text());
    crate::run_report::print_notes(dir, &st);
    println!(
        "\nResult: {}  (see `kairos report allocations -r {}`)",
        dir.path().display(),
        dir.path().display()
    );
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&run.status) {
        eprintln!(
            "kairos: the target was killed by signal {sig}; the result covers it up to that point"
        );
    }
    Ok(())
}
