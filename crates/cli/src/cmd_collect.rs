//! `kairos collect ANALYSIS`: record with our own collector into a result directory, then
//! run the same conversion as `kairos import`, then print the summary.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use kairos_collector::{BranchRecords, CollectError, CollectOptions, CollectSummary, EventChoice, StopReason, Target, TargetExit, Unwinding};
use kairos_convert::ConvertOptions;
use kairos_result::{Capability, Event, ResultDir, Source};

use crate::args::CollectArgs;
use crate::error::{paranoid_advice, CliResult, UserError};
use crate::knobs::Knobs;
use crate::pipeline::{self, PERF_DATA};
use crate::progress::spinner;

pub fn run(args: CollectArgs) -> CliResult {
    if args.analysis == crate::cmd_memory::KIND {
        return crate::cmd_memory::collect(args);
    }
    if args.analysis == "trace" {
        return crate::cmd_trace::run(args);
    }
    if args.analysis == crate::cmd_system_overview::KIND {
        return crate::cmd_system_overview::collect(args);
    }
    let knobs = Knobs::parse(&args.analysis, &args.knobs)?;
    let target = target(&args)?;
    if let Some(d) = args.duration {
        if !(d > 0.0 && d.is_finite()) {
            return Err(UserError::usage(format!("-d {d} is not a duration; give a positive number of seconds")));
        }
    }
    let mut dir = pipeline::create_result_dir(args.result_dir.as_deref(), "hs")?;
    fill_manifest(&mut dir, &args, &knobs, &target);
    pipeline::save(&dir)?;

    let mut opts = CollectOptions::new(target, dir.path().join(PERF_DATA));
    opts.interval_us = knobs.u64("sampling-interval-us");
    opts.duration = args.duration.map(Duration::from_secs_f64);
    opts.unwinding = match knobs.get("stack-unwinding") {
        "dwarf" => Unwinding::Dwarf { stack_bytes: 8192 },
        _ => Unwinding::FramePointers,
    };
    opts.event = match knobs.get("event") {
        "cpu-clock" => EventChoice::CpuClock,
        "cycles" => EventChoice::Cycles,
        _ => EventChoice::Auto,
    };
    opts.branch_records = match knobs.get("branch-records") {
        "on" => BranchRecords::On,
        "off" => BranchRecords::Off,
        _ => BranchRecords::Auto,
    };
    opts.lbr_missing = lbr_missing(dir.manifest());
    let bar = spinner(args.quiet, "collecting");
    let summary = kairos_collector::collect(&opts, &mut |p| {
        bar.set_message(format!("collecting: {} samples, {} KiB", p.samples, p.bytes / 1024));
    });
    bar.finish_and_clear();
    let (summary, kallsyms) = finish_collection(&mut dir, summary)?;
    {
        let m = dir.manifest_mut();
        m.capabilities.push(Capability {
            name: "kernel samples".into(),
            available: summary.include_kernel,
            detail: None,
            reason: (!summary.include_kernel).then(|| "kernel.perf_event_paranoid forbids kernel profiling for this user".into()),
        });
        let b = &summary.branch_records;
        m.capabilities.push(Capability {
            name: crate::cmd_branches::BRANCH_CAPABILITY.into(),
            available: b.recorded,
            detail: b.recorded.then(|| b.detail.clone()),
            reason: (!b.recorded).then(|| b.detail.clone()),
        });
        if !b.recorded {
            // Notes are printed under every text report, so nobody looks for them in vain.
            m.notes.push(format!("branch records: not recorded: {}", b.detail));
        }
    }
    pipeline::save(&dir)?;
    if let StopReason::WriteError(e) = &summary.stopped_by {
        eprintln!("kairos: warning: collection stopped early because writing failed ({e}); the result keeps what was written");
    }

    let convert = ConvertOptions {
        kernel_symbols: kallsyms.is_some(),
        symbolizer: kairos_symbolize::SymbolizerOptions { kallsyms, ..Default::default() },
    };
    let profile = pipeline::convert_result(&mut dir, &convert, args.quiet)?;
    crate::cmd_report::print_summary(&dir, &profile)?;
    if let Some(TargetExit::Signal(sig)) = summary.target_exit {
        eprintln!("kairos: the target was killed by signal {sig}; the result covers it up to that point");
    }
    Ok(())
}

/// What every collecting analysis does once the collector returns: on failure remove the
/// empty result (nothing was recorded; it would only confuse later runs), else keep a copy
/// of kallsyms and record the event, duration, why it stopped and how the target ended.
pub(crate) fn finish_collection(
    dir: &mut ResultDir,
    summary: Result<CollectSummary, CollectError>,
) -> CliResult<(CollectSummary, Option<PathBuf>)> {
    let summary = match summary {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(dir.path());
            return Err(collect_error(e));
        }
    };
    let kallsyms = match pipeline::snapshot_kallsyms(dir.path()) {
        Ok(p) => Some(p),
        Err(why) => {
            dir.manifest_mut().notes.push(format!("no kernel symbols: {why}"));
            None
        }
    };
    let m = dir.manifest_mut();
    m.event = Some(Event { name: summary.event_name.clone(), reason: Some(summary.event_reason.clone()) });
    m.duration_secs = Some(summary.wall_seconds);
    m.stopped_by = Some(stop_reason(&summary.stopped_by));
    m.target_exit = Some(match summary.target_exit {
        Some(TargetExit::Code(code)) => kairos_result::TargetExit::Code { code },
        Some(TargetExit::Signal(signal)) => kairos_result::TargetExit::Signal { signal },
        None => kairos_result::TargetExit::None,
    });
    Ok((summary, kallsyms))
}

