//! The exact call trace as the registry lists it.

use kairos_analysis_api::{one_of, AnalysisSpec, KnobSpec, ReportSpec};

pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "trace",
    summary: "every function call, exactly (instrumented build or uprobes): the truth the LBR methods are scored against",
    result_suffix: "tr",
    knobs: &[
        KnobSpec {
            name: "mode",
            default: "auto",
            help: "instrument (program built with -finstrument-functions), uprobes (unmodified binary) or auto",
            check: |v| one_of(v, &["auto", "instrument", "uprobes"]),
        },
        KnobSpec {
            name: "measure-overhead",
            default: "on",
            help: "on (run the program once untraced first, to measure the tracer's cost) or off",
            check: |v| one_of(v, &["on", "off"]),
        },
    ],
    collects: "function entries and exits from the instrumentation runtime, or uprobe and uretprobe hits",
    reports: &[ReportSpec { name: "summary", help: "calls, functions and the tracer's measured cost" }],
    views: &["summary"],
    needs: &[],
    uses: &["uprobes"],
    collect: crate::collect::collect,
    report: crate::run_report::report,
    claims_import: None,
    compare: None,
    page: None,
};
