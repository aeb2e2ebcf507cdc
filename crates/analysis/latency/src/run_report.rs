//! `kairos report NAME -r DIR` on a latency result: its requests (`latency.json`); the
//! sampled profile's reports are handed to the profile-report library.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_report::Format;

use crate::model::{LatencyResult, FILE};
use crate::{reports, SPEC};

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    req.check(&SPEC)?;
    let format = kairos_session::report_format(req)?;
    let dir = kairos_session::open_result(&req.result_dir)?;
    let r = load(&dir)?;
    // `--limit 0` is every row; without it, a screenful.
    let limit = req.limit.map(|_| req.row_limit().unwrap_or(usize::MAX));
    let doc = match req.report.as_str() {
        "requests" => reports::requests(&r, limit),
        "slow-vs-normal" => reports::slow_vs_normal(&r, limit),
        _ => reports::summary(&r),
    };
    let mut out = ReportOutput::new(doc.render(format));
    if format == Format::Text {
        out.push(&kairos_session::notes_text(&dir));
    }
    Ok(out)
}

/// A result's requests, or the sentence saying why there are none.
pub(crate) fn load(dir: &kairos_result::ResultDir) -> Result<LatencyResult, Failure> {
    match LatencyResult::load(dir.path()) {
        Some(Ok(r)) => Ok(r),
        Some(Err(e)) => Err(Failure::failed(format!(
            "result {} is damaged ({e}); collect it again",
            dir.path().display()
        ))),
        None => Err(Failure::failed(format!(
            "result {} has no {FILE}; give a result of `kairos collect latency`",
            dir.path().display()
        ))),
    }
}
