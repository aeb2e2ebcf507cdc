//! The end of a memory-consumption collection: the tracker's files are decoded, their
//! sites symbolised once and stored as the `allocations` and `sites` tables; the manifest
//! says how the program ended; the summary is printed. The events are streamed
//! (crate::stream): memory stays bounded by a few batches of rows, whatever the trace's size.

use std::path::Path;
use std::process::ExitStatus;
use std::sync::mpsc;

use kairos_analysis_api::Failure;
use kairos_result::{ResultDir, TableInfo};
use kairos_session as session;

use crate::{build, replay, reports, stream, tables, Error};

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
    let raw = dir.path().join(crate::decode::RAW_DIR);
    let index = stream::index(&raw)
        .map_err(|e| Failure::failed(format!("cannot read the tracker's files: {e}")))?;
    if index.trace.processes.is_empty() {
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
    let done = tables_and_replay(&dir.tables_path(), &index)?;
    {
        let m = dir.manifest_mut();
        m.duration_secs = Some(run.seconds);
        m.stopped_by = Some(match run.interrupted {
            Some(sig) => session::stop_reason(&kairos_collector::StopReason::Signal(sig)),
            None => "target exited".into(),
        });
        m.target_exit = Some(session::exit_of(run.status));
        m.notes.extend(index.trace.notes.iter().cloned());
        m.notes.extend(done.notes.iter().cloned());
        m.extra.insert("process".into(), process);
        m.tables = done
            .tables
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
    let meta = crate::run_report::meta(dir);
    let mut doc = reports::summary(index.events, &done.sites, &done.stats, &meta, 10);
    doc.title = Some("Memory consumption".into());
    print!("{}", doc.to_text());
    crate::run_report::print_notes(dir, &done.stats);
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

/// What the second pass leaves: the tables written, the sites, the summary's figures and
/// the symboliser's notes.
struct Done {
    tables: Vec<tables::Written>,
    sites: Vec<crate::Site>,
    stats: replay::Stats,
    notes: Vec<String>,
}

/// The second pass, on three threads: this one merges the rows and replays them, a writer
/// encodes them into the `allocations` table batch by batch as they come, and the stacks
/// are symbolised meanwhile. No more than three batches of rows exist at a time.
fn tables_and_replay(tables_dir: &Path, index: &stream::Index) -> Result<Done, Failure> {
    let unexpected = || {
        Failure::failed(
            "the analysis of the allocation events failed unexpectedly; please report this",
        )
    };
    let cannot_write = |e: Error| {
        Failure::failed(format!(
            "cannot write the result tables: {e}; check free disk space and permissions"
        ))
    };
    let rows = usize::try_from(index.events).unwrap_or(usize::MAX);
    let (merged, written, symbolised) = std::thread::scope(|s| {
        let symbolised = s.spawn(|| build::sites(&index.trace));
        let (full, full_rx) = mpsc::sync_channel::<tables::Batch>(1);
        let writer = s.spawn(move || {
            tables::write_allocations(tables_dir, rows, || {
                full_rx
                    .recv()
                    .map_err(|_| "the allocation events stopped coming".to_string())
            })
        });
        let merged = merge_and_replay(index, &full);
        drop(full);
        (merged, writer.join(), symbolised.join())
    });
    let stats =
        merged.map_err(|e| Failure::failed(format!("cannot read the tracker's files: {e}")))?;
    let allocations = written.map_err(|_| unexpected())?.map_err(cannot_write)?;
    let (sites, notes) = symbolised.map_err(|_| unexpected())?;
    let sites_table = tables::write_sites(tables_dir, &sites).map_err(cannot_write)?;
    Ok(Done {
        tables: vec![allocations, sites_table],
        sites,
        stats,
        notes,
    })
}

/// Rows in time order to the replay and, in batches, to the writer.
fn merge_and_replay(
    index: &stream::Index,
    full: &mpsc::SyncSender<tables::Batch>,
) -> Result<replay::Stats, Error> {
    let mut merge = stream::Merge::new(index)?;
    let lag = merge.lag();
    let mut replayer = replay::Replayer::new(0, 0);
    let mut batch = tables::Batch::with_capacity(tables::BATCH_ROWS);
    while let Some(row) = merge.next_row()? {
        let horizon = merge
            .peek_time()
            .map_or(u64::MAX, |t| t.saturating_sub(lag));
        replayer.push(&row, horizon);
        batch.push(&row);
        if batch.len() == tables::BATCH_ROWS {
            let next = tables::Batch::with_capacity(tables::BATCH_ROWS);
            if full.send(std::mem::replace(&mut batch, next)).is_err() {
                // The writer stopped: its error says why.
                break;
            }
        }
    }
    if !batch.is_empty() {
        let _ = full.send(batch);
    }
    Ok(replayer.finish())
}
