//! `kairos report NAME -r DIR`: the report entry point of the analysis that made the
//! result (its manifest's kind, through the registry) prints it as text, CSV or JSON.

use kairos_analysis_registry::{ReportRequest, SampleFilter};
use kairos_result::ResultDir;

use crate::args::ReportArgs;
use crate::error::CliResult;

/// The report every result has (see [`run`]).
const BANDWIDTH: &str = "bandwidth";

pub fn run(args: ReportArgs) -> CliResult {
    // The topology report reads what every result kind keeps: no analysis owns it.
    let topology = args.report == kairos_analysis_topology::REPORT;
    let spec = match ResultDir::open(&args.result_dir) {
        _ if topology => None,
        Ok(dir) => Some(kairos_analysis_registry::for_kind(
            dir.manifest().kind.as_deref(),
        )),
        // The analysis declaring the report says why the result cannot be read.
        Err(_) => Some(kairos_analysis_registry::for_report(&args.report)?),
    };
    let req = ReportRequest {
        report: args.report,
        result_dir: args.result_dir,
        group_by: args.group_by,
        time_range: args.time_range,
        format: args.format,
        limit: args.limit,
        bucket_ms: args.bucket_ms,
        time_assignment: args.time_assignment,
        sample: args.sample,
        time: args.time,
        event: args.event,
        samples: SampleFilter {
            pids: args.pids.map(|i| i.0),
            tids: args.tids.map(|i| i.0),
            comms: (!args.comms.is_empty()).then_some(args.comms),
            cpus: args.cpus.map(|c| {
                c.0.into_iter()
                    .filter_map(|c| u32::try_from(c).ok())
                    .collect()
            }),
        },
    };
    // Also here: the topology and bandwidth reports do not pass through the analysis.
    req.check_sample_filter(spec)?;
    // The bandwidth timeline is recorded by every collection; an analysis without its own
    // bandwidth report gets the timeline's.
    let own =
        |s: &kairos_analysis_registry::AnalysisSpec| s.reports.iter().any(|r| r.name == req.report);
    match spec {
        Some(spec) if req.report == BANDWIDTH && !own(spec) => Ok(
            kairos_analysis_memory_access::bandwidth_report::report_any(&req)?,
        ),
        Some(spec) => Ok((spec.report)(&req)?),
        None => Ok(kairos_analysis_topology::report(&req)?),
    }
}
