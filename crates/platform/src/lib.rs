//! What this machine can measure: PMU, LBR, PEBS/IBS, uncore, resctrl, hugetlbfs,
//! perf_event_paranoid.
//!
//! [`detect`] looks at /proc, /sys and a few perf_event_open experiments and returns one
//! [`Capability`] per feature: found or not, what was found, and, when missing, why in
//! plain words. [`detect_with`] does the same from another root directory and recorded
//! probe answers, which is how the tests feed files recorded on other machines.
//! Nothing here panics or changes the system (no mounts, no writes).

pub mod devices;
mod hardware_caps;
pub mod kconfig;
mod kernel_caps;
mod memory_sources;
pub mod numa;
pub mod parse;
mod perf_header;
pub mod probe;
mod probe_outcome;
pub mod resctrl_support;
pub mod sockets;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use devices::{Device, DeviceKind, Link, NodeSource};
pub use parse::{CpuInfo, Mount, Privileges};
pub use perf_header::{header_nodes, HeaderNode};
pub use probe::{LiveProber, PerfProbe, Prober};
pub use probe_outcome::ProbeOutcome;
pub use sockets::{Platform, PlatformError, Socket, PLATFORM_FILE};

/// One feature and whether this machine has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capability {
    /// Stable key, e.g. `hardware_pmu`, `lbr`, `hugepages_2m` (see [`names`]).
    pub name: String,
    pub available: bool,
    /// What was found.
    pub detail: String,
    /// Why it is missing (or what limits it), in plain words; `None` when available
    /// without reservation.
    pub reason: Option<String>,
}

/// Stable capability keys, in report order.
pub mod names {
    pub const CPU: &str = "cpu";
    pub const HARDWARE_PMU: &str = "hardware_pmu";
    pub const CPU_CLOCK: &str = "cpu_clock";
    pub const LBR: &str = "lbr";
    pub const LBR_CYCLES: &str = "lbr_cycles";
    pub const PEBS: &str = "pebs";
    pub const IBS: &str = "ibs";
    pub const ADDRESS_SAMPLING: &str = "address_sampling";
    pub const TMA_COUNTERS: &str = "tma_counters";
    pub const WATCHPOINTS: &str = "watchpoints";
    pub const UNCORE: &str = "uncore";
    pub const TRACEPOINTS: &str = "tracepoints";
    pub const UPROBES: &str = "uprobes";
    pub const EBPF_BTF: &str = "ebpf_btf";
    pub const RESCTRL: &str = "resctrl";
    pub const HUGETLBFS: &str = "hugetlbfs";
    pub const HUGEPAGES_2M: &str = "hugepages_2m";
    pub const HUGEPAGES_1G: &str = "hugepages_1g";
    pub const THP: &str = "thp";
    pub const PERF_EVENT_PARANOID: &str = "perf_event_paranoid";
    pub const KPTR_RESTRICT: &str = "kptr_restrict";
    pub const MAX_SAMPLE_RATE: &str = "perf_event_max_sample_rate";
    pub const GLIBC: &str = "glibc";
    pub const NUMA_PLACEMENT: &str = "numa_placement";
}

/// Everything [`detect`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    pub cpu: CpuInfo,
    pub privileges: Privileges,
    /// LBR depth when the LBR is usable (from caps/branches or the CPU's documented depth).
    pub lbr_depth: Option<u32>,
    pub perf_event_paranoid: Option<i32>,
    pub perf_event_max_sample_rate: Option<u64>,
    pub items: Vec<Capability>,
}

impl Capabilities {
    pub fn get(&self, name: &str) -> Option<&Capability> {
        self.items.iter().find(|c| c.name == name)
    }

    pub fn is_available(&self, name: &str) -> bool {
        self.get(name).is_some_and(|c| c.available)
    }

