//! AMD's Unified Memory Controller PMUs as a bandwidth source: Linux 6.7 and later register
//! one `amd_umc_N` PMU per memory controller (one per DRAM channel) on CPUs with
//! PerfMonV2 (Zen 4 and later). Each PMU's `cpumask` names the one CPU of its socket that
//! counts for it, and its `format/` files say where each field goes in `config`. The events
//! come from the kernel's `amdzenN/memory-controller.json` (Unit `UMCPMC`): CAS commands
//! for reads and for writes (`umc_cas_cmd.rd`, `.wr`: `EventCode` and `RdWrMask`), each
//! moving 64 bytes, as the kernel's own metrics (`umc_mem_read_bandwidth`,
//! `umc_mem_write_bandwidth` in `recommended.json`) count them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::counters::{Counter, Flow, UncorePmu};

/// PMU name prefix the kernel gives the memory controllers.
pub use crate::counters::UMC_PREFIX as PREFIX;

/// One `amd_umc_N` PMU: its number, type and cpumask, and its format (field name to the
/// kernel's spec, `event` -> `config:0-7`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UmcPmu {
    pub index: u32,
    pub pmu: UncorePmu,
    pub format: BTreeMap<String, String>,
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The `amd_umc_N` PMUs of a sysfs `event_source/devices` folder, in the order of N.
pub fn discover(devices: &Path) -> Vec<UmcPmu> {
    let mut out: Vec<UmcPmu> = std::fs::read_dir(devices)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let index = name.strip_prefix(PREFIX)?.parse().ok()?;
            let dir = e.path();
            let type_ = read_trim(&dir.join("type"))?.parse().ok()?;
            let cpus = read_trim(&dir.join("cpumask"))
                .and_then(|s| kairos_platform::numa::parse_cpulist(&s))
                .unwrap_or_default();
            let format = std::fs::read_dir(dir.join("format"))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .filter_map(|f| {
                    let spec = read_trim(&f.path())?;
                    Some((f.file_name().to_string_lossy().into_owned(), spec))
                })
                .collect();
            Some(UmcPmu {
                index,
                pmu: UncorePmu { name, type_, cpus },
                format,
            })
        })
        .collect();
    out.sort_by_key(|p| p.index);
    out
}

/// The bit ranges of a format spec in `config` (`config:0-7,32-35`; a lone bit is `config:46`).
fn ranges(spec: &str) -> Result<Vec<(u32, u32)>, String> {
    let bits = spec
        .strip_prefix("config:")
        .ok_or_else(|| format!("`{spec}` is not in config (only config is supported)"))?;
    bits.split(',')
        .map(|r| {
            let (lo, hi) = r.split_once('-').unwrap_or((r, r));
            match (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()) {
                (Ok(lo), Ok(hi)) if lo <= hi && hi < 64 => Ok((lo, hi)),
                _ => Err(format!("`{spec}` is not a bit range")),
            }
        })
        .collect()
}

