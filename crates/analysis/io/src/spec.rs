//! The io analysis as the registry lists it.

use kairos_analysis_api::{AnalysisSpec, KnobSpec, ReportSpec};

fn folder(v: &str) -> Result<(), String> {
    if v.is_empty() || std::path::Path::new(v).is_dir() {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a folder: give the folder that holds mapfile.csv"
        ))
    }
}

pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "io",
    summary: "I/O traffic over time: inbound PCIe reads and writes and their L3 (DDIO) hits per socket and PCIe block with an uncore, else each device's own byte counters",
    result_suffix: "io",
    knobs: &[KnobSpec {
        name: "perfmon",
        default: "",
        help: "folder of Intel's perfmon files (mapfile.csv, e.g. SKX/events/skylakex_uncore.json, SKX/metrics) for the IIO and CHA counters; default: $KAIROS_PERFMON, then the files shipped with Kairos",
        check: folder,
    }],
    collects: "every 100 ms, system-wide: network rx/tx bytes and block sectors of each device (sysfs); with Intel uncore PMUs, IIO stack data requests (inbound read/write, MMIO) and CHA TOR inserts from IO (DDIO hits, misses, occupancy); DRAM and socket-link bandwidth where the bandwidth timeline can be recorded; with tracepoints, which of the target's threads read from and wrote to which device, on which CPUs (device_use.json)",
    reports: &[
        ReportSpec { name: "summary", help: "sources, traffic per socket or node, DDIO hit rate per socket (or why it is not measurable), one sentence per finding" },
        ReportSpec { name: "io", help: "averages and peaks per socket, per PCIe block and device (with link utilisation), DDIO per socket, over time (--bucket-ms), and the device use by thread" },
    ],
    views: &["io"],
    needs: &[],
    uses: &["uncore", "tracepoints", "bandwidth_timeline"],
    collect: crate::collect::collect,
    report: crate::report::report,
    claims_import: None,
    compare: Some(crate::compare::comparable),
    page: Some(&crate::page::PAGE),
};
