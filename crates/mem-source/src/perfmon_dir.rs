//! Finding the CPU's perfmon files (`data/perfmon` of the source tree, or a folder given
//! by the user) and loading its core events and TMA metrics.

use std::path::{Path, PathBuf};

use kairos_metrics::{load_perfmon, PerfmonMetric};

use crate::cpu::CpuId;
use crate::perfmon_events::PerfmonEvents;
use crate::tma::{events_file_for, metrics_file_for};

/// The environment variable naming a perfmon folder.
pub const ENV: &str = "KAIROS_PERFMON";

/// A CPU's event and metric definitions.
pub struct PerfmonFiles {
    pub dir: PathBuf,
    pub metrics: Vec<PerfmonMetric>,
    pub events: PerfmonEvents,
}

/// Where to look, best first: `given` (a knob), $KAIROS_PERFMON, `share/kairos/perfmon`
/// beside the binary's folder (an install), `data/perfmon` of the source tree the binary
/// was built in (target/release/kairos).
pub fn candidates(given: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = given.map(Path::to_path_buf).into_iter().collect();
    if let Some(d) = std::env::var_os(ENV) {
        out.push(PathBuf::from(d));
    }
    if let Some(bin_dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        out.push(bin_dir.join("../share/kairos/perfmon"));
        out.push(bin_dir.join("../../data/perfmon"));
    }
    out
}

/// The first folder of `dirs` with a mapfile.csv, and this CPU's files from it; else one
/// sentence saying what is missing and how to provide it.
pub fn load_for(cpu: &CpuId, dirs: &[PathBuf]) -> Result<PerfmonFiles, String> {
    let Some(dir) = dirs.iter().find(|d| d.join("mapfile.csv").is_file()) else {
        return Err(format!("no perfmon folder with a mapfile.csv (looked in {}); give one with -k perfmon=DIR or {ENV}", list(dirs)));
    };
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f)).map_err(|e| format!("{}: {e}", dir.join(f).display()))
    };
    let map = read("mapfile.csv")?;
    let key = cpu.mapfile_key();
    let (Some(mf), Some(ef)) = (metrics_file_for(&map, cpu), events_file_for(&map, cpu)) else {
        return Err(format!(
            "Intel's mapfile.csv in {} has no metric and core event files for this CPU ({key})",
            dir.display()
        ));
    };
    let missing = |f: &str| {
        format!("{f} for this CPU ({key}) is not in {}: copy it there from github.com/intel/perfmon, or give a folder with -k perfmon=DIR", dir.display())
    };
    if !dir.join(&mf).is_file() {
        return Err(missing(&mf));
    }
    if !dir.join(&ef).is_file() {
        return Err(missing(&ef));
    }
    let metrics =
        load_perfmon(&read(&mf)?).map_err(|e| format!("{}: {e}", dir.join(&mf).display()))?;
    let events = PerfmonEvents::load(&read(&ef)?)
        .map_err(|e| format!("{}: {e}", dir.join(&ef).display()))?;
    Ok(PerfmonFiles {
        dir: dir.clone(),
        metrics,
        events,
    })
}

fn list(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/perfmon")
    }

    #[test]
    fn the_shipped_folder_serves_its_three_cpus_and_names_the_others() {
        for id in [
            "GenuineIntel,6,85,4",
            "GenuineIntel,6,106,6",
            "GenuineIntel,6,143,8",
        ] {
            let cpu = CpuId::from_perf_cpuid(id).unwrap_or_else(|| panic!("{id}"));
            let f = load_for(&cpu, &[shipped()]).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(
                f.metrics.iter().any(|m| m.name == crate::tma::MEMORY_BOUND),
                "{id}"
            );
        }
        // Cascade Lake is in the mapfile, its files are not shipped.
        let clx = CpuId::from_perf_cpuid("GenuineIntel,6,85,7").unwrap_or_else(|| panic!("clx"));
        let e = load_for(&clx, &[shipped()]).err().unwrap_or_default();
        assert!(e.contains("CLX/") && e.contains("-k perfmon=DIR"), "{e}");
        let amd = CpuId::from_perf_cpuid("AuthenticAMD,25,17,1").unwrap_or_else(|| panic!("amd"));
        assert!(load_for(&amd, &[shipped()])
            .err()
            .unwrap_or_default()
            .contains("no metric and core event files"));
        let none = load_for(&clx, &[PathBuf::from("/nonexistent")])
            .err()
            .unwrap_or_default();
        assert!(
            none.contains("no perfmon folder") && none.contains("/nonexistent"),
            "{none}"
        );
    }
}