    pub fn to_json_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Pretty JSON of the whole structure.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// An aligned table: capability, yes/no, and what was found / why missing.
    pub fn render_text(&self) -> String {
        let w = self
            .items
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(0)
            .max("capability".len());
        let mut out = String::new();
        out.push_str(&format!(
            "{:<w$}  {:<6} {}\n",
            "capability", "status", "detail / why"
        ));
        out.push_str(&format!(
            "{:<w$}  {:<6} {}\n",
            "-".repeat(w),
            "------",
            "-".repeat(12)
        ));
        let indent = " ".repeat(w + 2 + 7);
        for c in &self.items {
            let status = if c.available { "yes" } else { "no" };
            out.push_str(&format!("{:<w$}  {:<6} {}\n", c.name, status, c.detail));
            if let Some(r) = &c.reason {
                let label = if c.available { "note" } else { "why" };
                out.push_str(&format!("{indent}{label}: {r}\n"));
            }
        }
        out
    }
}

/// Where /proc and /sys are. [`SystemRoot::live`] is the running system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemRoot {
    pub proc_dir: PathBuf,
    pub sys_dir: PathBuf,
}

impl SystemRoot {
    pub fn live() -> Self {
        SystemRoot {
            proc_dir: PathBuf::from("/proc"),
            sys_dir: PathBuf::from("/sys"),
        }
    }

    /// A recorded tree with `proc/` and `sys/` below `root`.
    pub fn under(root: impl AsRef<Path>) -> Self {
        SystemRoot {
            proc_dir: root.as_ref().join("proc"),
            sys_dir: root.as_ref().join("sys"),
        }
    }

    fn proc(&self, rel: &str) -> PathBuf {
        self.proc_dir.join(rel)
    }
    fn sys(&self, rel: &str) -> PathBuf {
        self.sys_dir.join(rel)
    }
    fn read_proc(&self, rel: &str) -> Option<String> {
        read(&self.proc(rel))
    }
    /// Map a mount point of the live system (e.g. /sys/kernel/tracing) into this root.
    fn map_path(&self, live: &str) -> PathBuf {
        if let Some(rest) = live.strip_prefix("/sys/") {
            self.sys_dir.join(rest)
        } else if live == "/sys" {
            self.sys_dir.clone()
        } else if let Some(rest) = live.strip_prefix("/proc/") {
            self.proc_dir.join(rest)
        } else {
            PathBuf::from(live)
        }
    }
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn read_trim(p: &Path) -> Option<String> {
    read(p).map(|s| s.trim().to_string())
}

fn list_dir(p: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(p)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn cap(
    name: &str,
    available: bool,
    detail: impl Into<String>,
    reason: Option<String>,
) -> Capability {
    Capability {
        name: name.to_string(),
        available,
        detail: detail.into(),
        reason,
    }
}

/// Probe the running system.
pub fn detect() -> Capabilities {
    detect_with(&SystemRoot::live(), &LiveProber)
}

/// Probe the system whose /proc and /sys are at `root`, asking `prober` for
/// perf_event_open answers and the C library version.
pub fn detect_with(root: &SystemRoot, prober: &dyn Prober) -> Capabilities {
    let cpu = parse::parse_cpuinfo(&root.read_proc("cpuinfo").unwrap_or_default());
    let privileges = parse::parse_status(&root.read_proc("self/status").unwrap_or_default());
    let mounts = parse::parse_mounts(
        &root
            .read_proc("self/mounts")
            .or_else(|| root.read_proc("mounts"))
            .unwrap_or_default(),
    );
    let filesystems = parse::parse_filesystems(&root.read_proc("filesystems").unwrap_or_default());
    let paranoid: Option<i32> = root
        .read_proc("sys/kernel/perf_event_paranoid")
        .and_then(|s| s.trim().parse().ok());
    let max_rate: Option<u64> = root
        .read_proc("sys/kernel/perf_event_max_sample_rate")
        .and_then(|s| s.trim().parse().ok());

    let ctx = Ctx {
        root,
        prober,
        cpu: &cpu,
        privileges,
        mounts: &mounts,
        filesystems: &filesystems,
        paranoid,
    };

    let mut items = Vec::new();
    items.push(ctx.cpu_cap());
    let cycles = prober.perf_open(PerfProbe::HardwareCycles);
    let pmu = ctx.pmu_cap(&cycles);
    let tma = memory_sources::tma_counters_cap(&cpu, &pmu);
    items.push(pmu);
    let cpu_clock = ctx.cpu_clock_cap();
    let address_sampling = memory_sources::address_sampling_cap(&cpu_clock);
    items.push(cpu_clock);
    let (lbr, lbr_depth) = ctx.lbr_cap(&cycles);
    let lbr_ok = lbr.available;
    items.push(lbr);
    items.push(ctx.lbr_cycles_cap(lbr_ok));
    items.push(ctx.pebs_cap(&cycles));
    items.push(ctx.ibs_cap());
    items.push(address_sampling);
    items.push(memory_sources::watchpoints_cap(&ctx.pmu_dir("")));
    items.push(tma);
    items.push(ctx.uncore_cap());
    let tracepoints = ctx.tracepoints_cap();
    let topology = numa::Topology::read(&root.sys_dir);
    items.push(numa::placement_cap(
        &topology,
        &prober.move_pages_query(),
        &tracepoints,
    ));
    items.push(tracepoints);
    items.push(ctx.uprobes_cap());
    items.push(ctx.btf_cap());
    items.push(resctrl_support::capability(
        root,
        &cpu,
        &mounts,
        &filesystems,
    ));
    items.extend(ctx.hugetlb_caps());
    items.push(ctx.thp_cap());
    items.push(ctx.paranoid_cap());
    items.push(ctx.kptr_cap());
    items.push(ctx.max_rate_cap(max_rate));
    items.push(kernel_caps::glibc_cap(prober.glibc_version()));

    Capabilities {
        cpu,
        privileges,
        lbr_depth: if lbr_ok { lbr_depth } else { None },
        perf_event_paranoid: paranoid,
        perf_event_max_sample_rate: max_rate,
        items,
    }
}

/// What every check reads; the checks are `Ctx` methods in `hardware_caps.rs` (CPU, PMU,
/// LBR, PEBS, IBS, uncore) and `kernel_caps.rs` (tracing, huge pages, permissions).
struct Ctx<'a> {
    root: &'a SystemRoot,
    prober: &'a dyn Prober,
    cpu: &'a CpuInfo,
    privileges: Privileges,
    mounts: &'a [Mount],
    filesystems: &'a std::collections::BTreeSet<String>,
    paranoid: Option<i32>,
}

const EVENT_SOURCES: &str = "bus/event_source/devices";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware_caps::{intel_model_lbr_cycles, intel_pmu_lbr_cycles};
    use crate::kernel_caps::glibc_cap;

