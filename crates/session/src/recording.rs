//! The end of a recording, the same for every analysis that samples with the collector:
//! the collector's errors as sentences, the kallsyms snapshot, why it stopped and how the
//! target ended.

use std::path::PathBuf;

use kairos_analysis_api::Failure;
use kairos_collector::{CollectError, CollectSummary, StopReason, TargetExit};
use kairos_result::{Event, ResultDir};

use crate::host::snapshot_kallsyms;

/// On failure removes the empty result (nothing was recorded; it would only confuse later
/// runs), else keeps a copy of kallsyms and records the event, duration, why it stopped
/// and how the target ended. Returns the summary and the kallsyms copy, if any.
pub fn finish_collection(
    dir: &mut ResultDir,
    summary: Result<CollectSummary, CollectError>,
) -> Result<(CollectSummary, Option<PathBuf>), Failure> {
    let summary = match summary {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(dir.path());
            return Err(collect_error(e));
        }
    };
    let kallsyms = match snapshot_kallsyms(dir.path()) {
        Ok(p) => Some(p),
        Err(why) => {
            dir.manifest_mut()
                .notes
                .push(format!("no kernel symbols: {why}"));
            None
        }
    };
    let m = dir.manifest_mut();
    m.event = Some(Event {
        name: summary.event_name.clone(),
        reason: Some(summary.event_reason.clone()),
    });
    m.duration_secs = Some(summary.wall_seconds);
    if let Some(note) = lost_note(summary.lost_records, summary.ring_bytes) {
        m.notes.push(note);
    }
    m.stopped_by = Some(stop_reason(&summary.stopped_by));
    m.target_exit = Some(match summary.target_exit {
        Some(TargetExit::Code(code)) => kairos_result::TargetExit::Code { code },
        Some(TargetExit::Signal(signal)) => kairos_result::TargetExit::Signal { signal },
        None => kairos_result::TargetExit::None,
    });
    Ok((summary, kallsyms))
}

/// Lost records and the fix: a bigger ring (`-m`, twice the size and at least 4 MiB).
fn lost_note(lost: u64, ring_bytes: u64) -> Option<String> {
    if lost == 0 {
        return None;
    }
    let kib = ring_bytes / 1024;
    let bigger = (2 * kib).max(4096);
    let size = if bigger.is_multiple_of(1024) {
        format!("{}M", bigger / 1024)
    } else {
        format!("{bigger}K")
    };
    Some(format!(
        "{lost} records were lost: a ring buffer of {kib} KiB per CPU filled before kairos read it; collect again with a bigger one (-m {size}) or a longer sampling interval"
    ))
}

/// A collection cut short by a failing write keeps what was written; say so.
pub fn warn_write_error(stopped_by: &StopReason) {
    if let StopReason::WriteError(e) = stopped_by {
        eprintln!("kairos: warning: collection stopped early because writing failed ({e}); the result keeps what was written");
    }
}

/// The manifest's `stopped_by`.
pub fn stop_reason(r: &StopReason) -> String {
    match r {
        StopReason::TargetExited => "target exited".into(),
        StopReason::Duration => "duration elapsed".into(),
        StopReason::Signal(s) => format!("signal {s} (interrupted)"),
        StopReason::WriteError(e) => format!("write error: {e}"),
    }
}

/// How a launched program ended, as the manifest says it.
pub fn exit_of(status: std::process::ExitStatus) -> kairos_result::TargetExit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => kairos_result::TargetExit::Code { code },
        (None, Some(signal)) => kairos_result::TargetExit::Signal { signal },
        _ => kairos_result::TargetExit::None,
    }
}

/// The collector's error as one sentence with the fix.
pub fn collect_error(e: CollectError) -> Failure {
    match e {
        CollectError::ProgramNotFound(p) => {
            Failure::failed(format!("program '{}' was not found; give a path to an executable or a command on PATH", p.display()))
        }
        CollectError::NotExecutable { path, detail } => Failure::failed(format!(
            "'{}' cannot be executed ({detail}); check that it is a program for this machine and has the execute bit",
            path.display()
        )),
        CollectError::NoSuchProcess(pid) => Failure::failed(format!("no process has PID {pid}; check it with `ps -p {pid}`")),
        CollectError::Permission { paranoid, detail } => {
            Failure::failed(format!("the kernel refused to profile ({detail}): {}", paranoid_advice(Some(paranoid))))
        }
        CollectError::EventUnsupported { event, detail } => Failure::failed(format!(
            "this machine cannot sample with {event} ({detail}); use -k event=cpu-clock, which works everywhere"
        )),
        CollectError::NoBranchRecords(why) => Failure::failed(format!(
            "branch records (LBR) cannot be recorded: {why}; collect without them with -k branch-records=off (or auto), or emulate them from an exact trace with `kairos lab emulate-lbr`"
        )),
        CollectError::TargetSetup(why) => Failure::failed(format!("{why}; nothing was measured")),
        other => Failure::failed(format!("collection failed: {other}")),
    }
}

/// Explains perf_event_paranoid in one sentence, for permission failures.
pub fn paranoid_advice(paranoid: Option<i32>) -> String {
    let level = paranoid
        .map(|p| p.to_string())
        .unwrap_or_else(|| "unknown".into());
    format!(
        "kernel.perf_event_paranoid is {level} (it limits who may profile: 2 = own user-space code only, \
         1 = also kernel, 0 = also CPU-wide, -1 = everything); run as root, grant CAP_PERFMON, or lower it with \
         `sudo sysctl kernel.perf_event_paranoid=1`"
    )
}

#[cfg(test)]
mod tests {
    use super::lost_note;

    #[test]
    fn lost_records_name_a_bigger_ring() {
        assert_eq!(lost_note(0, 1 << 20), None);
        assert_eq!(
            lost_note(12, 1 << 20).as_deref(),
            Some("12 records were lost: a ring buffer of 1024 KiB per CPU filled before kairos read it; collect again with a bigger one (-m 4M) or a longer sampling interval")
        );
        assert!(lost_note(1, 8 << 20).unwrap().contains("(-m 16M)"));
        assert!(lost_note(1, 4096).unwrap().contains("of 4 KiB per CPU"));
    }
}
