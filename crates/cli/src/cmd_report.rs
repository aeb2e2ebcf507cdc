//! `kairos report NAME -r DIR`: the report entry point of the analysis that made the
//! result (its manifest's kind, through the registry) prints it as text, CSV or JSON.

use kairos_analyses::ReportRequest;
use kairos_result::ResultDir;

use crate::args::ReportArgs;
use crate::error::CliResult;

pub fn run(args: ReportArgs) -> CliResult {
    // The topology report reads what every result kind keeps: no analysis owns it.
    let topology = args.report == kairos_analysis_topology::REPORT;
    let spec = match ResultDir::open(&args.result_dir) {
        _ if topology => None,
        Ok(dir) => Some(kairos_analyses::for_kind(dir.manifest().kind.as_deref())),
        // The analysis declaring the report says why the result cannot be read.
        Err(_) => Some(kairos_analyses::for_report(&args.report)?),
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
    };
    match spec {
        Some(spec) => Ok((spec.report)(&req)?),
        None => Ok(kairos_analysis_topology::report(&req)?),
    }
}
