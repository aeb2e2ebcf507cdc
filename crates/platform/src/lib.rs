//! What this machine can measure: PMU, LBR, PEBS/IBS, uncore, resctrl, hugetlbfs,
//! perf_event_paranoid.
//!
//! [`detect`] looks at /proc, /sys and a few perf_event_open experiments and returns one
//! [`Capability`] per feature: found or not, what was found, and, when missing, why in
//! plain words. [`detect_with`] does the same from another root directory and recorded
//! probe answers, which is how the tests feed files recorded on other machines.
//! Nothing here panics or changes the system (no mounts, no writes).

pub mod devices;
pub mod kconfig;
mod memory_sources;
pub mod numa;
pub mod parse;
mod perf_header;
pub mod probe;
pub mod resctrl_support;
pub mod sockets;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub use devices::{Device, DeviceKind, Link, NodeSource};
pub use parse::{CpuInfo, Mount, Privileges};
pub use perf_header::{header_nodes, HeaderNode};
pub use probe::{LiveProber, PerfProbe, ProbeOutcome, Prober};
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
    items.push(glibc_cap(prober.glibc_version()));

    Capabilities {
        cpu,
        privileges,
        lbr_depth: if lbr_ok { lbr_depth } else { None },
        perf_event_paranoid: paranoid,
        perf_event_max_sample_rate: max_rate,
        items,
    }
}

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

