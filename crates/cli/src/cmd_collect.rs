//! `kairos collect ANALYSIS`: the analysis is looked up in the registry, its knobs are
//! checked against its declaration, and its own collect entry point does the rest.

use kairos_analyses::CollectRequest;

use crate::args::CollectArgs;
use crate::error::{CliResult, UserError};

pub fn run(args: CollectArgs) -> CliResult {
    let spec = kairos_analyses::find(&args.analysis).ok_or_else(|| UserError::usage(kairos_analyses::unknown(&args.analysis)))?;
    let knobs = crate::knobs::parse(spec, &args.knobs)?;
    let req = CollectRequest {
        knobs,
        program: args.program,
        pid: args.pid,
        system_wide: args.system_wide,
        duration: args.duration,
        result_dir: args.result_dir,
        quiet: args.quiet,
    };
    Ok((spec.collect)(&req)?)
}
