//! Cache ways of a program's own, through resctrl, for `kairos run --cache-ways` and
//! `kairos collect -k cache-group=...`: the group is planned, applied with a journal and
//! undone in one place ([`group`]), its occupancy recorded by one monitor ([`monitor`]);
//! [`run`] and [`collect`] are the two stories that use them.

mod collect;
mod group;
mod launch;
mod llc;
mod monitor;
mod run;

pub use collect::{CacheFinished, CacheKnobs, CacheRun};
pub use llc::LlcFigures;
pub use monitor::FirstPeakLast;
pub use run::{run, CacheRunOutcome, CacheRunRequest, OccupancySummary};

use std::path::Path;

use kairos_resctrl::mask;
use kairos_resctrl::topology::CacheTopology;

use crate::Error;

/// Where resctrl is mounted, unless told otherwise.
pub const DEFAULT_RESCTRL_ROOT: &str = kairos_resctrl::DEFAULT_ROOT;

/// `--cache-ways N`: from 1 to 64.
pub fn parse_ways(text: &str) -> Result<u32, Error> {
    text.parse::<u32>()
        .ok()
        .filter(|n| (1..=64).contains(n))
        .ok_or_else(|| Error::BadWays(text.to_string()))
}

/// `--cpus LIST`: a CPU list like `2` or `0-3,8`, of CPUs a CPU set can hold.
pub fn parse_cpus(text: &str) -> Result<Vec<u32>, Error> {
    mask::parse_cpu_list(text)
        .ok()
        .filter(|v| !v.is_empty() && v.iter().all(|&c| c < libc::CPU_SETSIZE as u32))
        .ok_or_else(|| Error::BadCpus(text.to_string()))
}

/// The CPU-to-cache map that belongs to `root`: the live one only for the live tree.
fn topology(root: &Path, cpu_root: Option<&Path>) -> CacheTopology {
    match cpu_root {
        Some(p) => CacheTopology::read(p),
        None if root == Path::new(DEFAULT_RESCTRL_ROOT) => {
            CacheTopology::read(Path::new("/sys/devices/system/cpu"))
        }
        None => CacheTopology::default(),
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