impl Ctx<'_> {
    fn pmu_dir(&self, pmu: &str) -> PathBuf {
        self.root.sys(&format!("{EVENT_SOURCES}/{pmu}"))
    }

    fn cpu_caps(&self, file: &str) -> Option<String> {
        // Intel hybrid parts have cpu_core/cpu_atom instead of cpu.
        ["cpu", "cpu_core"]
            .iter()
            .find_map(|pmu| read_trim(&self.pmu_dir(pmu).join("caps").join(file)))
    }

    fn cpu_cap(&self) -> Capability {
        let c = self.cpu;
        if c.vendor.is_empty() && c.logical_cpus == 0 {
            return cap(
                names::CPU,
                false,
                "unknown",
                Some(format!(
                    "{} is missing or unreadable",
                    self.root.proc("cpuinfo").display()
                )),
            );
        }
        let fmt = |v: Option<u32>| v.map_or("?".to_string(), |v| format!("{v} (0x{v:x})"));
        let mut detail = format!(
            "{} family {} model {} stepping {}",
            if c.vendor.is_empty() { "?" } else { &c.vendor },
            fmt(c.family),
            fmt(c.model),
            c.stepping.map_or("?".to_string(), |v| v.to_string()),
        );
        if !c.model_name.is_empty() {
            detail.push_str(&format!(": {}", c.model_name));
        }
        detail.push_str(&format!("; {} logical CPUs", c.logical_cpus));
        if c.is_virtual() {
            detail.push_str("; running under a hypervisor");
        }
        if let Some(name) = self.cpu_caps("pmu_name") {
            detail.push_str(&format!("; PMU driver name {name}"));
        }
        cap(names::CPU, true, detail, None)
    }

    fn pmu_cap(&self, cycles: &ProbeOutcome) -> Capability {
        let has_cpu_pmu = self.pmu_dir("cpu").is_dir()
            || self.pmu_dir("cpu_core").is_dir()
            || self.pmu_dir("armv8_pmuv3").is_dir()
            || self.pmu_dir("armv8_pmuv3_0").is_dir();
        let sysfs = if has_cpu_pmu {
            "a core PMU is registered in sysfs"
        } else {
            "no core PMU (cpu) in /sys/bus/event_source/devices"
        };
        match cycles {
            ProbeOutcome::Opened => cap(
                names::HARDWARE_PMU,
                true,
                format!("cycles counter opened; {sysfs}"),
                None,
            ),
            other => {
                let mut why = probe::describe_outcome(other);
                if self.cpu.is_virtual() && !has_cpu_pmu {
                    why.push_str(
                        "; this is a virtual machine without a virtual PMU: hardware events \
                         (cycles, instructions, LBR, PEBS, IBS, uncore) are unavailable, \
                         software events and tracepoints still work",
                    );
                }
                cap(names::HARDWARE_PMU, false, sysfs, Some(why))
            }
        }
    }

    fn cpu_clock_cap(&self) -> Capability {
        match self.prober.perf_open(PerfProbe::CpuClock) {
            ProbeOutcome::Opened => cap(
                names::CPU_CLOCK,
                true,
                "software cpu-clock sampling event opened (the timer-based fallback for sampling)",
                None,
            ),
            o => cap(
                names::CPU_CLOCK,
                false,
                "software cpu-clock sampling event refused",
                Some(probe::describe_outcome(&o)),
            ),
        }
    }

    /// LBR: depth from caps/branches (Intel) or flags (AMD), confirmed by opening a
    /// branch-stack sampling event.
    fn lbr_cap(&self, cycles: &ProbeOutcome) -> (Capability, Option<u32>) {
        let c = self.cpu;
        let mut found = Vec::new();
        let mut depth: Option<u32> = None;
        let mut hw_claims = false;
        if let Some(b) = self.cpu_caps("branches") {
            found.push(format!("caps/branches = {b}"));
            depth = b.parse().ok().filter(|&d| d > 0);
            hw_claims |= depth.is_some();
        }
        if let Some(n) = self.cpu_caps("pmu_name") {
            found.push(format!("caps/pmu_name = {n}"));
        }
        if c.has_flag("arch_lbr") {
            found.push("cpuinfo flag arch_lbr".into());
            hw_claims = true;
        }
        if c.is_amd() {
            if c.has_flag("amd_lbr_v2") {
                found.push(
                    "cpuinfo flag amd_lbr_v2 (Zen 4 LbrExtV2, 16 entries, call/return filter)"
                        .into(),
                );
                depth = depth.or(Some(16));
                hw_claims = true;
            }
            if c.has_flag("brs") {
                found
                    .push("cpuinfo flag brs (Zen 3 Branch Sampling, 16 entries, no filter)".into());
                depth = depth.or(Some(16));
                hw_claims = true;
            }
        }
        let detail_found = if found.is_empty() {
            "no LBR advertised (no caps/branches, arch_lbr, amd_lbr_v2 or brs)".to_string()
        } else {
            found.join(", ")
        };

        if !cycles.is_opened() {
            let why = format!(
                "needs the hardware PMU, which is unavailable ({})",
                match cycles {
                    ProbeOutcome::Failed { errno } => probe::errno_name(*errno),
                    o => probe::describe_outcome(o),
                }
            );
            return (cap(names::LBR, false, detail_found, Some(why)), None);
        }
        let callret = self.prober.perf_open(PerfProbe::BranchStackCallReturn);
        let depth_txt = depth.map_or("depth unknown".to_string(), |d| format!("{d} entries"));
        if callret.is_opened() {
            return (
                cap(
                    names::LBR,
                    true,
                    format!(
                        "{detail_found}; {depth_txt}; branch-stack sampling with the user call/return filter opened"
                    ),
                    None,
                ),
                depth,
            );
        }
        let any = self.prober.perf_open(PerfProbe::BranchStackAny);
        if any.is_opened() {
            return (
                cap(
                    names::LBR,
                    true,
                    format!("{detail_found}; {depth_txt}; branch-stack sampling opened without a branch-type filter"),
                    Some(format!(
                        "the user call/return hardware filter was refused ({}); every taken branch is recorded and calls/returns must be picked in software",
                        probe::describe_outcome(&callret)
                    )),
                ),
                depth,
            );
        }
        let why = if hw_claims {
            format!(
                "the CPU advertises branch records but the kernel refused branch-stack sampling: {}",
                probe::describe_outcome(&any)
            )
        } else {
            format!(
                "this CPU/PMU has no branch record facility: {}",
                probe::describe_outcome(&any)
            )
        };
        (cap(names::LBR, false, detail_found, Some(why)), None)
    }

    /// Cycle counts per LBR entry: Skylake and later (LBR_INFO) or Arch LBR; not on AMD.
    fn lbr_cycles_cap(&self, lbr_ok: bool) -> Capability {
        let c = self.cpu;
        let pmu_name = self.cpu_caps("pmu_name");
        let (verdict, how): (Option<bool>, String) = if c.is_amd() {
            (
                Some(false),
                "AMD BRS and LbrExtV2 records carry no cycle counts".to_string(),
            )
        } else if c.has_flag("arch_lbr") {
            (
                Some(true),
                "cpuinfo flag arch_lbr: Architectural LBR with LBR_INFO cycle counts".to_string(),
            )
        } else if let Some(name) = pmu_name.as_deref().filter(|_| c.is_intel()) {
            (
                intel_pmu_lbr_cycles(name),
                format!(
                    "caps/pmu_name = {name}: {}",
                    match intel_pmu_lbr_cycles(name) {
                        Some(true) => "Skylake or later, LBR_INFO holds cycle counts",
                        Some(false) => "before Skylake, no per-entry cycle counts",
                        None => "not a PMU name this build knows",
                    }
                ),
            )
        } else if c.is_intel() {
            let v = match (c.family, c.model) {
                (Some(6), Some(m)) => intel_model_lbr_cycles(m),
                _ => None,
            };
            (
                v,
                format!(
                    "decided from cpuinfo family/model ({}), no caps/pmu_name",
                    match v {
                        Some(true) => "a Skylake-or-later core",
                        Some(false) => "a pre-Skylake core",
                        None => "model not in the table",
                    }
                ),
            )
        } else {
            (None, "not an x86 CPU with LBR".to_string())
        };
        match (lbr_ok, verdict) {
            (true, Some(true)) => cap(names::LBR_CYCLES, true, how, None),
            (true, Some(false)) => cap(
                names::LBR_CYCLES,
                false,
                how,
                Some("branch records have no time: Kairos estimates the time of each record (paper section 4.4)".into()),
            ),
            (true, None) => cap(
                names::LBR_CYCLES,
                false,
                how,
                Some("cannot tell whether branch records carry cycle counts; treated as absent (the records' cycles field is used where non-zero)".into()),
            ),
            (false, v) => cap(
                names::LBR_CYCLES,
                false,
                format!(
                    "{how}{}",
                    match v {
                        Some(true) => " (the CPU would have them)",
                        _ => "",
                    }
                ),
                Some("no usable LBR on this machine".into()),
            ),
        }
    }

    fn pebs_cap(&self, cycles: &ProbeOutcome) -> Capability {
        let c = self.cpu;
        let flag = c.has_flag("pebs");
        let max_precise = self.cpu_caps("max_precise");
        let mut found = vec![format!(
            "cpuinfo flag pebs {}",
            if flag { "present" } else { "absent" }
        )];
        if let Some(m) = &max_precise {
            found.push(format!("caps/max_precise = {m}"));
        }
        let detail = found.join(", ");
        if !c.is_intel() {
            return cap(
                names::PEBS,
                false,
                detail,
                Some(if c.is_amd() {
                    "PEBS is Intel-only; AMD's equivalent is IBS".into()
                } else {
                    "PEBS is Intel-only".into()
                }),
            );
        }
        if !cycles.is_opened() {
            return cap(
                names::PEBS,
                false,
                detail,
                Some("needs the hardware PMU, which is unavailable".into()),
            );
        }
        match self.prober.perf_open(PerfProbe::Precise) {
            ProbeOutcome::Opened if flag || max_precise.as_deref().is_some_and(|m| m != "0") => {
                cap(names::PEBS, true, format!("{detail}; precise cycles sampling opened"), None)
            }
            ProbeOutcome::Opened => cap(
                names::PEBS,
                false,
                format!("{detail}; precise_ip=1 accepted"),
                Some("the kernel accepted precise sampling but the CPU does not advertise PEBS (constant-skid only)".into()),
            ),
            o => cap(names::PEBS, false, detail, Some(probe::describe_outcome(&o))),
        }
    }

    fn ibs_cap(&self) -> Capability {
        let op = self.pmu_dir("ibs_op");
        let fetch = self.pmu_dir("ibs_fetch");
        let flag = self.cpu.has_flag("ibs");
        let detail = format!(
            "ibs_op PMU {}, ibs_fetch PMU {}, cpuinfo flag ibs {}",
            if op.is_dir() { "present" } else { "absent" },
            if fetch.is_dir() { "present" } else { "absent" },
            if flag { "present" } else { "absent" }
        );
        if op.is_dir() {
            let t = read_trim(&op.join("type")).unwrap_or_default();
            cap(names::IBS, true, format!("{detail}; ibs_op type {t}"), None)
        } else {
            let why = if !self.cpu.is_amd() {
                "IBS is AMD-only"
            } else if flag {
                "the CPU has IBS but the kernel registered no ibs_op PMU (virtual machine or kernel without AMD IBS support)"
            } else {
                "this AMD CPU (or its virtual machine) does not expose IBS"
            };
            cap(names::IBS, false, detail, Some(why.into()))
        }
    }

    fn uncore_cap(&self) -> Capability {
        let all = list_dir(&self.root.sys(EVENT_SOURCES));
        let uncore: Vec<&String> = all
            .iter()
            .filter(|n| {
                n.starts_with("uncore_")
                    || n.starts_with("amd_df")
                    || n.starts_with("amd_l3")
                    || n.starts_with("amd_umc")
            })
            .collect();
        if uncore.is_empty() {
            let why = if all.is_empty() {
                format!(
                    "{} is missing or empty",
                    self.root.sys(EVENT_SOURCES).display()
                )
            } else if self.cpu.is_virtual() {
                "no uncore PMUs are exposed inside a virtual machine".into()
            } else {
                "the kernel registered no uncore PMUs for this CPU".into()
            };
            return cap(
                names::UNCORE,
                false,
                format!("event sources: {}", all.join(" ")),
                Some(why),
            );
        }
        let shown: Vec<&str> = uncore.iter().take(24).map(|s| s.as_str()).collect();
        let more = uncore.len().saturating_sub(shown.len());
        cap(
            names::UNCORE,
            true,
            format!(
                "{} uncore PMUs: {}{}",
                uncore.len(),
                shown.join(" "),
                if more > 0 {
                    format!(" (+{more} more)")
                } else {
                    String::new()
                }
            ),
            None,
        )
    }

    fn tracefs_dir(&self) -> Option<PathBuf> {
        self.mounts
            .iter()
            .find(|m| m.fstype == "tracefs")
            .map(|m| self.root.map_path(&m.target))
            .or_else(|| {
                // debugfs exposes tracing/ as an automount of tracefs.
                self.mounts
                    .iter()
                    .find(|m| m.fstype == "debugfs")
                    .map(|m| self.root.map_path(&m.target).join("tracing"))
                    .filter(|p| p.join("events").is_dir())
            })
    }

    fn tracepoints_cap(&self) -> Capability {
        let pmu = self.pmu_dir("tracepoint").is_dir();
        let Some(dir) = self.tracefs_dir() else {
            let why = if self.filesystems.contains("tracefs") {
                "tracefs is not mounted; as root: mount -t tracefs nodev /sys/kernel/tracing"
            } else {
                "the kernel has no tracefs (CONFIG_TRACING off)"
            };
            return cap(
                names::TRACEPOINTS,
                false,
                format!("tracepoint PMU {}", if pmu { "present" } else { "absent" }),
                Some(why.into()),
            );
        };
        let pf = dir.join("events/exceptions/page_fault_user/id");
        let id: Option<u64> = read_trim(&pf).and_then(|s| s.parse().ok());
        let mut detail = format!("tracefs at {}", dir.display());
        match id {
            Some(id) => {
                detail.push_str(&format!(", exceptions:page_fault_user id {id}"));
                match self.prober.perf_open(PerfProbe::Tracepoint(id)) {
                    ProbeOutcome::Opened => {
                        detail.push_str(", opened");
                        cap(names::TRACEPOINTS, true, detail, None)
                    }
                    o => cap(
                        names::TRACEPOINTS,
                        false,
                        detail,
                        Some(probe::describe_outcome(&o)),
                    ),
                }
            }
            None => {
                let events = dir.join("events").is_dir();
                cap(
                    names::TRACEPOINTS,
                    events,
                    detail,
                    Some(if events {
                        "exceptions:page_fault_user is missing (x86-only tracepoint, or events not readable); other tracepoints are available".into()
                    } else {
                        "tracefs has no readable events directory".into()
                    }),
                )
            }
        }
    }

    fn uprobes_cap(&self) -> Capability {
        let pmu = self.pmu_dir("uprobe");
        if pmu.is_dir() {
            let t = read_trim(&pmu.join("type")).unwrap_or_default();
            cap(
                names::UPROBES,
                true,
                format!("uprobe PMU type {t} (perf_event_open uprobes)"),
                None,
            )
        } else {
            let via_tracefs = self
                .tracefs_dir()
                .is_some_and(|d| d.join("uprobe_events").exists());
            if via_tracefs {
                cap(names::UPROBES, true, "uprobe_events in tracefs", None)
            } else {
                cap(
                    names::UPROBES,
                    false,
                    "no uprobe PMU, no tracefs uprobe_events",
                    Some("the kernel was built without CONFIG_UPROBE_EVENTS".into()),
                )
            }
        }
    }

    fn btf_cap(&self) -> Capability {
        let btf = self.root.sys("kernel/btf/vmlinux");
        let unpriv = self
            .root
            .read_proc("sys/kernel/unprivileged_bpf_disabled")
            .map(|s| s.trim().to_string());
        let priv_txt = if self.privileges.is_root() || self.privileges.has_cap(parse::CAP_BPF) {
            "we may load BPF programs (root or CAP_BPF)"
        } else {
            "loading BPF programs needs root or CAP_BPF+CAP_PERFMON"
        };
        let unpriv_txt = unpriv
            .map(|v| format!("; unprivileged_bpf_disabled = {v}"))
            .unwrap_or_default();
        match std::fs::metadata(&btf) {
            Ok(m) => cap(
                names::EBPF_BTF,
                true,
                format!("/sys/kernel/btf/vmlinux ({} bytes); {priv_txt}{unpriv_txt}", m.len()),
                None,
            ),
            Err(_) => cap(
                names::EBPF_BTF,
                false,
                format!("no /sys/kernel/btf/vmlinux{unpriv_txt}"),
                Some("the kernel was built without CONFIG_DEBUG_INFO_BTF: CO-RE eBPF programs cannot run".into()),
            ),
        }
    }

    fn hugetlb_caps(&self) -> Vec<Capability> {
        let meminfo = self.root.read_proc("meminfo").unwrap_or_default();
        let total = parse::meminfo_field(&meminfo, "HugePages_Total");
        let free = parse::meminfo_field(&meminfo, "HugePages_Free");
        let size = parse::meminfo_field(&meminfo, "Hugepagesize");
        let mounts: Vec<String> = self
            .mounts
            .iter()
            .filter(|m| m.fstype == "hugetlbfs")
            .map(|m| {
                let ps = m
                    .options
                    .split(',')
                    .find_map(|o| o.strip_prefix("pagesize="))
                    .unwrap_or("default");
                format!("{} (pagesize {ps})", m.target)
            })
            .collect();
        let fs = self.filesystems.contains("hugetlbfs");
        let pool_txt = format!(
            "HugePages_Total {} Free {} Hugepagesize {} kB",
            total.map_or("?".into(), |v| v.to_string()),
            free.map_or("?".into(), |v| v.to_string()),
            size.map_or("?".into(), |v| v.to_string())
        );
        let mut out = Vec::new();
        let mount_txt = if mounts.is_empty() {
            "not mounted".to_string()
        } else {
            format!("mounted at {}", mounts.join(", "))
        };
        out.push(if fs {
            cap(
                names::HUGETLBFS,
                true,
                format!("{mount_txt}; {pool_txt}"),
                if mounts.is_empty() {
                    Some("no hugetlbfs mount: MAP_HUGETLB and glibc.malloc.hugetlb=2 still work; libhugetlbfs-style file mappings need one (mount -t hugetlbfs none /dev/hugepages)".into())
                } else {
                    None
                },
            )
        } else {
            cap(
                names::HUGETLBFS,
                false,
                pool_txt,
                Some("the kernel has no hugetlbfs (CONFIG_HUGETLBFS off)".into()),
            )
        });
        for (name, kb, label) in [
            (names::HUGEPAGES_2M, 2048u64, "2 MiB"),
            (names::HUGEPAGES_1G, 1_048_576u64, "1 GiB"),
        ] {
            let dir = self
                .root
                .sys(&format!("kernel/mm/hugepages/hugepages-{kb}kB"));
            if !dir.is_dir() {
                out.push(cap(
                    name,
                    false,
                    format!("no {}", dir.display()),
                    Some(
                        if kb == 1_048_576
                            && !self.cpu.has_flag("pdpe1gb")
                            && self.cpu.vendor.contains("Genuine")
                        {
                            format!("{label} pages need the pdpe1gb CPU flag")
                        } else {
                            format!("the kernel offers no {label} huge pages here")
                        },
                    ),
                ));
                continue;
            }
            let nr: Option<u64> = read_trim(&dir.join("nr_hugepages")).and_then(|s| s.parse().ok());
            let fr: Option<u64> =
                read_trim(&dir.join("free_hugepages")).and_then(|s| s.parse().ok());
            let detail = format!(
                "{label} pool: nr_hugepages {} free {}",
                nr.map_or("?".into(), |v| v.to_string()),
                fr.map_or("?".into(), |v| v.to_string())
            );
            match nr {
                Some(n) if n > 0 => out.push(cap(name, true, detail, None)),
                _ => out.push(cap(
                    name,
                    false,
                    detail,
                    Some(format!(
                        "no {label} pages reserved; as root: echo N > /sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages{}",
                        if kb == 1_048_576 { " (or hugepagesz=1G hugepages=N at boot)" } else { "" }
                    )),
                )),
            }
        }
        out
    }

    fn thp_cap(&self) -> Capability {
        let base = self.root.sys("kernel/mm/transparent_hugepage");
        let Some(enabled) = read(&base.join("enabled")) else {
            return cap(
                names::THP,
                false,
                "no /sys/kernel/mm/transparent_hugepage",
                Some("the kernel was built without transparent huge pages".into()),
            );
        };
        let mode = parse::bracketed_choice(&enabled).unwrap_or_else(|| enabled.trim().to_string());
        let defrag = read(&base.join("defrag")).and_then(|d| parse::bracketed_choice(&d));
        let detail = format!(
            "enabled [{mode}]{}",
            defrag
                .map(|d| format!(", defrag [{d}]"))
                .unwrap_or_default()
        );
        match mode.as_str() {
            "never" => cap(
                names::THP,
                false,
                detail,
                Some("transparent huge pages are switched off (enabled = never)".into()),
            ),
            "madvise" => cap(
                names::THP,
                true,
                detail,
                Some("only for memory the program marks with madvise(MADV_HUGEPAGE) (glibc 2.35+: GLIBC_TUNABLES=glibc.malloc.hugetlb=1)".into()),
            ),
            _ => cap(names::THP, true, detail, None),
        }
    }

    fn paranoid_cap(&self) -> Capability {
        let p = self.privileges;
        let who = if p.is_root() {
            "running as root".to_string()
        } else {
            format!(
                "running as uid {}",
                p.euid.map_or("?".into(), |u| u.to_string())
            )
        };
        let capt = if p.has_cap(parse::CAP_PERFMON) {
            ", CAP_PERFMON held"
        } else if p.has_cap(parse::CAP_SYS_ADMIN) {
            ", CAP_SYS_ADMIN held"
        } else {
            ", no CAP_PERFMON"
        };
        let privileged = p.perf_privileged();
        match self.paranoid {
            None => cap(
                names::PERF_EVENT_PARANOID,
                false,
                format!("no /proc/sys/kernel/perf_event_paranoid; {who}{capt}"),
                Some("the kernel has no perf events".into()),
            ),
            Some(v) => {
                let detail = format!("{v}: {}; {who}{capt}", parse::paranoid_meaning(v));
                if privileged {
                    cap(
                        names::PERF_EVENT_PARANOID,
                        true,
                        format!("{detail}: no restrictions apply to us"),
                        None,
                    )
                } else if v >= 3 {
                    cap(
                        names::PERF_EVENT_PARANOID,
                        false,
                        detail,
                        Some("perf_event_open is forbidden to this user; run as root, grant CAP_PERFMON, or: sysctl kernel.perf_event_paranoid=2".into()),
                    )
                } else {
                    cap(
                        names::PERF_EVENT_PARANOID,
                        true,
                        detail,
                        Some(match v {
                            2 => "kernel code, system-wide profiling and tracepoint data need root/CAP_PERFMON or perf_event_paranoid <= 1 (and -1 for raw tracepoints)".into(),
                            1 => "system-wide profiling needs root/CAP_PERFMON or perf_event_paranoid <= 0".into(),
                            _ => "raw tracepoint data needs perf_event_paranoid = -1 or root".into(),
                        }),
                    )
                }
            }
        }
    }

    fn kptr_cap(&self) -> Capability {
        let v: Option<i32> = self
            .root
            .read_proc("sys/kernel/kptr_restrict")
            .and_then(|s| s.trim().parse().ok());
        // Are the addresses in kallsyms real? (zeros when restricted)
        let kallsyms_real = read_head(&self.root.proc("kallsyms"), 4096).map(|head| {
            head.lines()
                .take(8)
                .filter_map(|l| l.split_whitespace().next())
                .any(|a| a.chars().any(|c| c != '0'))
        });
        let ks = match kallsyms_real {
            Some(true) => "; /proc/kallsyms shows real addresses",
            Some(false) => "; /proc/kallsyms shows zeroed addresses",
            None => "; /proc/kallsyms unreadable",
        };
        match v {
            None => cap(
                names::KPTR_RESTRICT,
                kallsyms_real == Some(true),
                format!("no /proc/sys/kernel/kptr_restrict{ks}"),
                None,
            ),
            Some(v) => {
                let detail = format!("{v}: {}{ks}", parse::kptr_meaning(v));
                let ok = kallsyms_real.unwrap_or(match v {
                    0 => true,
                    1 => self.privileges.has_cap(parse::CAP_SYSLOG),
                    _ => false,
                });
                if ok {
                    cap(names::KPTR_RESTRICT, true, detail, None)
                } else {
                    cap(
                        names::KPTR_RESTRICT,
                        false,
                        detail,
                        Some("kernel functions cannot be named; run as root (with kptr_restrict <= 1) or: sysctl kernel.kptr_restrict=0".into()),
                    )
                }
            }
        }
    }

    fn max_rate_cap(&self, rate: Option<u64>) -> Capability {
        let pct = self
            .root
            .read_proc("sys/kernel/perf_cpu_time_max_percent")
            .map(|s| s.trim().to_string());
        match rate {
            Some(r) if r > 0 => {
                let period_us = 1e6 / r as f64;
                cap(
                    names::MAX_SAMPLE_RATE,
                    true,
                    format!(
                        "{r} Hz (shortest frequency-mode period {period_us:.1} us){}",
                        pct.map(|p| format!("; perf_cpu_time_max_percent {p}")).unwrap_or_default()
                    ),
                    Some("the kernel lowers this limit by itself when sample handling takes too long (see dmesg: \"perf: interrupt took too long\")".into()),
                )
            }
            Some(_) => cap(
                names::MAX_SAMPLE_RATE,
                false,
                "0 Hz",
                Some("sampling is disabled (perf_event_max_sample_rate = 0)".into()),
            ),
            None => cap(
                names::MAX_SAMPLE_RATE,
                false,
                "no /proc/sys/kernel/perf_event_max_sample_rate",
                Some("the kernel has no perf events".into()),
            ),
        }
    }
}

