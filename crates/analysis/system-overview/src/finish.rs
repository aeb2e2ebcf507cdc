//! The end of a system-overview collection: what each extra event did goes into the
//! manifest with how times are measured, the recording is converted, its side samples
//! are paired into timed kernel entries (`tables/kernel_entries.parquet`), and the
//! summary is printed.

use kairos_analysis_api::Failure;
use kairos_collector::calibrate::EntryExitCost;
use kairos_collector::{CollectError, CollectSummary};
use kairos_result::{Capability, ResultDir, TableInfo};
use kairos_session::{self as session, PERF_DATA};

use crate::{build, kernel_time, reports, tables, EventNames};

/// How fault time is measured, recorded in the manifest so a reader knows what the
/// "fault time" columns mean.
const FAULT_TIME_METHOD: &str = "paired per thread: exceptions:page_fault_user/kernel (fired on entry to the page-fault handler) to the next minor-faults/major-faults software event of the same mode (a fault in an interrupt that never completes does not take it), which the kernel emits at the end of handle_mm_fault (mm_account_fault). This kernel has no kprobe PMU or kprobe_events, so a kprobe/kretprobe on handle_mm_fault is not possible; the pair covers the fault handling proper, not the exception entry and exit code around it.";

/// How the entry and exit paths are measured, for the manifest.
const ENTRY_EXIT_METHOD: &str = "no event marks the kernel entry before sys_enter/page_fault_user nor the return to user mode after sys_exit/minor-faults (nor the recording of that closing event): before the target runs, kairos makes 4000 getppid calls and touches 1024 fresh pages (after a warm-up) on each of several fresh threads of its own with the same events, and takes the median gap from each closing event to the next opening one as that thread's cost per system call and per page fault; the median over the threads is the cost, half their range its spread (a thread keeps its own figure, up to half as much again as another's). Each thread of the target also shows its untimed kernel time in its cpu-clock samples: those in kernel mode, and those in user mode right where the kernel returned to (an interrupt held back by the way out), less the timed time. The two estimates are weighted by the inverse of their variances and laid over the gaps between entries in proportion to the calibrated cost, never more than a gap";

pub(crate) fn finish(
    dir: &mut ResultDir,
    summary: Result<CollectSummary, CollectError>,
    missing: Vec<(String, String)>,
    calibration: Result<EntryExitCost, kairos_collector::CollectError>,
    quiet: bool,
) -> Result<(), Failure> {
    let (summary, kallsyms) = session::finish_collection(dir, summary)?;
    record_events(dir.manifest_mut(), &summary, missing);
    {
        let m = dir.manifest_mut();
        let mut so = serde_json::json!({ "fault_time": FAULT_TIME_METHOD, "syscall_time": "paired per thread: raw_syscalls:sys_enter to the next sys_exit", "interrupt_time": "paired per CPU: irq:irq_handler_entry/exit and irq_vectors:local_timer_entry/exit", "entry_exit_method": ENTRY_EXIT_METHOD });
        match &calibration {
            Ok(c) => {
                so["entry_exit_ns"] = serde_json::json!({ "syscall": c.syscall_ns, "fault": c.fault_ns, "syscall_spread": c.syscall_spread_ns, "fault_spread": c.fault_spread_ns });
            }
            Err(e) => m.notes.push(format!("kernel entry and exit paths not measured ({e}): the measured kernel share leaves them out")),
        }
        m.extra.insert("system_overview".into(), so);
    }
    session::save(dir)?;
    session::warn_write_error(&summary.stopped_by);
    let convert = session::convert_options(kallsyms);
    let (profile, side, events) = session::convert_result_with_side(dir, &convert, quiet)?;
    let names = EventNames::new(&events);
    let own = crate::recording_faults(&side, &names);
    let mut entries = build(&side, &names);
    kernel_time::time_switches(&mut entries, &switch_ins(dir, &profile));
    let (name, file, rows, bytes) = tables::write(&dir.tables_path(), &entries)
        .map_err(|e| Failure::failed(format!("{e}; check free disk space and permissions")))?;
    dir.manifest_mut().tables.push(TableInfo {
        name,
        file,
        rows,
        bytes,
    });
    record_counts(dir, &entries, own);
    session::save(dir)?;
    let doc = reports::summary(
        &profile,
        &entries,
        &crate::run_report::path_cost(dir),
        own,
        &session::meta(dir),
    );
    print!("{}", doc.to_text());
    session::print_notes(dir);
    println!(
        "\nResult: {}  (see `kairos report page-faults -r {}`)",
        dir.path().display(),
        dir.path().display()
    );
    Ok(())
}

