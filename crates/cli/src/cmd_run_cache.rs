//! `kairos run --cache-ways N [--level L2|L3] [--cpus LIST] [--lock] -- PROGRAM`: the
//! program in a resctrl group of its own, run by kairos-run; this module reads the command
//! line into its request and prints the run's summary.

use std::sync::Arc;

use kairos_run::cache::{self, CacheRunOutcome, CacheRunRequest};
use kairos_run::Sink;

use crate::error::{CliResult, UserError};
use crate::run_args::RunArgs;
use crate::run_output::{print_exit, say};

pub fn run(args: RunArgs) -> CliResult {
    let req = request(args)?;
    let sink: Sink = Arc::new(say);
    let mut outcome = cache::run(&req, &sink)?;
    print_run(&outcome);
    if let Some(p) = outcome.result.take().transpose()? {
        println!("\nResult: {}", p.display());
    }
    Ok(outcome.restored()?)
}

/// The command line as kairos-run's request.
fn request(args: RunArgs) -> CliResult<CacheRunRequest> {
    if args.hugepages != "none" || args.reserve.is_some() {
        return Err(UserError::usage(
            "--cache-ways cannot be combined with --hugepages/--reserve yet; run one at a time",
        ));
    }
    let Some(ways) = args.cache_ways.as_deref() else {
        return Err(UserError::usage(
            "--lock needs --cache-ways N: the number of ways to pseudo-lock",
        ));
    };
    Ok(CacheRunRequest {
        ways: cache::parse_ways(ways)?,
        level: args.level,
        cpus: args.cpus.as_deref().map(cache::parse_cpus).transpose()?,
        lock: args.lock,
        resctrl_root: args.resctrl_root,
        cpu_root: args.cpu_root,
        interval_ms: args.interval_ms,
        result_dir: args.result_dir,
        program: args.program,
    })
}

/// What was undone, then the run's summary.
fn print_run(o: &CacheRunOutcome) {
    for l in &o.journal {
        println!("Cache: {l}");
    }
    println!("\nRun");
    println!("  Elapsed:                {:.3} s", o.elapsed_s);
    print_exit(o.exit);
    if let Some(occ) = &o.occupancy {
        println!(
            "  Occupancy readings:     {} every {} ms ({} with a value)",
            occ.readings, occ.every_ms, occ.with_value
        );
        if let Some(k) = occ.kib {
            println!(
                "  LLC occupancy:          first {} KiB, peak {} KiB, last {} KiB",
                k.first, k.peak, k.last
            );
        }
        if let Some(mb_s) = occ.bandwidth_mb_s {
            println!("  Memory bandwidth:       {mb_s:.1} MB/s (mbm_total_bytes)");
        }
    }
    if let Some(l) = &o.llc {
        println!(
            "  LLC misses:             {} (LLC-load-misses, program and its threads)",
            kairos_report::thousands(l.total)
        );
        println!(
            "  LLC misses per second:  {:.0} average, {:.0} at the peak tick",
            l.per_second, l.peak_per_second
        );
    }
    for n in &o.notes {
        println!("  Note:                   {n}");
    }
}
