//! `kairos collect system-overview` and the reports of such a result.
//!
//! One perf.data file holds the cpu-clock samples (kernel share, hot function) and, as
//! extra attrs in the same rings, every page fault (software minor/major fault events
//! with IP and data address), the fault-entry (with the user stack), system-call,
//! interrupt and context-switch tracepoints, and switch-in records (PERF_RECORD_SWITCH).
//! The converter keeps the events apart as side samples; they are paired into timed
//! kernel entries and stored as `tables/kernel_entries.parquet`.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use kairos_analysis_system_overview::{build, kernel_time, reports, tables, EventNames, PathCost};
use kairos_collector::extra::{self, ExtraEvent};
use kairos_collector::{CollectOptions, EventChoice, StopReason};
use kairos_convert::ConvertOptions;
use kairos_report::{Document, Format};
use kairos_result::{Capability, ResultDir, TableInfo};

use crate::args::{CollectArgs, ReportArgs};
use crate::error::{CliResult, UserError};
use crate::knobs::Knobs;
use crate::pipeline::{self, PERF_DATA};

pub const KIND: &str = "system-overview";

/// How fault time is measured, recorded in the manifest so a reader knows what the
/// "fault time" columns mean.
const FAULT_TIME_METHOD: &str = "paired per thread: exceptions:page_fault_user/kernel (fired on entry to the page-fault handler) to the next minor-faults/major-faults software event of the same mode (a fault in an interrupt that never completes does not take it), which the kernel emits at the end of handle_mm_fault (mm_account_fault). This kernel has no kprobe PMU or kprobe_events, so a kprobe/kretprobe on handle_mm_fault is not possible; the pair covers the fault handling proper, not the exception entry and exit code around it.";

/// How the entry and exit paths are measured, for the manifest.
const ENTRY_EXIT_METHOD: &str = "no event marks the kernel entry before sys_enter/page_fault_user nor the return to user mode after sys_exit/minor-faults (nor the recording of that closing event): before the target runs, kairos makes 1000 getppid calls and touches 512 fresh pages on its own thread with the same events, and takes the median gap from each closing event to the next opening one as the cost per system call and per page fault; where the recorded threads themselves make system calls or take faults back to back, the median of those gaps (under twice the calibrated cost, nothing in between) replaces it, as the cost varies with the machine's load; each completed system call and fault is credited that much, never more than the time to the thread's next event";

/// The events to record next to cpu-clock; tracepoints that do not exist here are listed
/// with the reason rather than failing the collection.
fn extra_events(missing: &mut Vec<(String, String)>) -> Vec<ExtraEvent> {
    let mut v = vec![
        ExtraEvent::minor_faults(),
        ExtraEvent::major_faults(),
    ];
    // (system, event, payload wanted, user stack wanted). Interrupt entries carry the user
    // stack so an interruption is attributed to the user function it stopped. The user
    // stack of a fault is taken at its entry tracepoint, not at the fault event that closes
    // it: the stack walk costs about a microsecond here, and the time a closing event spends
    // recording itself falls after its time stamp, outside every measured entry.
    let tps: [(&str, &str, bool, bool); 9] = [
        ("exceptions", "page_fault_user", true, true),
        ("exceptions", "page_fault_kernel", true, true),
        ("raw_syscalls", "sys_enter", true, true),
        ("raw_syscalls", "sys_exit", false, false),
        ("irq", "irq_handler_entry", true, true),
        ("irq", "irq_handler_exit", false, false),
        ("irq_vectors", "local_timer_entry", true, true),
        ("irq_vectors", "local_timer_exit", false, false),
        ("sched", "sched_switch", false, false),
    ];
    let mut fault_entries = false;
    for (sys, ev, raw, stack) in tps {
        match ExtraEvent::tracepoint(sys, ev, raw, stack) {
            Ok(e) => {
                fault_entries |= sys == "exceptions";
                v.push(e);
            }
            Err(e) => missing.push((format!("{sys}:{ev}"), format!("tracepoint id not readable ({e})"))),
        }
    }
    if fault_entries {
        // The closing fault events stay cheap (IP, address, time); see above.
        for f in v.iter_mut().filter(|e| !e.is_tracepoint()) {
            f.user_callchain = false;
        }
    }
    v
}

