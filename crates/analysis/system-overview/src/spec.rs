//! The system-overview analysis as the registry lists it.

use kairos_analysis_api::{interval_us, AnalysisSpec, KnobSpec, ReportSpec};

pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "system-overview",
    summary: "kernel activity: kernel-time share, kernel entries by cause (page faults, syscalls, interrupts) with their durations",
    result_suffix: "so",
    knobs: &[KnobSpec {
        name: "sampling-interval-us",
        default: "1000",
        help: "cpu-clock sampling interval, for the kernel-time share and the hot function",
        check: interval_us,
    }],
    collects: "cpu-clock samples, minor and major faults, and the page-fault, syscall and interrupt tracepoints",
    reports: &[
        ReportSpec { name: "summary", help: "kernel share, entries by cause, fault handling time" },
        ReportSpec { name: "kernel-entries", help: "kernel entries by cause and per time bucket" },
        ReportSpec { name: "page-faults", help: "faults by faulting code and by memory object" },
        ReportSpec { name: "timeline", help: "kernel entries and kernel time per time bucket" },
    ],
    views: &["summary", "timeline", "trees", "sample inspector", "counters", "bandwidth"],
    needs: &["cpu_clock", "tracepoints"],
    uses: &["kptr_restrict", "bandwidth_timeline"],
    collect: crate::collect::collect,
    report: crate::run_report::report,
    claims_import: None,
    compare: Some(crate::compare::comparable),
    page: Some(&crate::page::PAGE),
};
