//! `kairos import FILE.perf.data`: a perf.data recorded by perf becomes a result through
//! the same converter `kairos collect` uses; the analyses decide what it is (the
//! registry's `import`).

use kairos_analysis_registry::ImportRequest;

use crate::args::ImportArgs;
use crate::error::CliResult;

pub fn run(args: ImportArgs) -> CliResult {
    let req = ImportRequest {
        file: args.file,
        result_dir: args.result_dir,
        symfs: args.symfs,
        perf_map_dirs: args.perf_map_dirs,
        debug_dirs: args.debug_dirs,
        buildid_dirs: args.buildid_dirs,
        kallsyms: args.kallsyms,
        quiet: args.quiet,
    };
    Ok(kairos_analysis_registry::import(&req)?)
}