pub fn collect(args: CollectArgs) -> CliResult {
    let knobs = Knobs::parse(KIND, &args.knobs)?;
    let target = crate::cmd_collect::target(&args)?;
    if let Some(d) = args.duration {
        if !(d > 0.0 && d.is_finite()) {
            return Err(UserError::usage(format!("-d {d} is not a duration; give a positive number of seconds")));
        }
    }
    let mounted = extra::ensure_tracefs().map_err(UserError::failed)?;
    let mut missing = Vec::new();
    let extras = extra_events(&mut missing);

    let mut dir = pipeline::create_result_dir(args.result_dir.as_deref(), "so")?;
    crate::cmd_collect::fill_manifest(&mut dir, &args, &knobs, &target);
    if let Some(m) = mounted {
        dir.manifest_mut().notes.push(m);
    }
    pipeline::save(&dir)?;

    // What the timed pairs cannot see (entry and exit paths, the closing event's own
    // recording), measured now with the same events, before the target runs.
    let calibration = kairos_collector::calibrate::entry_exit_cost(&extras, kairos_collector::attr::kernel_permitted());
    let mut opts = CollectOptions::new(target, dir.path().join(PERF_DATA));
    opts.interval_us = knobs.u64("sampling-interval-us");
    opts.duration = args.duration.map(Duration::from_secs_f64);
    // No PMU is needed: the timer works everywhere and its kernel-mode samples give the
    // sampled kernel share.
    opts.event = EventChoice::CpuClock;
    opts.extra_events = extras;
    opts.data_mmaps = true;
    // When each thread is switched back in: the end of the time it spent switched out.
    opts.context_switches = true;
    let bar = crate::progress::spinner(args.quiet, "collecting");
    let summary = kairos_collector::collect(&opts, &mut |p| {
        bar.set_message(format!("collecting: {} records, {} KiB", p.samples, p.bytes / 1024));
    });
    bar.finish_and_clear();
    let (summary, kallsyms) = crate::cmd_collect::finish_collection(&mut dir, summary)?;
    {
        let m = dir.manifest_mut();
        let outcomes = summary.extra_events.iter().map(|o| (o.name.clone(), o.missing.clone()));
        for (name, why) in outcomes.chain(missing.into_iter().map(|(n, w)| (n, Some(w)))) {
            if let Some(w) = &why {
                m.notes.push(format!("{name} not recorded: {w}"));
            }
            m.capabilities.push(Capability { name: format!("event {name}"), available: why.is_none(), detail: None, reason: why });
        }
        let mut so = serde_json::json!({ "fault_time": FAULT_TIME_METHOD, "syscall_time": "paired per thread: raw_syscalls:sys_enter to the next sys_exit", "interrupt_time": "paired per CPU: irq:irq_handler_entry/exit and irq_vectors:local_timer_entry/exit", "entry_exit_method": ENTRY_EXIT_METHOD });
        match &calibration {
            Ok(c) => {
                so["entry_exit_ns"] = serde_json::json!({ "syscall": c.syscall_ns, "fault": c.fault_ns });
            }
            Err(e) => m.notes.push(format!("kernel entry and exit paths not measured ({e}): the measured kernel share leaves them out")),
        }
        m.extra.insert("system_overview".into(), so);
    }
    pipeline::save(&dir)?;
    if let StopReason::WriteError(e) = &summary.stopped_by {
        eprintln!("kairos: warning: collection stopped early because writing failed ({e}); the result keeps what was written");
    }
    let convert = ConvertOptions {
        kernel_symbols: kallsyms.is_some(),
        symbolizer: kairos_symbolize::SymbolizerOptions { kallsyms, ..Default::default() },
    };
    let (profile, side, events) = pipeline::convert_result_with_side(&mut dir, &convert, args.quiet)?;
    let mut entries = build(&side, &EventNames::new(&events));
    kernel_time::time_switches(&mut entries, &switch_ins(&dir, &profile));
    let (name, file, rows, bytes) = tables::write(&dir.tables_path(), &entries)
        .map_err(|e| UserError::failed(format!("{e}; check free disk space and permissions")))?;
    dir.manifest_mut().tables.push(TableInfo { name, file, rows, bytes });
    record_counts(&mut dir, &entries);
    pipeline::save(&dir)?;
    let doc = reports::summary(&profile, &entries, &path_cost(&dir), &crate::cmd_report::meta(&dir));
    print!("{}", doc.to_text());
    crate::cmd_report::print_notes(&dir);
    println!("\nResult: {}  (see `kairos report page-faults -r {}`)", dir.path().display(), dir.path().display());
    Ok(())
}

