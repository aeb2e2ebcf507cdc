//! Command-line grammar. Option names follow perf (`-p`, `-a`, `-d`) and VTune (`-r`, `-k`).

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "kairos",
    version,
    about = "Kairos: high-resolution time-series performance analysis for Linux"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Text output: show every table cell whole (a cell longer than 60 characters is
    /// otherwise cut with …); sentences are never cut, they wrap to the terminal's width.
    #[arg(long, global = true)]
    pub wide: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Collect a result: `kairos collect ANALYSIS [-r DIR] [-k NAME=VALUE]... -- PROGRAM ARGS` (analyses listed in `collect --help`)
    Collect(CollectArgs),
    /// Turn a perf.data file recorded by perf into a result.
    Import(ImportArgs),
    /// Print a report of a result; the reports of each analysis are listed in `report --help`.
    Report(ReportArgs),
    /// List what this machine can measure and, for what it cannot, why.
    Info(InfoArgs),
    /// Validation lab: emulate LBR from an exact trace, score the time-assignment methods.
    Lab(crate::cmd_lab::LabArgs),
    /// Write a result for another viewer: firefox, chrome, pprof, collapsed or speedscope.
    Export(crate::cmd_export::ExportArgs),
    /// Run a program with malloc on huge pages (--hugepages=hugetlb|thp [--reserve N]) and check it got them,
    /// or with cache ways of its own (--cache-ways N [--level L2|L3] [--cpus LIST] [--lock]).
    Run(crate::run_args::RunArgs),
    /// Compare two results: run time, kernel-time share, page faults, allocated bytes, ...
    Compare(crate::cmd_compare::CompareArgs),
    /// Open results in the browser: timeline, trees, branch records, counters, comparison.
    View(crate::cmd_view::ViewArgs),
    /// Measure what the platform can do at most: `kairos measure bandwidth`.
    Measure(crate::cmd_measure::MeasureArgs),
    /// Cache allocation (resctrl): capabilities, groups, which ways each CPU may fill.
    Cache(crate::cmd_cache::CacheArgs),
    /// Check every collection this machine supports against perf doing the same, one line per capability; exit status 1 when something disagrees.
    Selftest(crate::cmd_selftest::SelftestArgs),
    /// Copy results into the fleet layout query engines partition on (TABLE/host=/date=/result=/, Parquet; docs/SCHEMA.md).
    Publish(crate::cmd_publish::PublishArgs),
    /// SQL over many results' tables (DataFusion), with views for the common questions: `kairos query top_functions --root ROOT`.
    Query(crate::cmd_query::QueryArgs),
    /// Continuous low-rate profiling in windows, sent to an OpenTelemetry Collector (OTLP) or a pprof backend (Pyroscope, Parca).
    Agent(crate::cmd_agent::AgentArgs),
}

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Analysis to run; the list, with each one's knobs, is below.
    pub analysis: String,
    /// Result directory (default: the next free rNNN<suffix> in the current directory, the suffix naming the analysis).
    #[arg(short = 'r', long = "result-dir")]
    pub result_dir: Option<PathBuf>,
    /// Stop collecting after this many seconds.
    #[arg(short = 'd', long = "duration")]
    pub duration: Option<f64>,
    /// Knob NAME=VALUE of the analysis (listed below); repeatable.
    #[arg(short = 'k', long = "knob", value_name = "NAME=VALUE")]
    pub knobs: Vec<String>,
    /// Attach to every thread of a running process.
    #[arg(short = 'p', long = "pid", conflicts_with = "system_wide")]
    pub pid: Option<i32>,
    /// Collect system-wide, on every CPU.
    #[arg(short = 'a', long = "all-cpus")]
    pub system_wide: bool,
    /// Do not show a progress bar.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Ring buffer per CPU of the sampling and tracing analyses, as perf record -m: a power of two of pages, or a size (512K, 4M); a bigger one loses fewer records in bursts.
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES|SIZE", value_parser = crate::mmap_pages::parse)]
    pub mmap_pages: Option<usize>,
    /// Sample only on these CPUs, as perf record -C (e.g. 0-3,8).
    #[arg(short = 'C', long = "cpu", value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
    #[command(flatten)]
    pub perf: PerfArgs,
    /// Launch the program with malloc's huge pages: hugetlb (2 MiB pool pages,
    /// GLIBC_TUNABLES=glibc.malloc.hugetlb=2) or thp (transparent huge pages, =1), set in
    /// the program's environment only; the result says whether it really got them.
    #[arg(long = "hugepages", value_name = "hugetlb|thp")]
    pub hugepages: Option<String>,
    /// With --hugepages=hugetlb: make sure this many 2 MiB pages are free in the pool while
    /// the program runs (restored afterwards; see `kairos report hugepages`).
    #[arg(long = "reserve", value_name = "N")]
    pub reserve: Option<String>,
    /// Program to launch and its arguments (after `--`).
    #[arg(last = true)]
    pub program: Vec<String>,
}