pub(crate) fn target(args: &CollectArgs) -> CliResult<Target> {
    match (args.pid, args.system_wide, args.program.is_empty()) {
        (Some(pid), false, true) => {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return Err(UserError::failed(format!("no process has PID {pid}; check it with `ps -p {pid}`")));
            }
            Ok(Target::Pid(pid))
        }
        (None, true, true) => Ok(Target::SystemWide),
        (None, false, false) => {
            let program = PathBuf::from(&args.program[0]);
            if resolve_program(&program).is_none() {
                return Err(UserError::failed(format!(
                    "program '{}' was not found; give a path to an executable or a command on PATH",
                    program.display()
                )));
            }
            Ok(Target::Launch { program, args: args.program[1..].iter().map(OsString::from).collect() })
        }
        (None, false, true) => Err(UserError::usage(
            "nothing to collect: give a program after `--`, -p PID or -a, e.g. `kairos collect hotspots -- ./app`",
        )),
        _ => Err(UserError::usage("give only one of: a program after `--`, -p PID, -a")),
    }
}

/// Finds the program like execvp would, so a typo fails before a result is created.
pub(crate) fn resolve_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

pub(crate) fn fill_manifest(dir: &mut ResultDir, args: &CollectArgs, knobs: &Knobs, target: &Target) {
    let m = dir.manifest_mut();
    m.kind = Some(args.analysis.clone());
    m.command_line = Some(std::env::args().collect());
    m.target = Some(match target {
        Target::Launch { program, args } => kairos_result::Target::Program {
            program: program.display().to_string(),
            args: args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        },
        Target::Pid(pid) => kairos_result::Target::Pid { pid: *pid },
        Target::SystemWide => kairos_result::Target::SystemWide,
    });
    m.knobs = knobs.all().clone();
    m.start_time = Some(kairos_result::rfc3339_utc(SystemTime::now()));
    m.host = Some(pipeline::this_host());
    m.source = Some(Source::Collected);
    m.capabilities = kairos_platform::detect()
        .items
        .into_iter()
        .map(|c| Capability { name: c.name, available: c.available, detail: Some(c.detail), reason: c.reason })
        .collect();
}

/// Why this machine cannot record branch records, from the platform probe already stored
/// in the manifest (the `lbr` capability), or None when it can.
fn lbr_missing(m: &kairos_result::Manifest) -> Option<String> {
    match m.capabilities.iter().find(|c| c.name == kairos_platform::names::LBR) {
        Some(c) if c.available => None,
        Some(c) => Some(format!(
            "this machine has no usable LBR ({}); virtual machines usually expose no PMU",
            c.reason.clone().unwrap_or_else(|| "no branch record facility found".into())
        )),
        None => Some("the platform probe found no LBR".into()),
    }
}

pub(crate) fn stop_reason(r: &StopReason) -> String {
    match r {
        StopReason::TargetExited => "target exited".into(),
        StopReason::Duration => "duration elapsed".into(),
        StopReason::Signal(s) => format!("signal {s} (interrupted)"),
        StopReason::WriteError(e) => format!("write error: {e}"),
    }
}

pub(crate) fn collect_error(e: CollectError) -> UserError {
    match e {
        CollectError::ProgramNotFound(p) => UserError::failed(format!(
            "program '{}' was not found; give a path to an executable or a command on PATH",
            p.display()
        )),
        CollectError::NotExecutable { path, detail } => UserError::failed(format!(
            "'{}' cannot be executed ({detail}); check that it is a program for this machine and has the execute bit",
            path.display()
        )),
        CollectError::NoSuchProcess(pid) => UserError::failed(format!("no process has PID {pid}; check it with `ps -p {pid}`")),
        CollectError::Permission { paranoid, detail } => UserError::failed(format!(
            "the kernel refused to profile ({detail}): {}",
            paranoid_advice(Some(paranoid))
        )),
        CollectError::EventUnsupported { event, detail } => UserError::failed(format!(
            "this machine cannot sample with {event} ({detail}); use -k event=cpu-clock, which works everywhere"
        )),
        CollectError::NoBranchRecords(why) => UserError::failed(format!(
            "branch records (LBR) cannot be recorded: {why}; collect without them with -k branch-records=off (or auto), or emulate them from an exact trace with `kairos lab emulate-lbr`"
        )),
        other => UserError::failed(format!("collection failed: {other}")),
    }
}
