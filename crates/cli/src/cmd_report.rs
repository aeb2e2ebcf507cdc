//! `kairos report NAME -r DIR`: the command line as a report request; the registry hands
//! it to the analysis that made the result (its manifest's kind), or to the report of any
//! result, which renders it as text, CSV or JSON; printed here.

use kairos_analysis_registry::{ReportRequest, SampleFilter};

use crate::args::ReportArgs;
use crate::error::CliResult;

pub fn run(args: ReportArgs) -> CliResult {
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
    let out = kairos_analysis_registry::report(&req)?;
    print!("{}", out.text);
    for line in &out.aside {
        eprintln!("{line}");
    }
    Ok(())
}
