//! `kairos collect ANALYSIS`: the analysis is looked up in the registry, its knobs are
//! checked against its declaration, and its own collect entry point does the rest. The
//! cache knobs (`-k cache-group=...`) hold for every analysis and are handled here.

use kairos_analyses::CollectRequest;

use crate::args::CollectArgs;
use crate::error::{CliResult, UserError};

pub fn run(args: CollectArgs) -> CliResult {
    let spec = kairos_analyses::find(&args.analysis)
        .ok_or_else(|| UserError::usage(kairos_analyses::unknown(&args.analysis)))?;
    let (raw, cache_knobs) = crate::collect_cache::split(&args.knobs)?;
    let raw = crate::perf_options::as_knobs(spec, &args.perf.options(), &raw)
        .map_err(UserError::usage)?;
    let knobs = crate::knobs::parse(spec, &raw)?;
    let mut req = CollectRequest {
        knobs,
        program: args.program,
        pid: args.pid,
        system_wide: args.system_wide,
        duration: args.duration,
        result_dir: args.result_dir,
        quiet: args.quiet,
        mmap_pages: args.mmap_pages,
        cpus: args.cpus.clone().map(|c| c.0),
        on_target: None,
    };
    let cache = crate::collect_cache::start(&cache_knobs, req.system_wide, req.pid)?;
    let Some(cache) = cache else {
        return Ok((spec.collect)(&req)?);
    };
    req.on_target = cache.step.clone();
    // The result's name is fixed now (an empty directory the analysis fills), so that the
    // cache recording can join it afterwards.
    let reserved = req.result_dir.is_none();
    if reserved {
        let path = kairos_result::next_result_dir(std::path::Path::new("."), spec.result_suffix);
        if let Err(e) = std::fs::create_dir(&path) {
            cache.finish(None)?;
            return Err(UserError::failed(format!("cannot create the result directory {}: {e}; check the current directory is writable", path.display())));
        }
        req.result_dir = Some(path);
    }
    let collected = (spec.collect)(&req);
    if let (true, Err(_), Some(p)) = (reserved, &collected, &req.result_dir) {
        // Refused before anything was recorded: remove the reservation if still empty.
        let _ = std::fs::remove_dir(p);
    }
    // Undone and recorded whether the collection succeeded or not.
    let finished = cache.finish(req.result_dir.as_deref());
    collected?;
    finished
}