    #[test]
    fn pmu_name_table() {
        assert_eq!(intel_pmu_lbr_cycles("skylake"), Some(true));
        assert_eq!(intel_pmu_lbr_cycles("sapphire_rapids"), Some(true));
        assert_eq!(intel_pmu_lbr_cycles("haswell"), Some(false));
        assert_eq!(intel_pmu_lbr_cycles("mystery"), None);
        assert_eq!(intel_model_lbr_cycles(0x55), Some(true));
        assert_eq!(intel_model_lbr_cycles(0x2d), Some(false));
        assert_eq!(intel_model_lbr_cycles(0x01), None);
    }

    #[test]
    fn glibc_notes() {
        let c = glibc_cap(Some("2.36".into()));
        assert!(c.available && c.reason.as_deref().is_some_and(|r| r.contains("hugetlb=1")));
        let c = glibc_cap(Some("2.31".into()));
        assert!(c
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("needs 2.35")));
        let c = glibc_cap(Some("weird".into()));
        assert!(c.available && c.reason.is_none());
        assert!(!glibc_cap(None).available);
    }

    #[test]
    fn empty_root_never_panics() {
        struct Nothing;
        impl Prober for Nothing {
            fn perf_open(&self, _: PerfProbe) -> ProbeOutcome {
                ProbeOutcome::Failed {
                    errno: libc::ENOSYS,
                }
            }
            fn glibc_version(&self) -> Option<String> {
                None
            }
        }
        let caps = detect_with(&SystemRoot::under("/nonexistent/kairos/root"), &Nothing);
        assert!(!caps.is_available(names::CPU));
        assert!(!caps.is_available(names::HARDWARE_PMU));
        assert!(!caps.render_text().is_empty());
        assert!(caps.to_json().contains("\"items\""));
    }
}
