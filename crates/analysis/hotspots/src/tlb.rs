//! `kairos report tlb -r DIR`: DTLB overhead, Load STLB hit and Load STLB miss from core
//! PMU counters through Intel's metric formulas (crates/metrics).
//!
//! The metrics need core PMU events; whether the machine had them is in the result's
//! manifest (capabilities written at collection), else detected on this machine.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    let dir = kairos_session::open_result(&req.result_dir)?;
    let m = dir.manifest();
    let (pmu, why, source) = match m.capabilities.iter().find(|c| c.name == "hardware_pmu") {
        Some(c) => (
            c.available,
            c.reason.clone().or(c.detail.clone()),
            "the result's manifest",
        ),
        None => {
            let caps = kairos_platform::detect();
            let c = caps.get(kairos_platform::names::HARDWARE_PMU);
            (
                c.is_some_and(|c| c.available),
                c.and_then(|c| c.reason.clone().or(Some(c.detail.clone()))),
                "this machine (the result records no capabilities)",
            )
        }
    };
    let names: Vec<String> = kairos_metrics::tlb_metrics()
        .iter()
        .map(|x| x.name.clone())
        .collect();
    if !pmu {
        return Err(Failure::failed(format!(
            "the TLB metrics ({}) are unavailable: they need core PMU counters and {source} says there is no hardware PMU ({}); \
             in a VM, enable PMU passthrough (e.g. KVM `-cpu host,pmu=on`) or run on bare metal",
            names.join(", "),
            why.unwrap_or_else(|| "no reason recorded".into())
        )));
    }
    Err(Failure::failed(format!(
        "result {} has no core counter values to compute {} from; Kairos does not count those events during collection yet \
         (the formula engine is ready: crates/metrics)",
        req.result_dir.display(),
        names.join(", ")
    )))
}
