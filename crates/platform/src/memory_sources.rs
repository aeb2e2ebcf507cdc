//! The two data-address sources that need no PMU: address sampling (a timer sample's
//! instruction decoded with the user registers) and hardware watchpoints.

use std::path::Path;

use crate::{cap, names, Capability};

/// Address sampling decodes x86 instructions and needs the cpu-clock timer.
pub(crate) fn address_sampling_cap(cpu_clock: &Capability) -> Capability {
    let arch = std::env::consts::ARCH;
    if !cpu_clock.available {
        let why = format!("it samples with the cpu-clock timer, which is refused: {}", cpu_clock.reason.clone().unwrap_or_default());
        return cap(names::ADDRESS_SAMPLING, false, "cpu-clock samples with user registers", Some(why));
    }
    if arch != "x86_64" && arch != "x86" {
        return cap(names::ADDRESS_SAMPLING, false, format!("architecture {arch}"), Some("the sampled instruction is decoded as x86 code; this machine is not x86".into()));
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
