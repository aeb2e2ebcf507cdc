//! `kairos collect latency`: one perf.data file holds the cpu-clock samples, the
//! request boundaries when they are probes (uprobes at a function's entry and return, or
//! USDT probes), and the kernel's side of each request: the scheduler's switches (with
//! their payload and the user stack where the thread blocked) and wake-ups, switch-in
//! records, page faults, system calls and interrupts. Marker boundaries are read from the
//! program's ring meanwhile ([`crate::marker`]); a log is read at the end.
//! [`crate::finish`] turns it all into requests.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_collector::extra::{self, ExtraEvent};
use kairos_collector::{EventChoice, Target, TargetHook};
use kairos_session::{self as session, PERF_DATA};

use crate::boundary::{self, Source};
use crate::marker::{self, MarkerReader};
use crate::model::{MANIFEST_KEY, ONLY_PID};
use crate::sched::Fields;
use crate::SPEC;

pub(crate) fn collect(req: &CollectRequest) -> Result<(), Failure> {
    let target = session::target(req, SPEC.name)?;
    let duration = session::check_duration(req)?;
    let source = boundary::source(&req.knobs).map_err(Failure::usage)?;
    let slower = crate::threshold::slower(&req.knobs).map_err(Failure::usage)?;
    let probes = probe_events(&source, &target)?;
    let mounted = extra::ensure_tracefs().map_err(Failure::failed)?;
    let mut missing = Vec::new();
    let mut extras = kernel_side(&mut missing);
    extras.extend(probes);

    let mut dir = session::create_result_dir(req.result_dir.as_deref(), SPEC.result_suffix)?;
    session::start_manifest(&mut dir, SPEC.name, &req.knobs, session::describe(&target));
    dir.manifest_mut().capabilities = session::platform_capabilities();
    if let Some(m) = mounted {
        dir.manifest_mut().notes.push(m);
    }
    dir.manifest_mut().extra.insert(
        MANIFEST_KEY.into(),
        serde_json::json!({
            "source": source.describe(),
            "fields": Fields::from_tracefs(),
            "realtime_minus_monotonic_ns": realtime_minus_monotonic(),
        }),
    );
    let recorded = recording_target(&target, &mut dir);
    session::save(&dir)?;

    let mut opts = kairos_analysis_hotspots::sampling_options(
        &req.knobs,
        recorded,
        dir.path().join(PERF_DATA),
    );
    if req.knobs.get("event") == "auto" {
        // Request time is wall-clock time: the timer's samples weigh nanoseconds.
        opts.event = EventChoice::CpuClock;
    }
    if let Some(pages) = req.mmap_pages {
        opts.ring_buffer_pages = pages;
    }
    opts.cpus = req.cpus.clone();
    opts.duration = duration;
    opts.lbr_missing = kairos_analysis_hotspots::lbr_missing(dir.manifest());
    opts.extra_events = extras;
    opts.context_switches = true;
    opts.on_target = session::target_hook(req);
    if source == Source::Marker {
        opts.env.push((marker::ENV.0.into(), marker::ENV.1.into()));
    }
    let reader = (source == Source::Marker).then(|| {
        let r = MarkerReader::start(Arc::new(AtomicI32::new(0)), dir.path().join(marker::FILE));
        opts.on_target = Some(tell_pid(&target, r.pid(), opts.on_target.take()));
        r
    });
    if crate::flight::wanted(req) {
        return crate::flight::record(req, &mut dir, opts, reader, &source, slower, missing);
    }
    let summary = session::collect_with_progress(&opts, req.quiet);
    let markers = reader.map(MarkerReader::finish);
    let result = crate::finish::requests_of(
        &mut dir, summary, missing, markers, &source, slower, req.quiet,
    )?;
    crate::finish::print_summary(&dir, &result);
    Ok(())
}

/// An attached process with more threads than this is recorded on every CPU for every
/// process: one event per CPU, where one per thread and CPU would take seconds to open
/// (2,000 threads: about 64,000 events, 10 s here) while the service runs on unseen.
const MANY_THREADS: usize = 256;

