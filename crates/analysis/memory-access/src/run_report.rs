//! `kairos report NAME -r DIR` on a memory-access result: its own reports, and those of
//! the sampled profile (hotspots, top-down, timeline) through the hotspots analysis.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_report::{Document, Format};
use kairos_session as session;

use crate::{reports, SPEC};

/// The reports of the sampled profile every memory recording also is.
const PROFILE_REPORTS: [&str; 3] = ["hotspots", "top-down", "timeline"];

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    req.check(&SPEC)?;
    if PROFILE_REPORTS.contains(&req.report.as_str()) {
        return kairos_profile_report::profile_report(req);
    }
    let format = session::report_format(req)?;
    let (dir, data) = crate::finish::open(&req.result_dir)?;
    let limit = req.row_limit();
    let doc = match req.report.as_str() {
        "summary" => reports::summary(&data, &crate::finish::meta(&dir), limit.unwrap_or(10)),
        "memory-objects" => one(
            "Memory objects",
            reports::memory_objects(&data, limit.or(Some(50))),
        ),
        "memory-functions" => one(
            "Memory accesses by function",
            reports::memory_functions(&data, limit.or(Some(50))),
        ),
        "memory-bound" => crate::tma_report::document(
            crate::tma_collect::load(dir.path()).as_ref(),
            data.memory_bound.as_deref(),
            limit.or(Some(30)),
        ),
        "bandwidth" => {
            let t = crate::bandwidth::load(&dir)
                .map_err(|e| Failure::failed(format!("{e}; collect the result again")))?;
            crate::bandwidth_report::document(t.as_ref(), Some(&data), limit.or(Some(20)))
        }
        "numa" => crate::numa::report::numa_of(&data, &crate::finish::meta(&dir), limit),
        _ => reports::cache_lines(&data, limit.or(Some(20))),
    };
    let mut out = ReportOutput::new(doc.render(format));
    if format == Format::Text {
        out.push(&session::notes_text(&dir));
    }
    Ok(out)
}

fn one(title: &str, t: kairos_report::Table) -> Document {
    let mut d = Document::new(title);
    d.push_table(t);
    d
}
