//! `kairos report NAME -r DIR` on a hotspots result: the profile's reports (the shared
//! library's), plus the hotspots analysis's own branches and tlb reports.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};

use crate::SPEC;

/// The entry point of the hotspots spec.
pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    req.check(&SPEC)?;
    match req.report.as_str() {
        "branches" => crate::branches::report(req),
        "tlb" => crate::tlb::report(req),
        _ => kairos_profile_report::profile_report(req),
    }
}
