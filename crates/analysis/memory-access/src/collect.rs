//! `kairos collect memory-access`: chooses the address source (`-k source`), records the
//! program with it (and with the allocation tracker preloaded, to name heap objects),
//! then [`crate::finish`] completes the result.

use std::ffi::OsString;
use std::path::Path;

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_collector::pmu::{PmuError, PmuEvent, PmuGroup, PmuSampling};
use kairos_collector::{
    CollectError, CollectOptions, CollectSummary, EventChoice, Progress, Target, Unwinding,
};
use kairos_mem_source::choice::{Sampling, DEVICES};
use kairos_mem_source::{choose, AttrSpec, Options, Plan};
use kairos_result::ResultDir;
use kairos_session::{self as session, PERF_DATA};

use crate::cpu::this_cpu;
use crate::{Source, SPEC};

/// What `-k source=` settles on.
pub(crate) enum Chosen {
    Registers(String),
    Pmu(Plan, String),
}

/// The source `-k source=` asks for, with the reason, or why it cannot be had here.
pub(crate) fn choose_source(knob: &str, ldlat: u32) -> Result<Chosen, Failure> {
    let pmu = choose(
        Path::new(DEVICES),
        this_cpu().as_ref(),
        &Options {
            ldlat,
            ..Options::default()
        },
    );
    match (knob, pmu) {
        ("registers", _) => Ok(Chosen::Registers("asked for with -k source=registers".into())),
        (_, Ok(plan)) => {
            let why = if knob == "pmu" { "asked for with -k source=pmu" } else { "auto: the PMU samples data addresses and sources" };
            let reason = format!("{why}: {:?}", plan.source);
            Ok(Chosen::Pmu(plan, reason))
        }
        ("pmu", Err(r)) => Err(Failure::usage(format!(
            "-k source=pmu: {}; this machine has address sampling through registers instead: use -k source=registers (or auto)",
            r.reason
        ))),
        (_, Err(r)) => Ok(Chosen::Registers(format!("auto: no PMU memory sampling here ({})", r.reason))),
    }
}

/// mem-source's events as the collector takes them (the collector does not know mem-source).
fn pmu_groups(plan: &Plan) -> Vec<PmuGroup> {
    let event = |a: &AttrSpec| PmuEvent {
        name: a.name.clone(),
        type_: a.type_,
        config: a.config,
        config1: a.config1,
        config2: a.config2,
        config3: a.config3,
        precise_ip: a.precise_ip,
        precise_min: a.precise_min,
        sample_type: a.sample_type,
        sampling: match a.sampling {
            Sampling::Period(p) => PmuSampling::Period(p),
            Sampling::Frequency(f) => PmuSampling::Frequency(f),
        },
        no_exclude: a.no_exclude,
    };
    plan.loads
        .iter()
        .chain(&plan.stores)
        .map(|g| PmuGroup {
            leader: g.leader.as_ref().map(event),
            event: event(&g.event),
            members: Vec::new(),
            optional: false,
            cpus: g.cpus.clone(),
        })
        .collect()
}