fn read_head(p: &Path, max: usize) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(p).ok()?;
    let mut buf = Vec::with_capacity(max);
    f.take(max as u64).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// Per-entry LBR cycle counts by the kernel's Intel PMU name (caps/pmu_name).
fn intel_pmu_lbr_cycles(name: &str) -> Option<bool> {
    let n = name.to_ascii_lowercase();
    const BEFORE: &[&str] = &[
        "core2",
        "nehalem",
        "westmere",
        "sandybridge",
        "ivybridge",
        "haswell",
        "broadwell",
        "silvermont",
        "airmont",
        "knights-landing",
        "knl",
        "atom",
        "bonnell",
        "goldmont",
    ];
    const SKYLAKE_ON: &[&str] = &[
        "skylake",
        "icelake",
        "tigerlake",
        "sapphire_rapids",
        "granite_rapids",
        "emerald_rapids",
        "alderlake_hybrid",
        "raptorlake",
        "meteorlake_hybrid",
        "lunarlake_hybrid",
        "arrowlake_hybrid",
        "pantherlake",
        "goldmont_plus",
        "tremont",
        "sierra_forest",
        "grand_ridge",
        "clearwater_forest",
        "diamond_rapids",
    ];
    if SKYLAKE_ON.iter().any(|k| n == *k || n.starts_with(k)) {
        Some(true)
    } else if BEFORE.iter().any(|k| n == *k) {
        Some(false)
    } else {
        None
    }
}