/// `value` spread over the ranges of the PMU's `field`, lowest bits first, as perf does;
/// an error when the field is absent or the value does not fit.
fn place(pmu: &UmcPmu, field: &str, value: u64) -> Result<u64, String> {
    let spec = pmu.format.get(field).ok_or_else(|| {
        format!(
            "{} has no format/{field} (a kernel older than the memory-controller support?)",
            pmu.pmu.name
        )
    })?;
    let (mut config, mut rest) = (0u64, value);
    for (lo, hi) in ranges(spec)? {
        let width = hi - lo + 1;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1 << width) - 1
        };
        config |= (rest & mask) << lo;
        rest = rest.checked_shr(width).unwrap_or(0);
    }
    if rest != 0 {
        return Err(format!(
            "{field} {value:#x} does not fit {}'s `{spec}`",
            pmu.pmu.name
        ));
    }
    Ok(config)
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Event {
    event_name: String,
    #[serde(default)]
    event_code: String,
    #[serde(default)]
    rd_wr_mask: Option<String>,
    #[serde(default)]
    unit: String,
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// (event name, flow): CAS commands for reads and for writes.
const WANTED: [(&str, Flow); 2] = [
    ("umc_cas_cmd.rd", Flow::DramRead),
    ("umc_cas_cmd.wr", Flow::DramWrite),
];

/// Bytes a CAS command moves: one 64-byte line (the kernel's metrics multiply by 64).
const BYTES_PER_CAS: f64 = 64.0;

/// The read and write counters of every memory controller, from the kernel's
/// `memory-controller.json` and each PMU's format; or why there are none.
pub fn plan_umc(pmus: &[UmcPmu], json: &str) -> Result<Vec<Counter>, String> {
    if pmus.is_empty() {
        return Err("no amd_umc PMUs (Linux 6.7 or later on Zen 4 or later has them)".into());
    }
    let events: Vec<Event> = serde_json::from_str(json)
        .map_err(|e| format!("the memory-controller file is not the kernel's event JSON: {e}"))?;
    let mut out = Vec::new();
    for (name, flow) in WANTED {
        let e = events
            .iter()
            .find(|e| e.event_name == name && e.unit == "UMCPMC")
            .ok_or_else(|| format!("the memory-controller file has no {name}"))?;
        let code = hex(&e.event_code).ok_or(format!("{name}: bad EventCode"))?;
        let rdwr = match &e.rd_wr_mask {
            Some(m) => hex(m).ok_or(format!("{name}: bad RdWrMask"))?,
            None => 0,
        };
        for p in pmus {
            out.push(Counter {
                pmu: p.pmu.name.clone(),
                type_: p.pmu.type_,
                config: place(p, "event", code)? | place(p, "rdwrmask", rdwr)?,
                event: name.into(),
                flow,
                bytes_per_count: BYTES_PER_CAS,
            });
        }
    }
    Ok(out)
}

/// The AMD plan when memory controllers exist: their reads and writes per channel (more
/// than the data fabric says, which counts both together and not per channel in our
/// timeline), with the data fabric's socket-link counters added when its file plans; when
/// the memory controllers cannot be planned, the data fabric alone, else both reasons.
pub fn plan_amd(
    umc: &[UmcPmu],
    umc_json: Result<String, String>,
    df: Option<&UncorePmu>,
    df_json: Result<String, String>,
) -> Result<Vec<Counter>, String> {
    let df_plan = || match df {
        Some(df) => df_json.and_then(|j| crate::amd::plan_df(df, &j)),
        None => Err("no amd_df PMU".to_string()),
    };
    match umc_json.and_then(|j| plan_umc(umc, &j)) {
        Ok(mut counters) => {
            let links = df_plan().unwrap_or_default();
            counters.extend(links.into_iter().filter(|c| c.flow == Flow::LinkTx));
            Ok(counters)
        }
        Err(why_umc) => df_plan()
            .map_err(|why_df| format!("memory controllers: {why_umc}; data fabric: {why_df}")),
    }
}

/// The folder of the kernel's AMD event files that holds `memory-controller.json` for a
/// CPU, as the kernel's x86 mapfile assigns them: family 19h's Zen 4 models, family 1Ah
/// (amdzen5; models 50h-57h amdzen6, the kernel's Zen 6 files). Zen 3 and older have no UMC PMU.
pub fn zen_dir(family: u32, model: u32) -> Option<&'static str> {
    match (family, model) {
        (0x19, m) => crate::amd::zen_dir(0x19, m).filter(|d| *d == "amdzen4"),
        (0x1a, 0x50..=0x57) => Some("amdzen6"),
        (0x1a, _) => Some("amdzen5"),
        _ => None,
    }
}

/// The kernel's `amdzenN/memory-controller.json` for an AMD CPU in one of `dirs`.
pub fn memory_controller_file(family: u32, model: u32, dirs: &[PathBuf]) -> Result<String, String> {
    let zen = zen_dir(family, model).ok_or_else(|| {
        format!("no memory-controller events are known for AMD family {family:#x} model {model:#x}")
    })?;
    let rel = format!("{zen}/memory-controller.json");
    dirs.iter().find_map(|d| std::fs::read_to_string(d.join(&rel)).ok()).ok_or_else(|| {
        format!("{rel} (the kernel's AMD event file, tools/perf/pmu-events/arch/x86/{zen}) is not in the perfmon folders; give a folder holding it with -k perfmon=DIR")
    })
}

/// What `kairos info` says of the memory controllers found.
pub fn describe(pmus: &[UmcPmu]) -> String {
    format!("AMD memory controllers ({} amd_umc PMUs): DRAM reads and writes per channel = CAS commands x 64 bytes; needs the kernel's amdzenN/memory-controller.json in the perfmon folder", pmus.len())
}

#[cfg(test)]
#[path = "umc_tests.rs"]
mod tests;
