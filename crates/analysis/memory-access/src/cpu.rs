//! This machine's CPU, read once where the collection chooses its PMU events, where the
//! finish names them and where the TMA step checks its model: one reading for all three.

use kairos_mem_source::CpuId;

/// This machine's CPU, as the PMU event choice and the TMA check read it.
pub(crate) fn this_cpu() -> Option<CpuId> {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| CpuId::from_cpuinfo(&t))
}
