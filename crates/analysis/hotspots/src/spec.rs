//! The hotspots analysis as the registry lists it.

use kairos_analysis_api::{interval_us, one_of, AnalysisSpec, KnobSpec, ReportSpec};

/// The sampling knobs, which other sampling analyses offer too.
pub const SAMPLING_KNOBS: [KnobSpec; 4] = [
        KnobSpec { name: "sampling-interval-us", default: "1000", help: "sampling interval", check: interval_us },
        KnobSpec { name: "stack-unwinding", default: "fp", help: "fp (frame pointers) or dwarf (user stack copy)", check: |v| one_of(v, &["fp", "dwarf"]) },
        KnobSpec {
            name: "event",
            default: "auto",
            help: "auto (cycles where the CPU offers them, else cpu-clock), cpu-clock or cycles",
            check: |v| one_of(v, &["auto", "cpu-clock", "cycles"]),
        },
        KnobSpec {
            name: "branch-records",
            default: "auto",
            help: "auto (LBR where the CPU has it), on (required) or off: every sample with the last user calls and returns",
            check: |v| one_of(v, &["auto", "on", "off"]),
        },
];

pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "hotspots",
    summary: "sampling profile with call stacks, over time; with LBR, branch records as extra time-stamped points",
    result_suffix: "hs",
    knobs: &SAMPLING_KNOBS,
    collects: "cycles (or the cpu-clock timer without a PMU) with call chains, and the LBR's user calls and returns where present",
    reports: &[
        ReportSpec { name: "summary", help: "what was run, samples, losses, top functions, processes and threads" },
        ReportSpec { name: "hotspots", help: "self and total time by function, module, process, thread, CPU or call stack" },
        ReportSpec { name: "top-down", help: "the call tree from the roots" },
        ReportSpec { name: "timeline", help: "each group's share per time bucket" },
        ReportSpec { name: "branches", help: "one sample's branch records, newest first" },
        ReportSpec { name: "tlb", help: "DTLB overhead and STLB hits and misses (needs core PMU counters)" },
    ],
    views: &["summary", "timeline", "trees", "sample inspector", "bandwidth", "compare"],
    needs: &["cpu_clock"],
    uses: &["hardware_pmu", "lbr", "lbr_cycles", "kptr_restrict", "bandwidth_timeline"],
    collect: crate::collect::collect,
    report: crate::report::report,
    // The catch-all: every recording is a sampled profile.
    claims_import: Some(crate::claim::claim_import),
    compare: None,
    page: None,
};
