//! `kairos report NAME -r DIR` on a system-overview result: its profile and its kernel
//! entries table, with the entry and exit path costs measured at collection.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_report::{Document, Format};
use kairos_result::ResultDir;
use kairos_session as session;

use crate::{reports, tables, PathCost, SPEC};

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    req.check(&SPEC)?;
    let format = kairos_session::report_format(req)?;
    let (dir, profile) = session::open(&req.result_dir)?;
    let entries = tables::read(&dir.tables_path()).map_err(|e| {
        Failure::failed(format!(
            "result {} is damaged: {e}; collect it again",
            req.result_dir.display()
        ))
    })?;
    let bucket_ns = req.bucket_ns(|| reports::default_bucket_ns(&profile, &entries))?;
    let limit = req.row_limit();
    let cost = path_cost(&dir);
    let own = recording_faults(&dir);
    let doc: Document = match req.report.as_str() {
        "summary" => reports::summary(&profile, &entries, &cost, own, &session::meta(&dir)),
        "kernel-entries" => {
            let mut d = Document::new("Kernel entries");
            d.push_table(reports::kernel_entries(
                &profile, &entries, &cost, bucket_ns,
            ));
            d
        }
        "page-faults" => reports::page_faults(&profile, &entries, own, limit),
        _ => reports::timeline(&profile, &entries, &cost, bucket_ns, limit),
    };
    let mut out = ReportOutput::new(doc.render(format));
    if format == Format::Text {
        out.push(&session::notes_text(&dir));
    }
    Ok(out)
}

/// The manifest key (in `system_overview`) of the page faults the recording itself caused
/// and that the entries leave out.
pub(crate) const RECORDING_FAULTS: &str = "recording_faults";

/// The page faults the recording caused itself, left out of the entries (0 for results
/// made before they were told apart).
pub(crate) fn recording_faults(dir: &ResultDir) -> u64 {
    dir.manifest()
        .extra
        .get("system_overview")
        .and_then(|so| so.get(RECORDING_FAULTS))
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// The entry and exit path costs measured at collection (zero for results without them).
pub(crate) fn path_cost(dir: &ResultDir) -> PathCost {
    let ns = |k: &str| {
        dir.manifest()
            .extra
            .get("system_overview")
            .and_then(|so| so.get("entry_exit_ns"))
            .and_then(|c| c.get(k))
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    };
    PathCost {
        syscall_ns: ns("syscall"),
        fault_ns: ns("fault"),
        syscall_spread_ns: ns("syscall_spread"),
        fault_spread_ns: ns("fault_spread"),
    }
}
