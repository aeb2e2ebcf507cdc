//! AMD's data fabric (the kernel's `amd_df` PMU) as a bandwidth source, from the kernel's
//! AMD event files (`amdzenN/data-fabric.json`): each DRAM channel controller's "requests
//! with data" (64 bytes each, reads and writes together) and each remote link controller's
//! outbound data packets (32 bytes each).

use std::path::Path;

use serde::Deserialize;

use crate::counters::{Counter, Flow, UncorePmu};

/// The `amd_df` PMU of a sysfs `event_source/devices` folder, if the kernel has one.
pub fn df_pmu(devices: &Path) -> Option<UncorePmu> {
    let d = devices.join("amd_df");
    let type_ = std::fs::read_to_string(d.join("type"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cpus = std::fs::read_to_string(d.join("cpumask"))
        .ok()
        .and_then(|s| kairos_platform::numa::parse_cpulist(s.trim()))
        .unwrap_or_default();
    Some(UncorePmu {
        name: "amd_df".into(),
        type_,
        cpus,
    })
}

/// The folder of the kernel's AMD event files for a CPU, as the kernel's x86 mapfile
/// assigns them (family 17h: Zen 1 below model 30h, Zen 2 from it; family 19h: Zen 3 for
/// models 00-0Fh and 20-5Fh, Zen 4 for the others).
pub fn zen_dir(family: u32, model: u32) -> Option<&'static str> {
    match (family, model) {
        (0x17, m) if m < 0x30 => Some("amdzen1"),
        (0x17, _) => Some("amdzen2"),
        (0x19, m) if m < 0x10 || (0x20..0x60).contains(&m) => Some("amdzen3"),
        (0x19, _) => Some("amdzen4"),
        _ => None,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    event_name: String,
    #[serde(default)]
    event_code: String,
    #[serde(rename = "UMask", default)]
    umask: String,
    #[serde(default)]
    unit: String,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// The data-fabric counters of a `data-fabric.json` file, on `pmu`.
pub fn plan_df(pmu: &UncorePmu, json: &str) -> Result<Vec<Counter>, String> {
    let events: Vec<Event> = serde_json::from_str(json)
        .map_err(|e| format!("the data-fabric file is not the kernel's event JSON: {e}"))?;
    let mut out = Vec::new();
    for e in events.iter().filter(|e| e.unit == "DFPMC") {
        let (flow, bytes) = if e.event_name.starts_with("dram_channel_data_controller_") {
            (Flow::DramAll, 64.0)
        } else if e.event_name.starts_with("remote_outbound_data_controller_") {
            (Flow::LinkTx, 32.0)
        } else {
            continue;
        };
        let code = hex(&e.event_code).ok_or(format!("{}: bad EventCode", e.event_name))?;
        let umask = hex(&e.umask).ok_or(format!("{}: bad UMask", e.event_name))?;
        // amd_df's format: event bits 0-7 in config 0-7 and bits 8-11 in config 32-35, umask 8-15.
        let config = (code & 0xff) | ((code >> 8) & 0xf) << 32 | (umask & 0xff) << 8;
        out.push(Counter {
            pmu: pmu.name.clone(),
            type_: pmu.type_,
            config,
            event: e.event_name.clone(),
            flow,
            bytes_per_count: bytes,
        });
    }
    if !out.iter().any(|c| c.flow == Flow::DramAll) {
        return Err("the data-fabric file has no dram_channel_data_controller events".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(zen: &str) -> String {
        let shared = std::env::var_os("KAIROS_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
        let p = shared
            .join("fixtures/perfmon/amd-linux-6.1")
            .join(zen)
            .join("data-fabric.json");
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn zen2_and_zen3_channels_and_links_from_the_kernels_files() {
        let pmu = UncorePmu {
            name: "amd_df".into(),
            type_: 11,
            cpus: vec![0],
        };
        for zen in ["amdzen2", "amdzen3"] {
            let plan = plan_df(&pmu, &file(zen)).unwrap_or_else(|e| panic!("{zen}: {e}"));
            let dram: Vec<&Counter> = plan.iter().filter(|c| c.flow == Flow::DramAll).collect();
            let links: Vec<&Counter> = plan.iter().filter(|c| c.flow == Flow::LinkTx).collect();
            // Eight channel controllers and four remote links, as in the files.
            assert_eq!((dram.len(), links.len()), (8, 4), "{zen}");
            // dram_channel_data_controller_0: EventCode 0x07, UMask 0x38.
            assert_eq!(dram[0].config, 0x3807, "{zen}");
            // dram_channel_data_controller_4: EventCode 0x107.
            assert_eq!(dram[4].config, 0x1_0000_3807, "{zen}");
            // remote_outbound_data_controller_0: EventCode 0x7c7 (bits 8-11 go to config 32-35), UMask 0x02.
            assert_eq!(links[0].config, 0x7_0000_02c7, "{zen}");
            assert!(
                dram.iter()
                    .all(|c| c.bytes_per_count == 64.0 && c.type_ == 11)
                    && links.iter().all(|c| c.bytes_per_count == 32.0)
            );
        }
        assert!(plan_df(&pmu, "[]").is_err());
        assert!(plan_df(&pmu, "{").is_err());
    }

    #[test]
    fn cpu_to_folder_and_a_pmu_from_sysfs() {
        assert_eq!(zen_dir(0x17, 0x31), Some("amdzen2"));
        assert_eq!(zen_dir(0x19, 0x01), Some("amdzen3"));
        assert_eq!(zen_dir(0x19, 0x11), Some("amdzen4"));
        assert_eq!(zen_dir(6, 85), None);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(df_pmu(dir.path()), None);
        let d = dir.path().join("amd_df");
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("type"), "11\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(d.join("cpumask"), "0,64\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            df_pmu(dir.path()),
            Some(UncorePmu {
                name: "amd_df".into(),
                type_: 11,
                cpus: vec![0, 64]
            })
        );
    }
}