pub(crate) fn collect(req: &CollectRequest) -> Result<(), Failure> {
    let ldlat = req.knobs.u64("ldlat").try_into().unwrap_or(30);
    let chosen = choose_source(req.knobs.get("source"), ldlat)?;
    let target = session::target(req, SPEC.name)?;
    // Refused before the result directory exists.
    // (Whether it is merely off is for the NUMA side to record, later.)
    let _off = crate::numa::collect::wanted(req.knobs.get("numa"), &target)?;
    let duration = session::check_duration(req)?;
    let mut dir = session::create_result_dir(req.result_dir.as_deref(), SPEC.result_suffix)?;
    session::start_manifest(&mut dir, SPEC.name, &req.knobs, session::describe(&target));
    dir.manifest_mut().capabilities = session::platform_capabilities();
    let mut opts = CollectOptions::new(target.clone(), dir.path().join(PERF_DATA));
    opts.duration = duration;
    opts.on_target = session::target_hook(req);
    opts.interval_us = req.knobs.u64("sampling-interval-us");
    opts.unwinding = Unwinding::FramePointers;
    // Data mappings name what holds an address.
    opts.data_mmaps = true;
    let mut tma = None;
    let (source, reason) = match chosen {
        Chosen::Registers(reason) => {
            sample_registers(&mut opts);
            (Source::Registers, reason)
        }
        Chosen::Pmu(plan, reason) => {
            opts.pmu_events = pmu_groups(&plan);
            dir.manifest_mut().notes.extend(plan.notes);
            let perfmon = req.knobs.get("perfmon");
            tma = Some(crate::tma_collect::groups(
                (!perfmon.is_empty()).then(|| Path::new(perfmon)),
            ));
            (Source::Pmu, reason)
        }
    };
    match allocation_tracking(req, &target, dir.path()) {
        Ok(env) => opts.env = env,
        Err(why) => dir.manifest_mut().notes.push(format!(
            "heap blocks are not named by allocation site: {why}"
        )),
    }
    let watching = start_watching(req, &target, source, &mut opts, &mut dir);
    crate::finish::remember_source(&mut dir, source, &reason);
    match tma {
        Some(Ok((groups, perfmon_dir))) => {
            opts.pmu_events.extend(groups);
            crate::finish::remember(&mut dir, "perfmon_dir", perfmon_dir.display().to_string());
        }
        Some(Err(why)) => crate::finish::remember(&mut dir, "memory_bound", why),
        None => {}
    }
    let numa = crate::numa::collect::Numa::start(req.knobs.get("numa"), &target, &mut opts)?;
    // `-m` over the default (the NUMA side may have raised it for its fault bursts).
    if let Some(pages) = req.mmap_pages {
        opts.ring_buffer_pages = pages;
    }
    opts.cpus = req.cpus.clone();
    session::save(&dir)?;
    let bandwidth = crate::bandwidth::start(req.knobs.get("perfmon"));
    let summary = record(req, &mut opts, &mut dir);
    crate::bandwidth::finish(&mut dir, bandwidth);
    // The sender goes first, so the decoder sees the end of the samples.
    drop(opts);
    let watched = watching.map(crate::watch::Watching::finish);
    crate::finish::finish(&mut dir, summary, req.quiet, watched, numa)
}

/// Address sampling: the cpu-clock timer with the user registers, user mode only (kernel
/// samples make no user access).
fn sample_registers(opts: &mut CollectOptions) {
    opts.event = EventChoice::CpuClock;
    opts.user_regs = kairos_x86_access::SAMPLE_REGS_MASK;
    opts.include_kernel = Some(false);
}

/// The watchpoint side, when `-k watchpoints=on` applies (it hears every sample); else
/// None, with a note when it was asked for in vain.
fn start_watching(
    req: &CollectRequest,
    target: &Target,
    source: Source,
    opts: &mut CollectOptions,
    dir: &mut ResultDir,
) -> Option<crate::watch::Watching> {
    match watchpoints(req, target, source) {
        Ok(true) => {
            let (tx, w) = crate::watch::start();
            opts.on_sample = Some(tx);
            Some(w)
        }
        Ok(false) => None,
        Err(why) => {
            dir.manifest_mut().notes.push(why);
            None
        }
    }
}

/// Records the program; when the PMU is busy and `-k source=auto` allows, records it
/// again with address sampling.
fn record(
    req: &CollectRequest,
    opts: &mut CollectOptions,
    dir: &mut ResultDir,
) -> Result<CollectSummary, CollectError> {
    let bar = session::spinner(req.quiet, "collecting");
    let mut progress = |p: &Progress| {
        bar.set_message(format!(
            "collecting: {} samples, {} KiB",
            p.samples,
            p.bytes / 1024
        ));
    };
    let mut summary = kairos_collector::collect(opts, &mut progress);
    if let Some(why) = busy_pmu(req.knobs.get("source"), &summary) {
        // The program never ran (the events open before it starts): run it again with
        // address sampling, and say why.
        dir.manifest_mut().notes.push(why.clone());
        crate::finish::remember_source(dir, Source::Registers, &why);
        opts.pmu_events.clear();
        sample_registers(opts);
        summary = kairos_collector::collect(opts, &mut progress);
    }
    bar.finish_and_clear();
    summary
}

