//! `kairos measure bandwidth`: the platform's memory bandwidth measured by our own triad
//! per NUMA node pair, kept per host (crates/bandwidth).

use clap::{Args, Subcommand};
use kairos_bandwidth::{measure, store, Measurement, Options};
use kairos_report::{Cell, Column, Document, Format, Section, Table};

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct MeasureArgs {
    #[command(subcommand)]
    pub what: Measure,
}

#[derive(Debug, Subcommand)]
pub enum Measure {
    /// Memory bandwidth: a triad with threads pinned to each node's CPUs on each node's memory (local and remote), checked against a copy; kept per host for the bandwidth timelines.
    Bandwidth(BandwidthArgs),
}

#[derive(Debug, Args)]
pub struct BandwidthArgs {
    /// Size of each of the three arrays, in MiB (well above the last-level cache).
    #[arg(long, default_value_t = 256)]
    pub size_mib: usize,
    /// Threads per node (default: one per CPU of the node).
    #[arg(long)]
    pub threads: Option<usize>,
    /// CPU nodes to measure from, e.g. 0,1 (default: every node with CPUs).
    #[arg(long, value_delimiter = ',')]
    pub nodes: Option<Vec<u32>>,
    /// Repetitions; the best counts.
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Print the last measurement of this host instead of measuring.
    #[arg(long)]
    pub show: bool,
    /// Do not keep the result for this host.
    #[arg(long)]
    pub no_save: bool,
    #[arg(long, default_value = "text")]
    pub format: String,
}

pub fn run(args: MeasureArgs) -> CliResult {
    match args.what {
        Measure::Bandwidth(a) => bandwidth(a),
    }
}

fn bandwidth(a: BandwidthArgs) -> CliResult {
    let format: Format = a
        .format
        .parse()
        .map_err(|e: kairos_report::ParseFormatError| UserError::usage(e.to_string()))?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    if a.show {
        let m = store::load(&host).ok_or_else(|| UserError::failed(format!("no bandwidth measured on {host} yet ({} is missing): run `kairos measure bandwidth`", store::path_for(&host).display())))?;
        print!("{}", document(&m, None).render(format));
        return Ok(());
    }
    let o = Options {
        mib_per_array: a.size_mib,
        threads: a.threads,
        nodes: a.nodes,
        reps: a.reps,
        ..Options::default()
    };
    let bar = kairos_session::spinner(format != Format::Text, "measuring bandwidth");
    let m = measure(&o, &mut |c, m| {
        bar.set_message(format!(
            "measuring bandwidth: CPUs of node {c}, memory of node {m}"
        ))
    })
    .map_err(|e| UserError::failed(e.to_string()))?;
    bar.finish_and_clear();
    let saved = if a.no_save {
        None
    } else {
        Some(store::save(&m).map_err(|e| UserError::failed(e.to_string()))?)
    };
    print!("{}", document(&m, saved.as_deref()).render(format));
    Ok(())
}

fn document(m: &Measurement, saved: Option<&std::path::Path>) -> Document {
    let mut d = Document::new("Memory bandwidth");
    let mut s = Section::new("Platform maximum");
    s.push("Host", Cell::text(m.host.clone()));
    s.push("NUMA nodes", Cell::UInt(m.nodes as u64));
    s.push("Local (sum of nodes)", Cell::float(m.local_max_gbs(), 1));
    s.push(
        "Remote (best pair)",
        m.remote_max_gbs()
            .map_or(Cell::text("none: one node"), |v| Cell::float(v, 1)),
    );
    s.push("Unit", Cell::text("GB/s (10^9 bytes a second)"));
    let pmus =
        kairos_bandwidth::counters::discover(std::path::Path::new("/sys/bus/event_source/devices"));
    s.push(
        "Bandwidth counters here",
        Cell::text(kairos_bandwidth::counters::describe(&pmus)),
    );
    if let Some(p) = saved {
        s.push("Kept in", Cell::text(p.display().to_string()));
    }
    d.push_section(s);
    let mut t = Table::new(vec![
        Column::right("CPU node"),
        Column::right("Memory node"),
        Column::left("Kind"),
        Column::right("Threads"),
        Column::right("Triad").with_unit("GB/s"),
        Column::right("Copy").with_unit("GB/s"),
    ])
    .with_title("By node pair");
    for p in &m.pairs {
        t.push_row(vec![
            Cell::UInt(p.cpu_node as u64),
            Cell::UInt(p.mem_node as u64),
            Cell::text(if p.local() { "local" } else { "remote" }),
            Cell::UInt(p.threads as u64),
            Cell::float(p.triad_gbs, 1),
            Cell::float(p.copy_gbs, 1),
        ]);
    }
    t.push_note(format!("Method: {}.", m.method()));
    for n in &m.notes {
        t.push_note(n.clone());
    }
    d.push_table(t);
    d
}