/// The CPUs of `-C`: one value (clap would take a bare `Vec` for several).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<i32>);

/// `-C 0-3,8`: the kernel's CPU list syntax.
fn parse_cpus(s: &str) -> Result<CpuList, String> {
    let bad = || format!("'{s}' is not a CPU list such as 0-3,8");
    let v = kairos_platform::numa::parse_cpulist(s).ok_or_else(bad)?;
    if v.is_empty() {
        return Err(bad());
    }
    v.into_iter()
        .map(|c| i32::try_from(c).map_err(|_| bad()))
        .collect::<Result<_, _>>()
        .map(CpuList)
}

/// perf record's spellings of three knobs (see `crate::perf_options`).
#[derive(Debug, Args)]
pub struct PerfArgs {
    /// Samples per second, as perf record -F (the knob sampling-interval-us).
    #[arg(short = 'F', long = "freq", value_name = "HZ")]
    pub freq: Option<u64>,
    /// Sampling event, as perf record -e: cpu-clock or cycles (the knob event).
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    pub event: Option<String>,
    /// Stack unwinding, as perf record --call-graph: fp or dwarf (the knob stack-unwinding).
    #[arg(long = "call-graph", value_name = "fp|dwarf")]
    pub call_graph: Option<String>,
}

impl PerfArgs {
    pub fn options(&self) -> crate::perf_options::PerfOptions {
        crate::perf_options::PerfOptions {
            freq: self.freq,
            event: self.event.clone(),
            call_graph: self.call_graph.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// perf.data file recorded by `perf record` (file or pipe mode, compressed or not), or
    /// `-` for standard input: `perf record -o - -- PROG | kairos import -`.
    pub file: PathBuf,
    /// Result directory (default: the next free rNNNhs in the current directory).
    #[arg(short = 'r', long = "result-dir")]
    pub result_dir: Option<PathBuf>,
    /// Look for binaries under this directory first, as perf's --symfs.
    #[arg(long)]
    pub symfs: Option<PathBuf>,
    /// Directory holding perf-PID.map files (default /tmp).
    #[arg(long = "perf-map-dir")]
    pub perf_map_dirs: Vec<PathBuf>,
    /// Directory of separate debug files (default /usr/lib/debug).
    #[arg(long = "debug-dir")]
    pub debug_dirs: Vec<PathBuf>,
    /// perf build-id cache to search by build id, or a `perf archive` tarball (unpacked
    /// for the import); before ~/.debug, which is always searched. Repeatable.
    #[arg(long = "buildid-dir", value_name = "DIR|TARBALL")]
    pub buildid_dirs: Vec<PathBuf>,
    /// kallsyms file for kernel symbols (default /proc/kallsyms when the file was recorded on this kernel).
    #[arg(long)]
    pub kallsyms: Option<PathBuf>,
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Report to print: one of the result's analysis, listed below.
    pub report: String,
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub result_dir: PathBuf,
    /// process, module, function, callstack, thread or cpu.
    #[arg(long = "group-by")]
    pub group_by: Option<String>,
    /// START:END in seconds from the first sample (either side may be empty).
    #[arg(long = "time-range")]
    pub time_range: Option<String>,
    /// text, csv or json.
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Rows to show (0 = all).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Timeline bucket width in milliseconds.
    #[arg(long = "bucket-ms")]
    pub bucket_ms: Option<f64>,
    /// hotspots, timeline: give branch records a time and report on them as extra points:
    /// none (plain sampling), equal, ratio, proportional (the paper's methods 1-3), cycles,
    /// segments, nesting, visits, covered (ours; the page's default).
    #[arg(long = "time-assignment")]
    pub time_assignment: Option<String>,
    /// `report branches`: the sample to show, by index in time order (from 0).
    #[arg(long = "sample", conflicts_with = "time")]
    pub sample: Option<usize>,
    /// `report branches`: the sample with branch records nearest this many seconds after the first sample.
    #[arg(long = "time")]
    pub time: Option<f64>,
    /// Which event of a recording of several to report on (e.g. instructions); default:
    /// the first event that has samples. `report summary` lists them.
    #[arg(long = "event")]
    pub event: Option<String>,
    /// hotspots, top-down, timeline: only the samples of these processes (e.g. 123,456), as perf report --pid.
    #[arg(long = "pid", value_name = "PIDS", value_parser = parse_ids)]
    pub pids: Option<Ids>,
    /// hotspots, top-down, timeline: only these threads, as perf report --tid.
    #[arg(long = "tid", value_name = "TIDS", value_parser = parse_ids)]
    pub tids: Option<Ids>,
    /// hotspots, top-down, timeline: only threads or processes of these names (a thread's last name), as perf report --comm.
    #[arg(long = "comm", value_name = "NAMES", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// hotspots, top-down, timeline: only samples taken on these CPUs (e.g. 0-3,8), as perf report --cpu.
    #[arg(long = "cpu", value_name = "LIST", value_parser = parse_cpus)]
    pub cpus: Option<CpuList>,
}

/// Process or thread ids of a report filter: one value (clap would take a bare `Vec`
/// for several).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids(pub Vec<i32>);

/// `--pid 12,345`.
fn parse_ids(s: &str) -> Result<Ids, String> {
    let v: Result<Vec<i32>, _> = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<i32>()
                .map_err(|_| format!("'{s}' is not a list of ids such as 12,345"))
        })
        .collect();
    v.map(Ids)
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// text or json.
    #[arg(long, default_value = "text")]
    pub format: String,
}

/// The command line, with the analyses, their knobs and reports listed from the registry.
pub fn parse() -> Result<Cli, clap::Error> {
    let mut analyses = String::from("Analyses:\n");
    let mut reports = String::from("Reports, by the analysis that made the result:\n");
    for a in kairos_analysis_registry::ANALYSES {
        analyses.push_str(&format!("  {:<20} {}\n", a.name, a.summary));
        for k in a.knobs {
            analyses.push_str(&format!(
                "      -k {}=... (default {}): {}\n",
                k.name, k.default, k.help
            ));
        }
        reports.push_str(&format!("  {}:\n", a.name));
        for r in a.reports {
            reports.push_str(&format!("      {:<16} {}\n", r.name, r.help));
        }
    }
    reports.push_str("  any result:\n");
    for r in kairos_analysis_registry::ANY_RESULT {
        reports.push_str(&format!("      {:<16} {}\n", r.spec.name, r.spec.help));
    }
    let cmd = Cli::command()
        .mut_subcommand("collect", |c| c.after_help(analyses))
        .mut_subcommand("report", |c| c.after_help(reports));
    Cli::from_arg_matches(&cmd.try_get_matches()?)
}
