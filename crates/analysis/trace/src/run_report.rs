//! `kairos report NAME -r DIR` on a trace result: its summary is the one of any profile
//! (shared with the hotspots analysis); the sampled reports are refused with the way to
//! get samples from a trace.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};

use crate::SPEC;

/// Reports that need samples, which an exact trace has not.
const SAMPLED: [&str; 4] = ["hotspots", "top-down", "timeline", "branches"];

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    if SAMPLED.contains(&req.report.as_str()) {
        return Err(Failure::usage(format!(
            "{} is an exact trace (kairos collect trace), not a sampled result; `report {}` needs samples: \
             turn the trace into emulated samples with `kairos lab emulate-lbr -r {} --interval-us 1000 -o DIR`",
            req.result_dir.display(),
            req.report,
            req.result_dir.display()
        )));
    }
    req.check(&SPEC)?;
    kairos_profile_report::profile_report(req)
}
