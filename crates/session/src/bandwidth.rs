//! Memory bandwidth over a collection, for every analysis (kairos-bandwidth's recorder):
//! started before the program, stopped after it, kept as `bandwidth.json` with the host's
//! measured maximum; on a machine without bandwidth counters the file says why.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kairos_bandwidth::record::{Places, Recorder};
use kairos_bandwidth::timeline::Maximum;
use kairos_mem_source::perfmon_dir::candidates;
use kairos_mem_source::tma::events_file_for;
use kairos_mem_source::CpuId;

/// The tick of the timeline.
pub const TICK: Duration = Duration::from_millis(100);

/// The CPU's perfmon uncore event file: the mapfile row of type `uncore` for the same CPU
/// pattern as its core event file; or why there is none.
pub fn uncore_file(cpu: Option<&CpuId>, dirs: &[PathBuf]) -> Result<String, String> {
    let cpu = cpu.ok_or("/proc/cpuinfo does not say which CPU this is")?;
    if cpu.vendor == kairos_mem_source::Vendor::Amd {
        return amd_file(cpu, dirs);
    }
    intel_file(cpu, dirs, "uncore")
}

/// The CPU's `uncore experimental` file (events Intel has not validated, such as ICX's TOR
/// occupancy of ItoM writes), when the perfmon folder has it.
pub fn uncore_experimental_file(cpu: Option<&CpuId>, dirs: &[PathBuf]) -> Option<String> {
    let cpu = cpu.filter(|c| c.vendor != kairos_mem_source::Vendor::Amd)?;
    intel_file(cpu, dirs, "uncore experimental").ok()
}

/// The mapfile row of type `kind` for the same CPU pattern as the core event file.
fn intel_file(cpu: &CpuId, dirs: &[PathBuf], kind: &str) -> Result<String, String> {
    let Some(dir) = dirs.iter().find(|d| d.join("mapfile.csv").is_file()) else {
        return Err("no perfmon folder with a mapfile.csv (give one with -k perfmon=DIR)".into());
    };
    let map = std::fs::read_to_string(dir.join("mapfile.csv"))
        .map_err(|e| format!("{}: {e}", dir.join("mapfile.csv").display()))?;
    let key = cpu.mapfile_key();
    let core = events_file_for(&map, cpu)
        .ok_or_else(|| format!("the perfmon mapfile has no files for this CPU ({key})"))?;
    let cols = |l: &str| l.split(',').map(str::to_string).collect::<Vec<_>>();
    let pattern = map
        .lines()
        .map(cols)
        .find(|c| c.get(2).is_some_and(|f| f.trim_start_matches('/') == core))
        .and_then(|c| c.first().cloned())
        .unwrap_or_default();
    let file = map
        .lines()
        .map(cols)
        .find(|c| c.first() == Some(&pattern) && c.get(3).is_some_and(|t| t == kind))
        .and_then(|c| c.get(2).map(|f| f.trim_start_matches('/').to_string()))
        .ok_or_else(|| {
            format!("the perfmon mapfile lists no {kind} event file for this CPU ({key})")
        })?;
    std::fs::read_to_string(dir.join(&file))
        .map_err(|_| format!("{file} for this CPU ({key}) is not in {}: copy it there from github.com/intel/perfmon, or give a folder with -k perfmon=DIR", dir.display()))
}

/// AMD: the kernel's `amdzenN/data-fabric.json` (tools/perf/pmu-events/arch/x86) in one
/// of `dirs`.
fn amd_file(cpu: &CpuId, dirs: &[PathBuf]) -> Result<String, String> {
    let zen = kairos_bandwidth::amd::zen_dir(cpu.family, cpu.model).ok_or_else(|| {
        format!(
            "no data-fabric events are known for AMD family {:#x}",
            cpu.family
        )
    })?;
    let rel = format!("{zen}/data-fabric.json");
    dirs.iter().find_map(|d| std::fs::read_to_string(d.join(&rel)).ok()).ok_or_else(|| {
        format!("{rel} (the kernel's AMD event file, tools/perf/pmu-events/arch/x86/{zen}) is not in the perfmon folders; give a folder holding it with -k perfmon=DIR")
    })
}

