//! `kairos collect system-overview`: one perf.data file holds the cpu-clock samples
//! (kernel share, hot function) and, as extra attrs in the same rings, every page fault
//! (software minor/major fault events with IP and data address), the fault-entry (with
//! the user stack), system-call, interrupt and context-switch tracepoints, and switch-in
//! records (PERF_RECORD_SWITCH). [`crate::finish`] then pairs them into timed kernel
//! entries.

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_collector::extra::{self, ExtraEvent};
use kairos_collector::{CollectOptions, EventChoice};
use kairos_session::{self as session, PERF_DATA};

use crate::SPEC;

/// The events to record next to cpu-clock (every page fault, the fault-entry, system-call,
/// interrupt and switch tracepoints); tracepoints that do not exist here are listed with
/// the reason rather than failing the collection.
pub fn kernel_events(missing: &mut Vec<(String, String)>) -> Vec<ExtraEvent> {
    let mut v = vec![ExtraEvent::minor_faults(), ExtraEvent::major_faults()];
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
            Err(e) => missing.push((
                format!("{sys}:{ev}"),
                format!("tracepoint id not readable ({e})"),
            )),
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

pub(crate) fn collect(req: &CollectRequest) -> Result<(), Failure> {
    let target = session::target(req, SPEC.name)?;
    let duration = session::check_duration(req)?;
    let mounted = extra::ensure_tracefs().map_err(Failure::failed)?;
    let mut missing = Vec::new();
    let extras = kernel_events(&mut missing);

    let mut dir = session::create_result_dir(req.result_dir.as_deref(), SPEC.result_suffix)?;
    session::start_manifest(&mut dir, SPEC.name, &req.knobs, session::describe(&target));
    dir.manifest_mut().capabilities = session::platform_capabilities();
    if let Some(m) = mounted {
        dir.manifest_mut().notes.push(m);
    }
    session::save(&dir)?;

    // What the timed pairs cannot see (entry and exit paths, the closing event's own
    // recording), measured now with the same events, before the target runs.
    let calibration = kairos_collector::calibrate::entry_exit_cost_on_threads(
        &extras,
        kairos_collector::attr::kernel_permitted(),
        kairos_collector::calibrate::CALIBRATION_THREADS,
    );
    let mut opts = CollectOptions::new(target, dir.path().join(PERF_DATA));
    opts.interval_us = req.knobs.u64("sampling-interval-us");
    if let Some(pages) = req.mmap_pages {
        opts.ring_buffer_pages = pages;
    }
    opts.cpus = req.cpus.clone();
    opts.duration = duration;
    opts.on_target = session::target_hook(req);
    // No PMU is needed: the timer works everywhere and its kernel-mode samples give the
    // sampled kernel share.
    opts.event = EventChoice::CpuClock;
    opts.extra_events = extras;
    opts.data_mmaps = true;
    // When each thread is switched back in: the end of the time it spent switched out.
    opts.context_switches = true;
    let bandwidth = session::bandwidth::start("");
    let summary = session::collect_with_progress(&opts, req.quiet);
    session::bandwidth::finish(&mut dir, bandwidth);
    crate::finish::finish(&mut dir, summary, missing, calibration, req.quiet)
}