/// Headline counts in the manifest, so `kairos compare` and other tools read them
/// without the tables: completed page faults (what `perf stat -e page-faults` counts) and
/// kernel entries by cause.
fn record_counts(dir: &mut kairos_result::ResultDir, entries: &[kairos_analysis_system_overview::Entry]) {
    let mut by_cause: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    let mut faults = 0u64;
    for e in entries {
        *by_cause.entry(e.cause.as_str()).or_insert(0) += 1;
        faults += u64::from(e.cause.is_fault() && e.completed);
    }
    if let Some(serde_json::Value::Object(so)) = dir.manifest_mut().extra.get_mut("system_overview") {
        so.insert("page_faults".into(), faults.into());
        so.insert("kernel_entries".into(), serde_json::json!(by_cause));
    }
}

/// When each thread was switched back in: the PERF_RECORD_SWITCH records (switch-in) of
/// the recording, which the converter passes over. Their sample_id trailer starts with
/// pid/tid and time, as the sampling event has TID and TIME (and nothing before them).
fn switch_ins(dir: &ResultDir, profile: &kairos_model::Profile) -> std::collections::BTreeMap<u32, Vec<u64>> {
    use kairos_perf_data::{PerfFile, Record, PERF_RECORD_MISC_SWITCH_OUT, PERF_RECORD_SWITCH, PERF_SAMPLE_TID, PERF_SAMPLE_TIME};
    let mut out: std::collections::BTreeMap<u32, Vec<u64>> = std::collections::BTreeMap::new();
    let Ok(file) = PerfFile::open(dir.path().join(PERF_DATA)) else { return out };
    let Some(first) = file.attrs().first() else { return out };
    let st = first.attr.sample_type;
    if !first.attr.sample_id_all() || st & PERF_SAMPLE_TID == 0 || st & PERF_SAMPLE_TIME == 0 {
        return out;
    }
    let index: std::collections::HashMap<(i32, i32), u32> =
        profile.threads.iter().enumerate().map(|(i, t)| ((t.pid, t.tid), i as u32)).collect();
    for r in file.records() {
        let Ok(Record::Other { record_type: PERF_RECORD_SWITCH, misc, bytes }) = r else { continue };
        if misc & PERF_RECORD_MISC_SWITCH_OUT != 0 {
            continue;
        }
        let (Some(p), Some(t), Some(time)) = (bytes.get(8..12), bytes.get(12..16), bytes.get(16..24)) else { continue };
        let pid = i32::from_le_bytes([p[0], p[1], p[2], p[3]]);
        let tid = i32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let time = u64::from_le_bytes([time[0], time[1], time[2], time[3], time[4], time[5], time[6], time[7]]);
        if let Some(&i) = index.get(&(pid, tid)) {
            out.entry(i).or_default().push(time);
        }
    }
    out
}

/// The entry and exit path costs measured at collection (zero for results without them).
fn path_cost(dir: &ResultDir) -> PathCost {
    let ns = |k: &str| {
        dir.manifest().extra.get("system_overview").and_then(|so| so.get("entry_exit_ns")).and_then(|c| c.get(k)).and_then(|v| v.as_u64()).unwrap_or(0)
    };
    PathCost { syscall_ns: ns("syscall"), fault_ns: ns("fault") }
}

pub fn is_result(path: &Path) -> bool {
    ResultDir::open(path).is_ok_and(|d| d.manifest().kind.as_deref() == Some(KIND))
}

pub fn report(args: &ReportArgs) -> CliResult {
    let format = Format::from_str(&args.format).map_err(|e| UserError::usage(format!("{e}")))?;
    let (dir, profile) = crate::cmd_report::open(&args.result_dir)?;
    let entries = tables::read(&dir.tables_path())
        .map_err(|e| UserError::failed(format!("result {} is damaged: {e}; collect it again", args.result_dir.display())))?;
    let bucket_ns = match args.bucket_ms {
        Some(ms) if ms > 0.0 && ms.is_finite() => (ms * 1e6) as u64,
        Some(ms) => return Err(UserError::usage(format!("--bucket-ms {ms} must be a positive number of milliseconds"))),
        None => reports::default_bucket_ns(&profile, &entries),
    };
    let limit = args.limit.filter(|&n| n > 0);
    let cost = path_cost(&dir);
    let doc: Document = match args.report.as_str() {
        "summary" => reports::summary(&profile, &entries, &cost, &crate::cmd_report::meta(&dir)),
        "kernel-entries" => {
            let mut d = Document::new("Kernel entries");
            d.push_table(reports::kernel_entries(&profile, &entries, &cost, bucket_ns));
            d
        }
        "page-faults" => reports::page_faults(&profile, &entries, limit),
        _ => reports::timeline(&profile, &entries, &cost, bucket_ns, limit),
    };
    print!("{}", doc.render(format));
    if format == Format::Text {
        crate::cmd_report::print_notes(&dir);
    }
    Ok(())
}
