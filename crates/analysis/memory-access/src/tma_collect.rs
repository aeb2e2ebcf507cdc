//! Recording the memory-bound (TMA) counters next to the PMU memory samples, and turning
//! them into `memory_bound.json` once the recording is converted (see [`crate::tma`]).

use std::path::{Path, PathBuf};

use kairos_collector::pmu::{PmuEvent, PmuGroup, PmuSampling};
use kairos_mem_source::choice::DEVICES;
use kairos_mem_source::perfmon_dir::{candidates, load_for};
use kairos_mem_source::perfmon_events::{Encoded, Kind};
use kairos_mem_source::tma::{availability, plan, recording_name};
use kairos_model::Profile;
use kairos_result::ResultDir;
use perf_event_open_sys::bindings as b;
use serde_json::json;

use crate::tma::{analyse, MemoryBoundResult, FILE};

/// General-purpose counters a group may take: 4 per thread on Intel's big cores with
/// Hyper-Threading (8 without); 4 fits both.
const GP_COUNTERS: usize = 4;

/// Slices of the run in the timeline.
const INTERVALS: usize = 50;

/// The counter groups to record, or why there are none (a sentence for the result's
/// `Memory bound` line). `perfmon`: the folder the user gave, if any.
pub(crate) fn groups(perfmon: Option<&Path>) -> Result<(Vec<PmuGroup>, PathBuf), String> {
    let cpu = crate::cpu::this_cpu();
    availability(Path::new(DEVICES), cpu.as_ref())
        .map_err(|r| format!("unavailable: {}", r.reason))?;
    let cpu = cpu.ok_or("unavailable: /proc/cpuinfo does not say which CPU this is")?;
    let files = load_for(&cpu, &candidates(perfmon)).map_err(|e| format!("not measured: {e}"))?;
    let planned = plan(&files.metrics, &files.events, GP_COUNTERS)
        .map_err(|e| format!("not measured: {e}"))?;
    let core = HybridCore::read(Path::new(DEVICES));
    let groups = planned
        .iter()
        .enumerate()
        .map(|(g, p)| PmuGroup {
            leader: None,
            event: event(g, &p.leader, PmuSampling::Period(p.period), core.as_ref()),
            members: p
                .members
                .iter()
                .map(|m| event(g, m, PmuSampling::Count, core.as_ref()))
                .collect(),
            optional: true,
            cpus: core.as_ref().and_then(|c| c.cpus.clone()),
        })
        .collect();
    Ok((groups, files.dir))
}

/// A hybrid CPU's big-core PMU (`cpu_core`): the perfmon files describe the big cores, so
/// the groups go to that PMU's type and CPUs only. None on other CPUs (one `cpu` PMU).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HybridCore {
    type_: u32,
    cpus: Option<Vec<u32>>,
}

impl HybridCore {
    fn read(devices: &Path) -> Option<HybridCore> {
        let p = kairos_mem_source::sysfs::read_pmu(devices, "cpu_core").ok()??;
        Some(HybridCore {
            type_: p.type_,
            cpus: p.cpus,
        })
    }
}

/// Generic hardware events name their PMU in the config's upper half (the kernel's
/// extended type, PERF_PMU_TYPE_SHIFT).
const PMU_TYPE_SHIFT: u32 = 32;

fn event(group: usize, e: &Encoded, sampling: PmuSampling, core: Option<&HybridCore>) -> PmuEvent {
    // The `cpu` PMU's type is PERF_TYPE_RAW for its raw encodings, slots and topdown too;
    // a hybrid CPU's `cpu_core` has a type of its own.
    let (type_, config) = match (e.kind == Kind::Hardware, core) {
        (true, None) => (b::PERF_TYPE_HARDWARE, e.config),
        (true, Some(c)) => (
            b::PERF_TYPE_HARDWARE,
            e.config | (u64::from(c.type_) << PMU_TYPE_SHIFT),
        ),
        (false, None) => (b::PERF_TYPE_RAW, e.config),
        (false, Some(c)) => (c.type_, e.config),
    };
    PmuEvent {
        name: recording_name(group, &e.name),
        type_,
        config,
        config1: e.config1,
        config2: 0,
        config3: 0,
        precise_ip: 0,
        precise_min: 0,
        // The leader's stack gives the function; members need nothing of their own.
        sample_type: (b::PERF_SAMPLE_IP
            | b::PERF_SAMPLE_TID
            | b::PERF_SAMPLE_TIME
            | b::PERF_SAMPLE_CALLCHAIN) as u64,
        sampling,
        no_exclude: false,
    }
}

