//! `kairos collect ANALYSIS`: the analysis is looked up in the registry, its knobs are
//! checked against its declaration, and its own collect entry point does the rest. The
//! cache knobs (`-k cache-group=...`) and `--hugepages` hold for every analysis and are
//! handled here: set up before, undone and recorded into the result after.

use kairos_analysis_registry::CollectRequest;

use crate::args::CollectArgs;
use crate::error::{CliResult, UserError};

pub fn run(args: CollectArgs) -> CliResult {
    let spec = kairos_analysis_registry::find(&args.analysis)
        .ok_or_else(|| UserError::usage(kairos_analysis_registry::unknown(&args.analysis)))?;
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
    let launches = !req.program.is_empty();
    let huge = crate::collect_hugepages::start(
        args.hugepages.as_deref(),
        args.reserve.as_deref(),
        launches,
    )?;
    let cache = crate::collect_cache::start(&cache_knobs, req.system_wide, req.pid)?;
    if cache.is_none() && huge.is_none() {
        return Ok((spec.collect)(&req)?);
    }
    req.on_target = on_target(
        cache.as_ref().and_then(|c| c.step.clone()),
        huge.as_ref().map(|h| h.watch.clone()),
    );
    // The result's name is fixed now (an empty directory the analysis fills), so that the
    // cache and huge-page recordings can join it afterwards.
    let reserved = req.result_dir.is_none();
    if reserved {
        let path = kairos_result::next_result_dir(std::path::Path::new("."), spec.result_suffix);
        if let Err(e) = std::fs::create_dir(&path) {
            let undone = cache.map(|c| crate::collect_cache::finish(c, None));
            let _ = huge.map(|h| crate::collect_hugepages::finish(h, None));
            undone.transpose()?;
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
    let dir = req.result_dir.as_deref();
    let huge_done = huge
        .map(|h| crate::collect_hugepages::finish(h, dir))
        .transpose();
    let cache_done = cache
        .map(|c| crate::collect_cache::finish(c, dir))
        .transpose();
    collected?;
    huge_done?;
    cache_done.map(|_| ())
}

/// The step run on the target before it is measured: the cache group's, then the start of
/// the huge-page watch.
fn on_target(
    cache: Option<kairos_analysis_registry::TargetStep>,
    huge: Option<std::sync::Arc<kairos_run::hugepages::Watch>>,
) -> Option<kairos_analysis_registry::TargetStep> {
    if huge.is_none() {
        return cache;
    }
    Some(kairos_analysis_registry::TargetStep(std::sync::Arc::new(
        move |pid| {
            if let Some(c) = &cache {
                (c.0)(pid)?;
            }
            if let Some(w) = &huge {
                w.start(pid);
            }
            Ok(())
        },
    )))
}