/// Each extra event of a collection in the manifest: recorded or not (a capability), and
/// a note for each that was not, with why (`missing`: those never opened).
pub fn record_events(
    m: &mut kairos_result::Manifest,
    summary: &CollectSummary,
    missing: Vec<(String, String)>,
) {
    let outcomes = summary
        .extra_events
        .iter()
        .map(|o| (o.name.clone(), o.missing.clone()));
    for (name, why) in outcomes.chain(missing.into_iter().map(|(n, w)| (n, Some(w)))) {
        if let Some(w) = &why {
            m.notes.push(format!("{name} not recorded: {w}"));
        }
        m.capabilities.push(Capability {
            name: format!("event {name}"),
            available: why.is_none(),
            detail: None,
            reason: why,
        });
    }
}

/// Headline counts in the manifest, so `kairos compare` and other tools read them
/// without the tables: completed page faults (what `perf stat -e page-faults` counts) and
/// kernel entries by cause.
fn record_counts(dir: &mut ResultDir, entries: &[crate::Entry], recording_faults: u64) {
    let mut by_cause: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    let mut faults = 0u64;
    for e in entries {
        *by_cause.entry(e.cause.as_str()).or_insert(0) += 1;
        faults += u64::from(e.cause.is_fault() && e.completed);
    }
    if let Some(serde_json::Value::Object(so)) = dir.manifest_mut().extra.get_mut("system_overview")
    {
        so.insert("page_faults".into(), faults.into());
        so.insert("kernel_entries".into(), serde_json::json!(by_cause));
        so.insert(
            crate::run_report::RECORDING_FAULTS.into(),
            recording_faults.into(),
        );
    }
}

/// When each thread (by index in the profile) was switched back in: the
/// PERF_RECORD_SWITCH records (switch-in) of the recording, which the converter passes
/// over, in file order. Their sample_id trailer starts with
/// pid/tid and time, as the sampling event has TID and TIME (and nothing before them).
pub fn switch_ins(
    dir: &ResultDir,
    profile: &kairos_model::Profile,
) -> std::collections::BTreeMap<u32, Vec<u64>> {
    use kairos_perf_data::{
        PerfFile, Record, PERF_RECORD_MISC_SWITCH_OUT, PERF_RECORD_SWITCH,
        PERF_RECORD_SWITCH_CPU_WIDE, PERF_SAMPLE_TID, PERF_SAMPLE_TIME,
    };
    let mut out: std::collections::BTreeMap<u32, Vec<u64>> = std::collections::BTreeMap::new();
    let Ok(file) = PerfFile::open(dir.path().join(PERF_DATA)) else {
        return out;
    };
    let Some(first) = file.attrs().first() else {
        return out;
    };
    let st = first.attr.sample_type;
    if !first.attr.sample_id_all() || st & PERF_SAMPLE_TID == 0 || st & PERF_SAMPLE_TIME == 0 {
        return out;
    }
    let index: std::collections::HashMap<(i32, i32), u32> = profile
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.pid, t.tid), i as u32))
        .collect();
    for r in file.records() {
        // A system-wide recording writes the CPU-wide kind, whose body (the other task's
        // pid and tid) comes before the trailer; the trailer names the task switched in.
        let (misc, bytes, trailer) = match r {
            Ok(Record::Other {
                record_type: PERF_RECORD_SWITCH,
                misc,
                bytes,
            }) => (misc, bytes, 8),
            Ok(Record::Other {
                record_type: PERF_RECORD_SWITCH_CPU_WIDE,
                misc,
                bytes,
            }) => (misc, bytes, 16),
            _ => continue,
        };
        if misc & PERF_RECORD_MISC_SWITCH_OUT != 0 {
            continue;
        }
        let (Some(p), Some(t), Some(time)) = (
            bytes.get(trailer..trailer + 4),
            bytes.get(trailer + 4..trailer + 8),
            bytes.get(trailer + 8..trailer + 16),
        ) else {
            continue;
        };
        let pid = i32::from_le_bytes([p[0], p[1], p[2], p[3]]);
        let tid = i32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let time = u64::from_le_bytes([
            time[0], time[1], time[2], time[3], time[4], time[5], time[6], time[7],
        ]);
        if let Some(&i) = index.get(&(pid, tid)) {
            out.entry(i).or_default().push(time);
        }
    }
    out
}
