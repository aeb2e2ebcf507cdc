//! The two data-address sources that need no PMU: address sampling (a timer sample's
//! instruction decoded with the user registers) and hardware watchpoints.

use std::path::Path;

use crate::{cap, names, Capability};

/// Address sampling decodes x86 instructions and needs the cpu-clock timer.
pub(crate) fn address_sampling_cap(cpu_clock: &Capability) -> Capability {
    let arch = std::env::consts::ARCH;
    if !cpu_clock.available {
        let why = format!(
            "it samples with the cpu-clock timer, which is refused: {}",
            cpu_clock.reason.clone().unwrap_or_default()
        );
        return cap(
            names::ADDRESS_SAMPLING,
            false,
            "cpu-clock samples with user registers",
            Some(why),
        );
    }
    if arch != "x86_64" && arch != "x86" {
        return cap(
            names::ADDRESS_SAMPLING,
            false,
            format!("architecture {arch}"),
            Some("the sampled instruction is decoded as x86 code; this machine is not x86".into()),
        );
    }
    cap(
        names::ADDRESS_SAMPLING,
        true,
        "cpu-clock samples with user registers; the instruction at each sampled IP decoded (x86): data address, size, load/store; weights are time, not latency",
        None,
    )
}

/// Hardware breakpoints (PERF_TYPE_BREAKPOINT): the `breakpoint` PMU in sysfs.
pub(crate) fn watchpoints_cap(devices: &Path) -> Capability {
    let dir = devices.join("breakpoint");
    match std::fs::read_to_string(dir.join("type")) {
        Ok(t) => cap(
            names::WATCHPOINTS,
            true,
            format!("breakpoint PMU type {}: 4 debug registers per thread, 1-8 bytes, W or RW; every hit traps (about 12 us)", t.trim()),
            None,
        ),
        Err(_) => cap(names::WATCHPOINTS, false, "no breakpoint PMU", Some(format!("{} is missing: the kernel has no hardware breakpoint support", dir.display()))),
    }
}

/// The memory-bound (TMA) counters: Intel's core PMU and the perfmon files of the CPU
/// (Kairos ships Skylake-SP, Ice Lake-SP and Sapphire Rapids; others by -k perfmon=DIR).
pub(crate) fn tma_counters_cap(cpu: &crate::CpuInfo, core_pmu: &Capability) -> Capability {
    let model = match (cpu.family, cpu.model) {
        (Some(f), Some(m)) => format!("family {f} model {m:#x}"),
        _ => "unknown model".into(),
    };
    if !cpu.is_intel() {
        return cap(names::TMA_COUNTERS, false, model, Some("the memory-bound split uses Intel's TMA metric files; this CPU is not Intel (memory-access still gives sampled latencies with IBS)".into()));
    }
    if !core_pmu.available {
        let why = format!(
            "it counts with the hardware PMU, which is unavailable: {}",
            core_pmu.reason.clone().unwrap_or_default()
        );
        return cap(names::TMA_COUNTERS, false, model, Some(why));
    }
    let shipped = matches!(
        (cpu.family, cpu.model),
        (Some(6), Some(0x55 | 0x6a | 0x6c | 0x8f))
    );
    if shipped {
        cap(names::TMA_COUNTERS, true, format!("{model}: Memory_Bound and its split counted in groups read at each sample (perfmon files shipped)"), None)
    } else {
        cap(
            names::TMA_COUNTERS,
            true,
            format!("{model}: counted in groups read at each sample"),
            Some("this CPU's perfmon event and metric files are not shipped: give them with -k perfmon=DIR or KAIROS_PERFMON (github.com/intel/perfmon)".into()),
        )
    }
}
