//! The hardware's capabilities: the CPU, its PMU, LBR (and its cycle counts), PEBS, IBS
//! and the uncore PMUs, from /sys/bus/event_source and a perf_event_open probe.

use std::path::PathBuf;

use crate::probe::{self, PerfProbe, ProbeOutcome};
use crate::{cap, list_dir, names, read_trim, Capability, Ctx, EVENT_SOURCES};

impl Ctx<'_> {
    pub(crate) fn pmu_dir(&self, pmu: &str) -> PathBuf {
        self.root.sys(&format!("{EVENT_SOURCES}/{pmu}"))
    }

    pub(crate) fn cpu_caps(&self, file: &str) -> Option<String> {
        // Intel hybrid parts have cpu_core/cpu_atom instead of cpu.
        ["cpu", "cpu_core"]
            .iter()
            .find_map(|pmu| read_trim(&self.pmu_dir(pmu).join("caps").join(file)))
    }

    pub(crate) fn cpu_cap(&self) -> Capability {
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

    pub(crate) fn pmu_cap(&self, cycles: &ProbeOutcome) -> Capability {
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

    pub(crate) fn cpu_clock_cap(&self) -> Capability {
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
    pub(crate) fn lbr_cap(&self, cycles: &ProbeOutcome) -> (Capability, Option<u32>) {
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
    pub(crate) fn lbr_cycles_cap(&self, lbr_ok: bool) -> Capability {
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

    pub(crate) fn pebs_cap(&self, cycles: &ProbeOutcome) -> Capability {
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

    pub(crate) fn ibs_cap(&self) -> Capability {
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

    pub(crate) fn uncore_cap(&self) -> Capability {
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
}

/// Per-entry LBR cycle counts by the kernel's Intel PMU name (caps/pmu_name).
pub(crate) fn intel_pmu_lbr_cycles(name: &str) -> Option<bool> {
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
pub(crate) fn intel_model_lbr_cycles(model: u32) -> Option<bool> {
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
