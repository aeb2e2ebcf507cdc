//! DRAM and socket-link bandwidth from uncore counters: which PMUs the machine has
//! (sysfs, or the PMU list a perf.data header recorded), which events of the CPU's perfmon
//! uncore file count it, and the formulas (Intel: CAS commands x 64 bytes per channel,
//! UPI data flits x 64/9 bytes per link). Values are per (PMU, CPU of its cpumask): one
//! CPU per socket.

use std::path::Path;

use serde::Deserialize;

/// An uncore PMU of the kernel: `uncore_imc_3`, type 16, counted on CPUs 0 and 28.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncorePmu {
    pub name: String,
    pub type_: u32,
    /// The PMU's cpumask: one CPU per socket (empty when unknown).
    pub cpus: Vec<u32>,
}

/// What a counter measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Flow {
    DramRead,
    DramWrite,
    /// DRAM reads and writes together (AMD's data fabric counts requests with data).
    DramAll,
    /// Data sent on a socket link.
    LinkTx,
}

/// One event to open on every CPU of its PMU's cpumask.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    pub pmu: String,
    pub type_: u32,
    pub config: u64,
    pub event: String,
    pub flow: Flow,
    /// Bytes per count.
    pub bytes_per_count: f64,
}

/// The PMUs of a sysfs `event_source/devices` folder whose name starts with `uncore_`.
pub fn discover(devices: &Path) -> Vec<UncorePmu> {
    let mut out: Vec<UncorePmu> = std::fs::read_dir(devices)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let type_ = std::fs::read_to_string(e.path().join("type"))
                .ok()?
                .trim()
                .parse()
                .ok()?;
            let cpus = std::fs::read_to_string(e.path().join("cpumask"))
                .ok()
                .and_then(|s| kairos_platform::numa::parse_cpulist(s.trim()))
                .unwrap_or_default();
            name.starts_with("uncore_")
                .then_some(UncorePmu { name, type_, cpus })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The PMUs of a perf.data header's `pmu mappings` (name, type); no cpumask there.
pub fn from_mappings(list: &[(String, u32)]) -> Vec<UncorePmu> {
    let mut out: Vec<UncorePmu> = list
        .iter()
        .filter(|(n, _)| n.starts_with("uncore_"))
        .map(|(n, t)| UncorePmu {
            name: n.clone(),
            type_: *t,
            cpus: Vec::new(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "Events")]
    events: Vec<UncoreEvent>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UncoreEvent {
    event_name: String,
    event_code: String,
    #[serde(rename = "UMask")]
    umask: String,
    #[serde(rename = "UMaskExt", default)]
    umask_ext: Option<String>,
}

fn hex(s: &str) -> Option<u64> {
    let s = s.trim();
    u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
}

/// (event name, PMU name prefix, flow, bytes per count).
const WANTED: [(&str, &str, Flow, f64); 3] = [
    ("UNC_M_CAS_COUNT.RD", "uncore_imc_", Flow::DramRead, 64.0),
    ("UNC_M_CAS_COUNT.WR", "uncore_imc_", Flow::DramWrite, 64.0),
    // Intel's formula (the perfmon metric files' UPI data bandwidth): data flits x 64/9 bytes.
    (
        "UNC_UPI_TxL_FLITS.ALL_DATA",
        "uncore_upi_",
        Flow::LinkTx,
        64.0 / 9.0,
    ),
];

/// The counters for DRAM and link bandwidth, from the PMUs and the CPU's perfmon uncore
/// event file; or why there are none.
pub fn plan(pmus: &[UncorePmu], uncore_json: &str) -> Result<Vec<Counter>, String> {
    if !pmus.iter().any(|p| p.name.starts_with("uncore_imc_")) {
        let have: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
        return Err(if have.is_empty() {
            "no uncore PMUs (a virtual machine exposes none)".into()
        } else {
            format!("no uncore_imc PMU among {}", have.join(" "))
        });
    }
    let file: File = serde_json::from_str(uncore_json)
        .map_err(|e| format!("the perfmon uncore file is not perfmon JSON: {e}"))?;
    let mut out = Vec::new();
    for (name, prefix, flow, bytes) in WANTED {
        let Some(e) = file.events.iter().find(|e| e.event_name == name) else {
            if flow == Flow::LinkTx {
                continue;
            }
            return Err(format!("the perfmon uncore file has no {name}"));
        };
        let (code, umask) = (
            hex(&e.event_code).ok_or(format!("{name}: bad EventCode"))?,
            hex(&e.umask).ok_or(format!("{name}: bad UMask"))?,
        );
        let ext = e.umask_ext.as_deref().and_then(hex).unwrap_or(0);
        // The uncore format: event 0-7, umask 8-15, umask_ext from bit 32 (SPR's imc).
        let config = code & 0xff | (umask & 0xff) << 8 | ext << 32;
        for p in pmus.iter().filter(|p| {
            p.name.starts_with(prefix) && p.name[prefix.len()..].chars().all(|c| c.is_ascii_digit())
        }) {
            out.push(Counter {
                pmu: p.name.clone(),
                type_: p.type_,
                config,
                event: name.into(),
                flow,
                bytes_per_count: bytes,
            });
        }
    }
    Ok(out)
}

/// What this machine has, in one sentence: the DRAM and link PMUs found, or why none.
pub fn describe(pmus: &[UncorePmu]) -> String {
    let count = |p: &str| pmus.iter().filter(|x| x.name.starts_with(p)).count();
    match (count("uncore_imc_"), count("uncore_upi_")) {
        (0, _) => plan(pmus, "{}").err().unwrap_or_default(),
        (imc, upi) => format!("{imc} memory-controller PMUs (uncore_imc) and {upi} socket-link PMUs (uncore_upi): DRAM read/write = CAS x 64 bytes, link = data flits x 64/9 bytes"),
    }
}

/// Bytes a second per (socket, flow) from one interval's count deltas: `deltas[i]` is
/// `(counter index, socket, count)`.
pub fn rates(
    counters: &[Counter],
    deltas: &[(usize, u32, u64)],
    seconds: f64,
) -> std::collections::BTreeMap<(u32, Flow), f64> {
    let mut out = std::collections::BTreeMap::new();
    for &(i, socket, count) in deltas {
        let Some(c) = counters.get(i) else { continue };
        *out.entry((socket, c.flow)).or_insert(0.0) +=
            count as f64 * c.bytes_per_count / seconds.max(1e-9);
    }
    out
}

/// PMU name prefix the kernel gives AMD's memory controllers (`amd_umc_N`); here, below
/// the AMD modules that read those PMUs, because channels are named from it too.
pub const UMC_PREFIX: &str = "amd_umc_";

/// The memory channel a counter's PMU stands for: Intel has one `uncore_imc_N` PMU per
/// channel (N numbers the channels of each socket alike), AMD one `amd_umc_N` per memory
/// controller (N numbers them across the sockets: the channel keeps the PMU's number);
/// None for other PMUs.
pub fn channel_of(c: &Counter) -> Option<u32> {
    c.pmu
        .strip_prefix("uncore_imc_")
        .or_else(|| c.pmu.strip_prefix(UMC_PREFIX))?
        .parse()
        .ok()
}

/// Bytes a second per (socket, channel, flow), for the DRAM counters that are per channel.
pub fn channel_rates(
    counters: &[Counter],
    deltas: &[(usize, u32, u64)],
    seconds: f64,
) -> std::collections::BTreeMap<(u32, u32, Flow), f64> {
    let mut out = std::collections::BTreeMap::new();
    for &(i, socket, count) in deltas {
        let Some((c, ch)) = counters.get(i).and_then(|c| Some((c, channel_of(c)?))) else {
            continue;
        };
        *out.entry((socket, ch, c.flow)).or_insert(0.0) +=
            count as f64 * c.bytes_per_count / seconds.max(1e-9);
    }
    out
}

#[cfg(test)]
#[path = "counters_tests.rs"]
mod tests;
