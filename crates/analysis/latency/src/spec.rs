//! The latency analysis as the registry lists it.

use kairos_analysis_api::{one_of, AnalysisSpec, KnobSpec, ReportSpec};
use kairos_analysis_hotspots::SAMPLING_KNOBS;

pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "latency",
    summary: "request latency: each request of a service, its time on and off the CPU by cause, the slowest requests and what slow ones do that normal ones do not",
    result_suffix: "rl",
    knobs: &[
        // Sub-millisecond requests need a finer interval than a whole-run profile.
        KnobSpec { default: "100", ..SAMPLING_KNOBS[0] },
        SAMPLING_KNOBS[1],
        KnobSpec {
            help: "auto (cpu-clock: request time is wall-clock time), cpu-clock or cycles",
            ..SAMPLING_KNOBS[2]
        },
        SAMPLING_KNOBS[3],
        KnobSpec {
            name: "request",
            default: "marker",
            help: "request boundaries: marker (kairos_request_begin/end of runtime/requests), FUNCTION (uprobes at its entry and return, outermost call per thread) or usdt:PROVIDER:BEGIN,END",
            check: crate::boundary::check_request,
        },
        KnobSpec {
            name: "requests-from",
            default: "",
            help: "a file of request start and end times from the application's log (replaces `request`)",
            check: |_| Ok(()),
        },
        KnobSpec {
            name: "requests-clock",
            default: "auto",
            help: "clock of the times in requests-from: auto (the file's `clock=` header, else monotonic), monotonic or realtime",
            check: |v| one_of(v, &["auto", "monotonic", "realtime"]),
        },
        KnobSpec {
            name: "slower-than",
            default: "p99",
            help: "what a slow request is: above a percentile (p99, p99.9) or a duration (200us, 1.5ms)",
            check: crate::threshold::check,
        },
        KnobSpec {
            name: "slowest",
            default: "",
            help: "what a slow request is, as the slowest share of them (0.1%): replaces slower-than",
            check: crate::threshold::check_slowest,
        },
        KnobSpec {
            name: "window",
            default: "10s",
            help: "with -p and no -d (the flight recorder): the length of each window, counted and kept whole only when it has a slow request",
            check: crate::threshold::check_window,
        },
        KnobSpec {
            name: "keep-windows",
            default: "6",
            help: "with -p and no -d: how many windows with slow requests are kept whole (the newest)",
            check: |v| match v.parse::<u64>() {
                Ok(n) if (1..=10_000).contains(&n) => Ok(()),
                _ => Err("a whole number of windows from 1 to 10000".into()),
            },
        },
    ],
    collects: "cpu-clock samples with call chains, the request boundaries, context switches with the scheduler's switch and wake-up tracepoints, page faults, system calls and interrupts",
    reports: &[
        ReportSpec { name: "summary", help: "requests, their distribution and what slow requests spend their time on" },
        ReportSpec { name: "requests", help: "the distribution (percentiles, histogram) and the slowest requests with their main cause" },
        ReportSpec { name: "slow-vs-normal", help: "what slow requests do that normal ones do not, ranked by the extra time it explains" },
    ],
    views: &["summary", "timeline", "trees", "sample inspector", "requests"],
    needs: &["cpu_clock", "tracepoints", "uprobes"],
    uses: &["kptr_restrict"],
    collect: crate::collect::collect,
    report: crate::run_report::report,
    claims_import: None,
    compare: Some(crate::compare::comparable),
    page: Some(&crate::page::PAGE),
};