/// Starts recording (`perfmon`: the `-k perfmon=` folder, empty for the default places).
pub fn start(perfmon: &str) -> Recorder {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| CpuId::from_cpuinfo(&t));
    let dirs = candidates((!perfmon.is_empty()).then(|| Path::new(perfmon)));
    let json = uncore_file(cpu.as_ref(), &dirs);
    // AMD Zen 4 and later: the memory controllers' own event file, preferred to the fabric.
    let umc = match cpu.as_ref() {
        Some(c) if c.vendor == kairos_mem_source::Vendor::Amd => {
            kairos_bandwidth::umc::memory_controller_file(c.family, c.model, &dirs)
        }
        _ => Err("not an AMD CPU".to_string()),
    };
    Recorder::start(
        kairos_bandwidth::record::open_with_umc(&Places::default(), json, umc),
        TICK,
    )
}

/// Stops recording and writes the timeline, with this host's maximum when it was measured;
/// a failure to write is a note. Returns the timeline when it was kept.
pub fn finish(
    dir: &mut kairos_result::ResultDir,
    rec: Recorder,
) -> Option<kairos_bandwidth::timeline::Timeline> {
    let mut t = rec.finish();
    t.maximum = stored_maximum(dir);
    match t.save(dir.path()) {
        Ok(()) => Some(t),
        Err(e) => {
            dir.manifest_mut()
                .notes
                .push(format!("the bandwidth timeline is not kept: {e}"));
            None
        }
    }
}

/// The maximum `kairos measure bandwidth` stored for the result's host (the manifest's,
/// which a collection sets at its start to this host).
fn stored_maximum(dir: &kairos_result::ResultDir) -> Option<Maximum> {
    let host = dir
        .manifest()
        .host
        .as_ref()
        .and_then(|h| h.name.clone())
        .unwrap_or_default();
    kairos_bandwidth::store::load(&host)
        .as_ref()
        .map(Maximum::of)
}

/// A result's timeline (None: collected before timelines were kept), with the result's
/// host's stored maximum when the collection had none yet.
pub fn load(
    dir: &kairos_result::ResultDir,
) -> Result<Option<kairos_bandwidth::timeline::Timeline>, String> {
    let Some(t) = kairos_bandwidth::timeline::Timeline::load(dir.path()) else {
        return Ok(None);
    };
    let mut t = t?;
    if t.maximum.is_none() {
        t.maximum = stored_maximum(dir);
    }
    Ok(Some(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perfmon() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/perfmon")
    }

    #[test]
    fn the_uncore_file_of_each_recorded_cpu_and_why_not() {
        for (id, name) in [
            ("GenuineIntel,6,85,4", "UNC_M_CAS_COUNT.RD"),
            ("GenuineIntel,6,106,6", "UNC_M_CAS_COUNT.RD"),
            ("GenuineIntel,6,143,8", "UNC_M_CAS_COUNT.RD"),
        ] {
            let cpu = CpuId::from_perf_cpuid(id);
            let text =
                uncore_file(cpu.as_ref(), &[perfmon()]).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(text.contains(name), "{id}");
        }
        // The files shipped in data/perfmon hold core events only: the sentence says where to get it.
        let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/perfmon");
        let why = uncore_file(
            CpuId::from_perf_cpuid("GenuineIntel,6,85,4").as_ref(),
            &[shipped],
        )
        .err()
        .unwrap_or_default();
        assert!(
            why.contains("SKX/events/skylakex_uncore.json for this CPU")
                && why.contains("-k perfmon=DIR"),
            "{why}"
        );
        assert!(uncore_file(None, &[perfmon()]).is_err());
        // AMD: the kernel's data-fabric file of the CPU's Zen generation.
        let zen3 = CpuId::from_perf_cpuid("AuthenticAMD,25,1,1");
        let text = uncore_file(zen3.as_ref(), &[perfmon().join("amd-linux-6.1")])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(text.contains("dram_channel_data_controller_0"));
        let why = uncore_file(zen3.as_ref(), &[perfmon()])
            .err()
            .unwrap_or_default();
        assert!(
            why.starts_with("amdzen3/data-fabric.json (the kernel's AMD event file"),
            "{why}"
        );
    }
}
