//! `kairos collect ANALYSIS --hugepages=hugetlb|thp [--reserve N]`: the options read into
//! kairos-run's huge-page set-up (the same as `kairos run --hugepages`), and what it tells
//! and saw printed.

use std::path::Path;
use std::sync::Arc;

use kairos_run::hugepages::{self, HugeRun, Mode};
use kairos_run::{Notice, Sink};

use crate::error::{CliResult, UserError};

/// `--reserve` without `--hugepages`.
const RESERVE_ALONE: &str =
    "--reserve goes with --hugepages=hugetlb, e.g. --hugepages=hugetlb --reserve 52";

/// Checks the options and sets everything up (None: nothing to do). Only a program
/// Kairos launches can be given malloc's tunable.
pub fn start(
    hugepages: Option<&str>,
    reserve: Option<&str>,
    launches: bool,
) -> CliResult<Option<HugeRun>> {
    let asked = match (hugepages, reserve) {
        (None, Some(_)) => return Err(UserError::usage(RESERVE_ALONE)),
        (None, None) => None,
        (Some(text), reserve) => {
            let mode = Mode::parse(text)?;
            Some((mode, hugepages::parse_reserve(reserve, mode)?))
        }
    };
    let sink: Sink = Arc::new(say);
    Ok(HugeRun::start(asked, launches, &sink)?)
}

/// As `kairos run` says it, but the tunables are the program's, not the run's.
fn say(n: &Notice) {
    match n {
        Notice::Tunables(v) => println!("Environment of the program: GLIBC_TUNABLES={v}"),
        other => crate::run_output::say(other),
    }
}

/// Restores the pool, says whether the program got huge pages, and records it in the
/// result at `dir` (when one was made).
pub fn finish(huge: HugeRun, dir: Option<&Path>) -> CliResult {
    let f = huge.finish(dir);
    println!(
        "Huge pages: HugetlbPages peak {} kB ({} pages of 2 MiB), AnonHugePages peak {} kB ({} /proc readings)",
        f.seen.hugetlb_peak_kb,
        f.seen.hugetlb_peak_kb / 2048,
        f.seen.thp_peak_kb,
        f.seen.samples
    );
    for w in &f.warnings {
        eprintln!("kairos: warning: {w}");
    }
    Ok(f.recorded?)
}
