//! `kairos run [--hugepages=hugetlb|thp] [--reserve N] [-r DIR] -- PROGRAM ARGS`: runs a
//! program with malloc's huge pages switched on (or with cache ways of its own, see
//! `cmd_run_cache`). The run itself is kairos-run's; this module reads the command line
//! into its request and prints what it tells and how the run went.

use std::sync::Arc;

use kairos_run::hugepages::{self, HugeRunOutcome, HugeRunRequest, Mode};
use kairos_run::Sink;

use crate::error::CliResult;
use crate::run_args::RunArgs;
use crate::run_output::{print_exit, say};

pub fn run(args: RunArgs) -> CliResult {
    if args.cache_ways.is_some() || args.lock {
        return crate::cmd_run_cache::run(args);
    }
    let mode = Mode::parse(&args.hugepages)?;
    let req = HugeRunRequest {
        mode,
        reserve: hugepages::parse_reserve(args.reserve.as_deref(), mode)?,
        result_dir: args.result_dir,
        program: args.program,
    };
    let sink: Sink = Arc::new(say);
    let mut outcome = hugepages::run(&req, &sink)?;
    print_run(&outcome);
    if let Some(p) = outcome.result.take().transpose()? {
        println!(
            "\nResult: {}  (see `kairos compare A {}`)",
            p.display(),
            p.display()
        );
    }
    Ok(())
}

/// The run's summary; the huge-page warnings go to stderr.
fn print_run(o: &HugeRunOutcome) {
    let u = &o.usage;
    let (minflt, majflt) = (u.minor_faults, u.major_faults);
    println!("\nRun");
    println!(
        "  Elapsed:                {:.3} s (user {:.3} s, system {:.3} s)",
        o.elapsed_s, u.user_s, u.system_s
    );
    println!(
        "  Page faults:            {} ({minflt} minor, {majflt} major)",
        minflt + majflt
    );
    let (samples, hugetlb_peak, thp_peak) =
        (o.seen.samples, o.seen.hugetlb_peak_kb, o.seen.thp_peak_kb);
    println!("  /proc samples (50 ms):  {samples}");
    println!(
        "  HugetlbPages, peak:     {hugetlb_peak} kB ({} pages of 2 MiB)",
        hugetlb_peak / 2048
    );
    println!("  AnonHugePages, peak:    {thp_peak} kB");
    print_exit(o.exit);
    for w in &o.warnings {
        eprintln!("kairos: warning: {w}");
    }
}