/// What the collector records: the target, or every process for an attached process
/// with many threads (its requests only are kept: `only_pid` in the manifest).
fn recording_target(target: &Target, dir: &mut kairos_result::ResultDir) -> Target {
    let Target::Pid(pid) = target else {
        return target.clone();
    };
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
    if threads <= MANY_THREADS {
        return target.clone();
    }
    let m = dir.manifest_mut();
    m.notes.push(format!("process {pid} has {threads} threads: recorded on every CPU for every process (one event per CPU, not one per thread and CPU), and its requests kept"));
    if let Some(serde_json::Value::Object(l)) = m.extra.get_mut(MANIFEST_KEY) {
        l.insert(ONLY_PID.into(), (*pid).into());
    }
    Target::SystemWide
}

/// The probe events of the boundaries, found in the target's files; a usage error
/// naming what is wrong otherwise.
fn probe_events(source: &Source, target: &Target) -> Result<Vec<ExtraEvent>, Failure> {
    match (source, target) {
        (Source::Marker, Target::SystemWide) => {
            return Err(Failure::usage("request markers are read from one program: give it (or -p PID), or with -a use -k request=PATH:FUNCTION, usdt:PROVIDER:BEGIN,END or -k requests-from=FILE"))
        }
        (Source::Log { path, .. }, _) if !boundary::readable(path) && !matches!(target, Target::Launch { .. }) => {
            return Err(Failure::usage(format!("the request log {} does not exist; give -k requests-from=FILE with the application's log", path.display())))
        }
        _ => {}
    }
    let files = boundary::target_files(target).map_err(Failure::usage)?;
    if files.is_empty()
        && matches!(
            source,
            Source::Function { binary: None, .. } | Source::Usdt { .. }
        )
    {
        return Err(Failure::usage(
            "with -a, say which program: -k request=PATH:FUNCTION",
        ));
    }
    Ok(source
        .probe_events(&files)
        .map_err(Failure::usage)?
        .unwrap_or_default())
}

/// system-overview's kernel events, with the switch's payload and user stack (where the
/// thread blocked), the wake-ups (who woke it, from where) and the softirqs.
fn kernel_side(missing: &mut Vec<(String, String)>) -> Vec<ExtraEvent> {
    let mut v = kairos_analysis_system_overview::kernel_events(missing);
    v.retain(|e| e.name != crate::sched::SWITCH);
    // A request's system calls are told apart by name and its interrupts are counted by
    // time: their user stacks, a walk of the user stack at every entry, would only slow the
    // program (faults keep theirs: they say where the faults happened).
    for e in v
        .iter_mut()
        .filter(|e| e.name.starts_with("raw_syscalls:") || e.name.starts_with("irq"))
    {
        e.user_callchain = false;
    }
    let more = [
        ("sched", "sched_switch", true),
        ("sched", "sched_waking", true),
        ("irq", "softirq_entry", false),
        ("irq", "softirq_exit", false),
    ];
    for (sys, ev, stack) in more {
        match ExtraEvent::tracepoint(sys, ev, true, stack) {
            Ok(e) => v.push(e),
            Err(e) => missing.push((
                format!("{sys}:{ev}"),
                format!("tracepoint id not readable ({e})"),
            )),
        }
    }
    v
}

/// A target step that also tells the marker reader the launched program's pid (or, with
/// -p, the process's) before the step it wraps.
fn tell_pid(target: &Target, slot: Arc<AtomicI32>, then: Option<TargetHook>) -> TargetHook {
    if let Target::Pid(pid) = target {
        slot.store(*pid, Ordering::SeqCst);
    }
    let launch = matches!(target, Target::Launch { .. });
    TargetHook(Arc::new(move |pid| {
        if launch {
            slot.store(pid, Ordering::SeqCst);
        }
        then.as_ref().map_or(Ok(()), |h| (h.0)(pid))
    }))
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC now, to move a log's wall-clock times onto the
/// recording's clock.
fn realtime_minus_monotonic() -> i64 {
    use kairos_collector::{monotonic_ns, realtime_ns};
    let (m0, r, m1) = (monotonic_ns(), realtime_ns(), monotonic_ns());
    r as i64 - (m0 + (m1 - m0) / 2) as i64
}
