//! The memory-access analysis as the registry lists it.

use kairos_analysis_api::{interval_us, one_of, AnalysisSpec, KnobSpec, ReportSpec};

fn source(v: &str) -> Result<(), String> {
    one_of(v, &["auto", "pmu", "registers"])
}

fn on_off(v: &str) -> Result<(), String> {
    one_of(v, &["on", "off"])
}

fn auto_on_off(v: &str) -> Result<(), String> {
    one_of(v, &["auto", "on", "off"])
}

fn folder(v: &str) -> Result<(), String> {
    if v.is_empty() || std::path::Path::new(v).is_dir() {
        Ok(())
    } else {
        Err(format!(
            "{v} is not a folder: give the folder that holds mapfile.csv"
        ))
    }
}

fn ldlat(v: &str) -> Result<(), String> {
    match v.parse::<u32>() {
        Ok(n) if (1..=65535).contains(&n) => Ok(()),
        _ => Err("a load latency threshold in cycles from 1 to 65535".into()),
    }
}

pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "memory-access",
    summary: "which data the program waits on: sampled data addresses by memory object and cache line, false sharing",
    result_suffix: "ma",
    knobs: &[
        KnobSpec {
            name: "source",
            default: "auto",
            help: "where data addresses come from: pmu (PEBS load latency and stores, AMD IBS), registers (cpu-clock samples whose instruction is decoded with the user registers: works without a PMU), auto (the PMU where there is one)",
            check: source,
        },
        KnobSpec { name: "sampling-interval-us", default: "250", help: "time between two samples of a thread, in microseconds (address sampling)", check: interval_us },
        KnobSpec { name: "ldlat", default: "30", help: "PEBS: sample loads slower than this many cycles", check: ldlat },
        KnobSpec {
            name: "track-allocations",
            default: "on",
            help: "preload the allocation tracker so heap addresses are named by allocation site (file:line (size))",
            check: on_off,
        },
        KnobSpec {
            name: "watchpoints",
            default: "off",
            help: "without a PMU: arm hardware watchpoints in rotation on the cache lines sampling saw shared by threads, to confirm false or true sharing with exact accesses (thread, instruction, write or read); duty-cycled to slow the program by at most 5%",
            check: on_off,
        },
        KnobSpec {
            name: "perfmon",
            default: "",
            help: "with a PMU: folder of Intel's perfmon event and metric files (mapfile.csv, e.g. SKX/events, SKX/metrics) for the memory-bound counters; default: $KAIROS_PERFMON, then the files shipped with Kairos",
            check: folder,
        },
        KnobSpec {
            name: "numa",
            default: "auto",
            help: "NUMA placement: each object's pages per node (move_pages(2) queries while the program runs), who touched them first (one page-fault record with its call stack per fault), the nodes of the threads that use them and the estimated remote share; auto: on for a launched program or -p, off with -a",
            check: auto_on_off,
        },
    ],
    collects: "data addresses (PMU memory samples, or cpu-clock samples with the user registers), call stacks, data mappings, the program's allocations through the preloaded tracker, and (numa) page faults and page placement",
    reports: &[
        ReportSpec { name: "summary", help: "address source, top memory objects, cache lines shared by threads with the verdict and the fix" },
        ReportSpec { name: "memory-objects", help: "per memory object: samples, share, loads, stores, threads (with a PMU: latency and levels)" },
        ReportSpec { name: "cache-lines", help: "per 64-byte line: object and offsets, threads, reads and writes per offset, false or true sharing" },
        ReportSpec { name: "memory-bound", help: "with a PMU: the share of pipeline slots stalled on memory and its L1/L2/L3/DRAM/store split (TMA), per function and over time" },
        ReportSpec { name: "memory-functions", help: "which functions access which objects, how much" },
        ReportSpec { name: "bandwidth", help: "DRAM and socket-link bandwidth over the run per socket and flow (average, peak, share of the maximum from `kairos measure bandwidth`), the utilization histogram, and the objects and functions it comes from" },
        ReportSpec { name: "numa", help: "per memory object: pages per NUMA node, first touch (thread, node, function, call stack), nodes of the threads that use it, estimated remote accesses; one sentence per problem with its fix" },
        ReportSpec { name: "hotspots", help: "the sampled profile's self and total time by function, module, process, thread, CPU or call stack (as for a hotspots result)" },
        ReportSpec { name: "top-down", help: "the sampled profile's call tree from the roots" },
        ReportSpec { name: "timeline", help: "the sampled profile: each group's share per time bucket" },
    ],
    views: &["summary", "memory-access", "bandwidth", "timeline", "trees", "sample inspector", "compare"],
    needs: &[],
    uses: &["pebs", "ibs", "tma_counters", "address_sampling", "watchpoints", "glibc", "numa_placement", "tracepoints", "bandwidth_timeline"],
    collect: crate::collect::collect,
    report: crate::run_report::report,
    claims_import: Some(crate::claim::claim_import),
    compare: Some(crate::compare::comparable),
    page: Some(&crate::page::PAGE),
};