/// Fallback by family 6 model number (Intel big cores).
fn intel_model_lbr_cycles(model: u32) -> Option<bool> {
    match model {
        // Nehalem .. Broadwell
        0x1a | 0x1e | 0x1f | 0x2e | 0x25 | 0x2c | 0x2f | 0x2a | 0x2d | 0x3a | 0x3e | 0x3c
        | 0x3f | 0x45 | 0x46 | 0x3d | 0x47 | 0x4f | 0x56 => Some(false),
        // Skylake, Kaby/Coffee/Comet Lake, Cannon/Ice/Tiger/Alder/Raptor/Meteor Lake,
        // Skylake-X/Cascade/Cooper Lake, Ice Lake-X, Sapphire/Emerald/Granite Rapids
        0x4e | 0x5e | 0x55 | 0x8e | 0x9e | 0xa5 | 0xa6 | 0x66 | 0x7d | 0x7e | 0x6a | 0x6c
        | 0x8c | 0x8d | 0xa7 | 0x97 | 0x9a | 0xb7 | 0xba | 0xbf | 0xaa | 0xac | 0x8f | 0xcf
        | 0xad | 0xae => Some(true),
        _ => None,
    }
}

fn glibc_cap(version: Option<String>) -> Capability {
    let Some(v) = version else {
        return cap(
            names::GLIBC,
            false,
            "not linked against glibc",
            Some("gnu_get_libc_version is not available (musl or another C library)".into()),
        );
    };
    let (maj, min) = {
        let mut it = v.split('.').map(|p| p.trim().parse::<u32>().ok());
        (it.next().flatten(), it.next().flatten())
    };
    let note = match (maj, min) {
        (Some(2), Some(m)) if m >= 35 => Some(
            "malloc huge pages via GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (THP) or =2 (hugetlbfs pool); libhugetlbfs HUGETLB_MORECORE does nothing since 2.34".to_string(),
        ),
        (Some(2), Some(34)) => Some(
            "libhugetlbfs HUGETLB_MORECORE does nothing (morecore removed in 2.34); glibc.malloc.hugetlb needs 2.35".to_string(),
        ),
        (Some(2), Some(_)) => Some("no glibc.malloc.hugetlb tunable (needs 2.35)".to_string()),
        _ => None,
    };
    cap(names::GLIBC, true, format!("glibc {v}"), note)
}

#[cfg(test)]
mod tests {
    use super::*;

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
