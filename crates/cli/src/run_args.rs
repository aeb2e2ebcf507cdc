//! The command line of `kairos run`, read by `cmd_run` (huge pages) and `cmd_run_cache`
//! (cache ways).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// hugetlb (2 MiB pool pages via GLIBC_TUNABLES=glibc.malloc.hugetlb=2), thp
    /// (transparent huge pages, glibc.malloc.hugetlb=1) or none (a plain baseline run).
    #[arg(long = "hugepages", default_value = "none")]
    pub hugepages: String,
    /// Make sure this many 2 MiB pages are free in the pool while the program runs
    /// (raises /proc/sys/vm/nr_hugepages, restored afterwards). See `kairos report hugepages`.
    #[arg(long = "reserve", value_name = "N")]
    pub reserve: Option<String>,
    /// Write a result (manifest only) here, for `kairos compare`.
    #[arg(short = 'r', long = "result-dir")]
    pub result_dir: Option<PathBuf>,
    /// Give the program N cache ways of its own, exclusive, through resctrl (see `kairos
    /// cache`); its occupancy is recorded and every change restored when it ends.
    #[arg(long = "cache-ways", value_name = "N")]
    pub cache_ways: Option<String>,
    /// Cache level for --cache-ways: L3 (servers) or L2 (e.g. Atom); L3CODE/L3DATA under CDP.
    #[arg(long = "level", default_value = "L3")]
    pub level: String,
    /// With --cache-ways: run the program on these CPUs, which also join its group.
    #[arg(long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// With --cache-ways: pseudo-lock the ways in the cache of the first --cpus CPU
    /// (kernel support: Broadwell-X, Goldmont only); the program gets /dev/pseudo_lock/NAME
    /// in $KAIROS_PSEUDO_LOCK.
    #[arg(long = "lock")]
    pub lock: bool,
    /// With --cache-ways: where resctrl is mounted.
    #[arg(long = "resctrl-root", default_value = kairos_run::cache::DEFAULT_RESCTRL_ROOT)]
    pub resctrl_root: PathBuf,
    /// CPU directory with cpuN/cache/indexK (tests).
    #[arg(long = "cpu-root", hide = true)]
    pub cpu_root: Option<PathBuf>,
    /// With --cache-ways: milliseconds between occupancy readings.
    #[arg(long = "interval-ms", default_value = "100")]
    pub interval_ms: u64,
    /// Program to run and its arguments (after `--`).
    #[arg(last = true)]
    pub program: Vec<String>,
}