/// After the conversion: the figures of the recorded counters into `memory_bound.json`,
/// and the manifest's sentence when there are none. Results without TMA events are left
/// as they are.
pub(crate) fn record(dir: &mut ResultDir, profile: &Profile) {
    let extra = dir
        .manifest()
        .extra
        .get(crate::manifest_key::EXTRA)
        .cloned()
        .unwrap_or_default();
    let given = extra["perfmon_dir"].as_str().map(PathBuf::from);
    let Some(cpu) = crate::cpu::this_cpu() else {
        return;
    };
    let files = match load_for(&cpu, &candidates(given.as_deref())) {
        Ok(f) => f,
        Err(e) => {
            if has_tma_events(profile) {
                set_status(dir, format!("not computed: {e}"));
            }
            return;
        }
    };
    match analyse(
        profile,
        &files.metrics,
        &crate::tma::constants_here(),
        INTERVALS,
    ) {
        None => {}
        Some(Ok(r)) => {
            match serde_json::to_vec_pretty(&r).map(|j| std::fs::write(dir.path().join(FILE), j)) {
                Ok(Ok(())) => set_status(dir, sentence(&r)),
                Ok(Err(e)) => set_status(dir, format!("not saved: cannot write {FILE}: {e}")),
                Err(e) => set_status(dir, format!("not saved: {e}")),
            }
        }
        Some(Err(e)) => set_status(dir, format!("not computed: {e}")),
    }
}

fn has_tma_events(p: &Profile) -> bool {
    p.events
        .iter()
        .any(|e| kairos_mem_source::tma::parse_recording_name(&e.name).is_some())
}

fn set_status(dir: &mut ResultDir, s: String) {
    if let Some(extra) = dir.manifest_mut().extra.get_mut(crate::manifest_key::EXTRA) {
        extra["memory_bound"] = json!(s);
    }
}

/// The recipe's first sentence: "memory bound: 42% of the CPU's resources wait for memory".
pub fn sentence(r: &MemoryBoundResult) -> String {
    let split: Vec<String> = r
        .overall
        .split
        .iter()
        .map(|(n, v)| format!("{} {v:.1}%", n.trim_end_matches("_Bound")))
        .collect();
    format!(
        "{:.1}% of pipeline slots wait for memory (of clocks: {}){}",
        r.overall.memory_bound,
        split.join(", "),
        if r.groups > 1 {
            format!(
                "; {} counter groups counted in turn, each scaled by its own cycles",
                r.groups
            )
        } else {
            String::new()
        }
    )
}

/// The figures of a result, when it has them.
pub fn load(dir: &Path) -> Option<MemoryBoundResult> {
    serde_json::from_slice(&std::fs::read(dir.join(FILE)).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_groups_go_to_the_big_cores_pmu() {
        let t = std::env::temp_dir().join(format!("kairos-tma-hybrid-{}", std::process::id()));
        std::fs::create_dir_all(t.join("cpu_core")).ok();
        std::fs::write(t.join("cpu_core/type"), "8\n").ok();
        std::fs::write(t.join("cpu_core/cpus"), "0-15\n").ok();
        let core = HybridCore::read(&t);
        std::fs::remove_dir_all(&t).ok();
        assert_eq!(
            core,
            Some(HybridCore {
                type_: 8,
                cpus: Some((0..16).collect())
            })
        );
        let raw = Encoded {
            name: "MEM_LOAD_RETIRED.L1_MISS".into(),
            kind: Kind::Raw,
            config: 0x8d1,
            config1: 0,
            fixed: false,
        };
        let cycles = Encoded {
            name: "CPU_CLK_UNHALTED.THREAD".into(),
            kind: Kind::Hardware,
            config: 0,
            config1: 0,
            fixed: true,
        };
        let (r, c) = (
            event(0, &raw, PmuSampling::Count, core.as_ref()),
            event(0, &cycles, PmuSampling::Count, core.as_ref()),
        );
        assert_eq!((r.type_, r.config), (8, 0x8d1));
        assert_eq!((c.type_, c.config), (b::PERF_TYPE_HARDWARE, 8 << 32));
        // One `cpu` PMU: the generic types.
        let r = event(0, &raw, PmuSampling::Count, None);
        assert_eq!((r.type_, r.config), (b::PERF_TYPE_RAW, 0x8d1));
    }
}
