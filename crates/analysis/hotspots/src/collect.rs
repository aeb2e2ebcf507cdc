//! `kairos collect hotspots`: the knobs become the collector's options, the collector
//! records `perf.data` into a new result, then [`crate::finish`] completes it.

use kairos_analysis_api::{CollectRequest, Failure, Knobs};
use kairos_collector::{BranchRecords, CollectOptions, EventChoice, Unwinding};
use kairos_session::{self as session, PERF_DATA};

use crate::SPEC;

pub(crate) fn collect(req: &CollectRequest) -> Result<(), Failure> {
    let target = session::target(req, SPEC.name)?;
    let duration = session::check_duration(req)?;
    let mut dir = session::create_result_dir(req.result_dir.as_deref(), SPEC.result_suffix)?;
    session::start_manifest(&mut dir, SPEC.name, &req.knobs, session::describe(&target));
    dir.manifest_mut().capabilities = session::platform_capabilities();
    session::save(&dir)?;

    let mut opts = sampling_options(&req.knobs, target, dir.path().join(PERF_DATA));
    if let Some(pages) = req.mmap_pages {
        opts.ring_buffer_pages = pages;
    }
    opts.cpus = req.cpus.clone();
    opts.duration = duration;
    opts.on_target = session::target_hook(req);
    opts.lbr_missing = lbr_missing(dir.manifest());
    let bandwidth = session::bandwidth::start("");
    let summary = session::collect_with_progress(&opts, req.quiet);
    session::bandwidth::finish(&mut dir, bandwidth);
    crate::finish::finish(&mut dir, summary, req.quiet)
}

/// The collector's options from the sampling knobs ([`crate::SAMPLING_KNOBS`]).
pub fn sampling_options(
    knobs: &Knobs,
    target: kairos_collector::Target,
    out: std::path::PathBuf,
) -> CollectOptions {
    let mut opts = CollectOptions::new(target, out);
    opts.interval_us = knobs.u64("sampling-interval-us");
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
    opts
}

/// Why this machine cannot record branch records, from the platform probe already stored
/// in the manifest (the `lbr` capability), or None when it can.
pub fn lbr_missing(m: &kairos_result::Manifest) -> Option<String> {
    match m
        .capabilities
        .iter()
        .find(|c| c.name == kairos_platform::names::LBR)
    {
        Some(c) if c.available => None,
        Some(c) => Some(format!(
            "this machine has no usable LBR ({}); virtual machines usually expose no PMU",
            c.reason
                .clone()
                .unwrap_or_else(|| "no branch record facility found".into())
        )),
        None => Some("the platform probe found no LBR".into()),
    }
}
