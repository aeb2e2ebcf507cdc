//! Reports that apply to a result of any analysis, declared once here, and the one
//! dispatch of `kairos report NAME -r DIR`: the analysis that made the result prints its
//! own reports; a report of any result that the analysis does not have itself comes from
//! here.

use kairos_analysis_api::{Failure, PageModule, ReportFn, ReportOutput, ReportRequest, ReportSpec};
use kairos_result::ResultDir;

/// A report every result has.
#[derive(Debug)]
pub struct AnyResultReport {
    pub spec: ReportSpec,
    pub report: ReportFn,
    /// Whether it reads the result as its analysis made it (and an analysis with its own
    /// report of that name prints that one instead); false: it reads only what every
    /// result keeps, whatever its kind.
    pub reads_result: bool,
    /// What it will know on this machine, one line for `kairos info`.
    pub info: Option<fn() -> String>,
    /// Its part of the page.
    pub page: Option<&'static PageModule>,
}

/// The reports of any result, in the order `kairos report --help` lists them.
pub static ANY_RESULT: &[AnyResultReport] = &[
    AnyResultReport {
        spec: ReportSpec {
            name: kairos_analysis_topology::REPORT,
            help:
                "devices (network, storage, accelerators) by NUMA node against where the target ran",
        },
        report: kairos_analysis_topology::report,
        reads_result: false,
        info: Some(kairos_analysis_topology::info_line),
        page: Some(&kairos_analysis_topology::page::PAGE),
    },
    AnyResultReport {
        spec: ReportSpec {
            name: "bandwidth",
            help: "the memory-bandwidth timeline every collection records, per domain and flow",
        },
        report: kairos_analysis_memory_access::bandwidth_report::report_any,
        reads_result: true,
        info: None,
        // Its page view (`api/bandwidth`) is memory-access's.
        page: None,
    },
];

/// `kairos report`: the report `req.report` of the result `req.result_dir`, rendered.
pub fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    let any = ANY_RESULT.iter().find(|r| r.spec.name == req.report);
    // The analysis whose result it is; for a result that cannot be opened, the analysis
    // declaring the report says why.
    let owner = match any {
        Some(a) if !a.reads_result => None,
        _ => Some(match ResultDir::open(&req.result_dir) {
            Ok(dir) => crate::for_kind(dir.manifest().kind.as_deref()),
            Err(_) => crate::for_report(&req.report)?,
        }),
    };
    // Also here: the reports of any result do not pass through the analysis.
    req.check_sample_filter(owner)?;
    match (owner, any) {
        (Some(spec), Some(a)) if !spec.has_report(&req.report) => (a.report)(req),
        (Some(spec), _) => (spec.report)(req),
        (None, Some(a)) => (a.report)(req),
        // Not reached: without a report of any result, the result has an owner.
        (None, None) => crate::for_report(&req.report).and_then(|s| (s.report)(req)),
    }
}
