//! The memory-consumption analysis as the registry lists it.

use kairos_analysis_api::{AnalysisSpec, KnobSpec, ReportSpec};

fn bytes(v: &str) -> Result<(), String> {
    match v.parse::<u64>() {
        Ok(n) if n <= 1 << 40 => Ok(()),
        _ => Err(
            "a whole number of bytes from 0 to 1099511627776 (1 tracks every block with its stack)"
                .into(),
        ),
    }
}

pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "memory-consumption",
    summary: "every allocation with its call stack (LD_PRELOAD tracker), heap over time, huge pages needed",
    result_suffix: "mc",
    knobs: &[KnobSpec {
        name: "min-object-size",
        default: "1",
        help: "blocks smaller than this many bytes are counted in the totals but recorded without a stack",
        check: bytes,
    }],
    collects: "malloc, calloc, realloc, free, mmap and munmap of the program through the preloaded allocation tracker, with /proc/PID/maps at start and exit",
    reports: &[
        ReportSpec { name: "summary", help: "allocated, freed and peak bytes, top allocation sites" },
        ReportSpec { name: "allocations", help: "bytes and blocks by memory object (allocation site), bottom-up" },
        ReportSpec { name: "sizes", help: "histogram of allocation sizes" },
        ReportSpec { name: "heap-timeline", help: "heap bytes over time" },
        ReportSpec { name: "hugepages", help: "huge pages the program needs and how to give them" },
    ],
    views: &["summary"],
    needs: &[],
    uses: &["hugetlbfs", "hugepages_2m", "thp", "glibc", "bandwidth_timeline"],
    collect: crate::collect::collect,
    report: crate::run_report::report,
    claims_import: None,
    compare: Some(crate::compare::comparable),
    page: None,
};