/// With `-k source=auto`, PMU events another tool holds (EBUSY) are no reason to fail:
/// the sentence for falling back to address sampling, or None.
pub(crate) fn busy_pmu(
    knob: &str,
    r: &Result<kairos_collector::CollectSummary, CollectError>,
) -> Option<String> {
    match r {
        Err(CollectError::Pmu(PmuError::Refused { event, errno, .. })) if knob == "auto" && *errno == libc::EBUSY => Some(format!(
            "auto: the PMU's counters are taken by another tool (EBUSY on {event}: another profiler or the NMI watchdog holds them), so addresses come from address sampling instead, and remote accesses are estimated from page placement rather than read from the data source"
        )),
        _ => None,
    }
}

/// Whether `-k watchpoints=on` applies here, or the note saying why it is ignored.
fn watchpoints(req: &CollectRequest, target: &Target, source: Source) -> Result<bool, String> {
    if req.knobs.get("watchpoints") != "on" {
        return Ok(false);
    }
    if source == Source::Pmu {
        return Err("-k watchpoints=on is ignored: the PMU samples exact data addresses and HITM, watchpoints are not needed".into());
    }
    if matches!(target, Target::SystemWide) {
        return Err(
            "-k watchpoints=on is ignored with -a: watchpoints follow one process (launched or -p)"
                .into(),
        );
    }
    Ok(true)
}

/// The environment that preloads the allocation tracker into a launched program, or why
/// there is none (then objects fall back to static data and mappings).
fn allocation_tracking(
    req: &CollectRequest,
    target: &Target,
    result: &Path,
) -> Result<Vec<(OsString, OsString)>, String> {
    if req.knobs.get("track-allocations") == "off" {
        return Err("-k track-allocations=off".into());
    }
    let Target::Launch { program, .. } = target else {
        return Err(
            "the allocation tracker is preloaded into launched programs only (not with -p or -a)"
                .into(),
        );
    };
    kairos_analysis_memory_consumption::check_loadable(program, &program.display().to_string())
        .map_err(|e| e.to_string())?;
    let lib = kairos_analysis_memory_consumption::tracker_lib().map_err(|e| e.to_string())?;
    let raw = result.join(kairos_analysis_memory_consumption::RAW_DIR);
    std::fs::create_dir_all(&raw).map_err(|e| format!("cannot create {}: {e}", raw.display()))?;
    let mut preload = lib.into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(" ");
        preload.push(old);
    }
    Ok(vec![
        ("LD_PRELOAD".into(), preload),
        ("KAIROS_MEMTRACK_DIR".into(), raw.into_os_string()),
        ("KAIROS_MEMTRACK_MIN_SIZE".into(), "1".into()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_taken_by_another_tool_fall_back_with_a_sentence() {
        let busy = |errno| {
            Err(CollectError::Pmu(PmuError::Refused {
                event: "mem-loads".into(),
                errno,
                why: String::new(),
            }))
        };
        let why = busy_pmu("auto", &busy(libc::EBUSY)).unwrap_or_default();
        assert!(
            why.contains("EBUSY on mem-loads") && why.contains("address sampling"),
            "{why}"
        );
        // Asked for the PMU: the refusal stands (the collector's sentence says EBUSY).
        assert_eq!(busy_pmu("pmu", &busy(libc::EBUSY)), None);
        assert_eq!(busy_pmu("auto", &busy(libc::ENOENT)), None);
    }
}
