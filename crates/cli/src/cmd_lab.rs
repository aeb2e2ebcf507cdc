//! `kairos lab`: validation on any machine. `emulate-lbr` turns an exact trace into the
//! result sampling with LBR would have recorded; `score` compares every time-assignment
//! method of such a result with the trace it came from.

use std::path::PathBuf;
use std::str::FromStr;

use clap::{Args, Subcommand};
use kairos_lab::{EmulateOptions, ScoreOptions, DEPTHS};
use kairos_model::Profile;
use kairos_report::Format;
use kairos_result::{Counts, Event, ResultDir};
use kairos_time_assignment::Method;

use crate::error::{CliResult, UserError};
use kairos_session::open;

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Emulate LBR sampling from an exact trace: `-r TRACE_DIR --interval-us N --depth 16 -o DIR`.
    EmulateLbr(EmulateArgs),
    /// Score each time-assignment method of an emulated result against its trace.
    Score(ScoreArgs),
    /// Write a synthetic sampled result of any size (labelled synthetic), to measure the viewer and reports at scale.
    Synthesize(SynthesizeArgs),
    /// Measure the time and memory of deriving a time-assignment method's points from a result (as the page's method switch does).
    Derive(DeriveArgs),
}

#[derive(Debug, Args)]
pub struct DeriveArgs {
    /// Result directory.
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub result_dir: PathBuf,
    /// Time-assignment method (default: the default method).
    #[arg(long)]
    pub method: Option<String>,
    /// text, csv or json.
    #[arg(long, default_value = "text")]
    pub format: String,
}

#[derive(Debug, Args)]
pub struct SynthesizeArgs {
    /// Number of samples.
    #[arg(long, default_value_t = 1_000_000)]
    pub samples: u64,
    /// Number of distinct leaf functions.
    #[arg(long, default_value_t = 1000)]
    pub functions: u32,
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Sampling interval of each thread in microseconds.
    #[arg(long = "interval-us", default_value_t = 1000.0)]
    pub interval_us: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Give every sample a snapshot of DEPTH synthetic branch records (user calls and returns consistent with the stacks): 8, 16, 32 or 64.
    #[arg(long, value_name = "DEPTH", num_args = 0..=1, default_missing_value = "16")]
    pub branches: Option<u32>,
    /// With --branches: records carry the cycles since the previous record.
    #[arg(long, requires = "branches")]
    pub cycles: bool,
    /// Output result directory (must not exist, or be empty).
    #[arg(short = 'o', long = "output", required = true)]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// Trace result made by `kairos collect trace`.
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub trace_dir: PathBuf,
    /// Sampling interval in microseconds of thread time.
    #[arg(long = "interval-us", required = true)]
    pub interval_us: f64,
    /// LBR entries per sample: 8, 16, 32 or 64.
    #[arg(long, default_value_t = 16)]
    pub depth: usize,
    /// Give each record the cycles since the previous one, as Skylake and later do.
    #[arg(long)]
    pub cycles: bool,
    /// Core clock (GHz) used to turn trace time into cycles.
    #[arg(long = "cpu-ghz", default_value_t = 3.0)]
    pub cpu_ghz: f64,
    /// Seed of the sampling phase.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output result directory (must not exist, or be empty).
    #[arg(short = 'o', long = "output", required = true)]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Result made by `kairos lab emulate-lbr`.
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub result_dir: PathBuf,
    /// Width of the function-share buckets in microseconds.
    #[arg(long = "bucket-us", default_value_t = 10_000.0)]
    pub bucket_us: f64,
    /// Function whose calls are the short events to find.
    #[arg(long = "event-function", default_value = kairos_lab::DEFAULT_EVENT_FUNCTION)]
    pub event_function: String,
    /// Shortest event counted, in microseconds.
    #[arg(long = "event-min-us", default_value_t = 100.0)]
    pub event_min_us: f64,
    /// Grid on which an event must be placed to count as found, in microseconds.
    #[arg(long = "event-bucket-us", default_value_t = 100.0)]
    pub event_bucket_us: f64,
    /// Methods to score, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub methods: Vec<String>,
    /// text, csv or json.
    #[arg(long, default_value = "text")]
    pub format: String,
}

pub fn run(args: LabArgs) -> CliResult {
    match args.command {
        LabCommand::EmulateLbr(a) => emulate(a),
        LabCommand::Score(a) => score(a),
        LabCommand::Synthesize(a) => synthesize(a),
        LabCommand::Derive(a) => derive(a),
    }
}

/// Microseconds from the command line to ns; `what` names the option in the error.
fn us_to_ns(us: f64, what: &str) -> CliResult<u64> {
    if us.is_finite() && us > 0.0 && us * 1e3 >= 1.0 && us < 1e12 {
        Ok((us * 1e3).round() as u64)
    } else {
        Err(UserError::usage(format!(
            "{what} {us} must be a positive number of microseconds"
        )))
    }
}

fn synthesize(a: SynthesizeArgs) -> CliResult {
    let interval_ns = us_to_ns(a.interval_us, "--interval-us")?;
    let opts = kairos_lab::ScaleOptions {
        samples: a.samples,
        functions: a.functions,
        threads: a.threads,
        interval_ns,
        seed: a.seed,
        branch_depth: a.branches.unwrap_or(0),
        branch_cycles: a.cycles,
        ..Default::default()
    };
    let bar = kairos_session::spinner(false, "synthesizing");
    let p = kairos_lab::synthesize(&opts).map_err(|e| UserError::usage(e.to_string()))?;
    let mut dir = ResultDir::create(&a.output).map_err(|e| {
        UserError::failed(format!(
            "cannot create the result {}: {e}; choose a new directory with -o",
            a.output.display()
        ))
    })?;
    let m = dir.manifest_mut();
    m.kind = Some(kairos_analysis_registry::sampled_profile().name.into());
    m.command_line = Some(std::env::args().collect());
    m.event = Some(Event {
        name: "synthetic".into(),
        reason: Some("made by `kairos lab synthesize`; nothing was measured".into()),
    });
    m.counts = Some(Counts::new(p.samples.len() as u64, p.losses));
    m.duration_secs = p.time_span().map(|(x, y)| (y - x) as f64 / 1e9);
    let branches = match &p.branch_info {
        Some(b) => format!(
            ", with {} synthetic branch records ({}-deep snapshots{})",
            p.branches.len(),
            b.depth,
            if b.has_cycles { ", cycles" } else { "" }
        ),
        None => String::new(),
    };
    m.notes.insert(0, format!(
        "synthetic: {} samples of {} leaf functions on {} threads{branches} made by `kairos lab synthesize` (seed {}); no program ran",
        p.samples.len(), a.functions, a.threads, a.seed
    ));
    bar.set_message(format!("writing {}", a.output.display()));
    dir.save_manifest().map_err(|e| {
        UserError::failed(format!(
            "cannot write the result {}: {e}",
            a.output.display()
        ))
    })?;
    kairos_result::write_profile(&mut dir, &p).map_err(|e| {
        UserError::failed(format!(
            "cannot write the result {}: {e}",
            a.output.display()
        ))
    })?;
    bar.finish_and_clear();
    println!(
        "Synthetic result: {} ({} samples, {} branch records)",
        dir.path().display(),
        p.samples.len(),
        p.branches.len()
    );
    Ok(())
}

fn derive(a: DeriveArgs) -> CliResult {
    let method = match &a.method {
        Some(m) => Method::from_str(m).map_err(|e| UserError::usage(e.to_string()))?,
        None => Method::DEFAULT,
    };
    let format = Format::from_str(&a.format).map_err(|e| UserError::usage(e.to_string()))?;
    let t0 = std::time::Instant::now();
    let (_dir, p) = open(&a.result_dir)?;
    let load_s = t0.elapsed().as_secs_f64();
    let m = kairos_lab::measure_derive(&p, method, load_s).map_err(|e| {
        UserError::failed(format!(
            "cannot derive the {method} points of {}: {e}",
            a.result_dir.display()
        ))
    })?;
    print!("{}", m.to_document().render(format));
    Ok(())
}

fn is_emulated(dir: &ResultDir, p: &Profile) -> bool {
    p.branch_info.as_ref().is_some_and(|b| b.emulated)
        || dir.manifest().extra.contains_key("emulation")
}

fn emulate(a: EmulateArgs) -> CliResult {
    let interval_ns = us_to_ns(a.interval_us, "--interval-us")?;
    if !DEPTHS.contains(&a.depth) {
        return Err(UserError::usage(format!(
            "--depth {} is not an LBR depth a CPU has; use 8, 16 (Nehalem to Haswell, AMD Zen 4), 32 (Skylake and later) or 64",
            a.depth
        )));
    }
    if !(a.cpu_ghz.is_finite() && a.cpu_ghz > 0.0) {
        return Err(UserError::usage(format!(
            "--cpu-ghz {} must be a positive number",
            a.cpu_ghz
        )));
    }
    let (tdir, trace) = open(&a.trace_dir)?;
    let shown = a.trace_dir.display();
    if is_emulated(&tdir, &trace) {
        return Err(UserError::failed(format!(
            "{shown} is already an emulated result; emulate-lbr needs an exact trace from `kairos collect trace`"
        )));
    }
    if trace.calls.is_empty() {
        return Err(UserError::failed(format!(
            "{shown} is a sampled result; emulate-lbr needs an exact trace from `kairos collect trace`"
        )));
    }
    let opts = EmulateOptions {
        cycles: a.cycles,
        cpu_ghz: a.cpu_ghz,
        seed: a.seed,
        ..EmulateOptions::new(interval_ns, a.depth)
    };
    let emulated = kairos_lab::emulate_lbr_with(&trace, &opts)
        .map_err(|e| UserError::failed(format!("cannot emulate LBR from {shown}: {e}")))?;
    let mut dir = ResultDir::create(&a.output).map_err(|e| {
        UserError::failed(format!(
            "cannot create the result {}: {e}; choose a new directory with -o",
            a.output.display()
        ))
    })?;
    write_manifest(&mut dir, tdir.manifest(), &a, &emulated)?;
    kairos_result::write_profile(&mut dir, &emulated).map_err(|e| {
        UserError::failed(format!(
            "cannot write the result {}: {e}",
            a.output.display()
        ))
    })?;
    check_round_trip(&dir, &emulated)?;
    kairos_profile_report::print_summary(&dir, &emulated);
    println!("Score it: kairos lab score -r {}", dir.path().display());
    Ok(())
}

/// The trace's manifest, re-labelled: a sampled result, emulated, saying so in a note
/// that every text report prints and in an `emulation` section scripts can read.
fn write_manifest(
    dir: &mut ResultDir,
    trace: &kairos_result::Manifest,
    a: &EmulateArgs,
    p: &Profile,
) -> CliResult {
    let overflowed = p.branch_info.as_ref().map_or(0, |b| b.overflowed_snapshots);
    let m = dir.manifest_mut();
    *m = trace.clone();
    m.tables.clear();
    m.kind = Some(kairos_analysis_registry::sampled_profile().name.into());
    m.command_line = Some(std::env::args().collect());
    m.event = Some(Event {
        name: "cpu-clock (emulated)".into(),
        reason: Some("emulated from an exact trace by `kairos lab emulate-lbr`".into()),
    });
    m.counts = Some(Counts::new(p.samples.len() as u64, p.losses));
    m.knobs
        .insert("sampling-interval-us".into(), a.interval_us.to_string());
    m.knobs.insert("branch-records".into(), "emulated".into());
    m.knobs.insert("lbr-depth".into(), a.depth.to_string());
    m.knobs.insert("lbr-cycles".into(), a.cycles.to_string());
    let note = format!(
        "emulated: these samples and branch records were emulated from the exact trace {} by `kairos lab emulate-lbr` \
         ({}-deep user call+return LBR{}, every {} us, seed {}); no hardware recorded them. {} of {} snapshots overflowed \
         (more calls and returns between two samples than the LBR holds).",
        a.trace_dir.display(),
        a.depth,
        if a.cycles { format!(" with cycles at {} GHz", a.cpu_ghz) } else { String::new() },
        a.interval_us,
        a.seed,
        overflowed,
        p.samples.len()
    );
    m.notes.insert(0, note);
    m.extra.insert(
        "emulation".into(),
        serde_json::json!({
            "emulated": true,
            "from_trace": a.trace_dir.display().to_string(),
            "interval_ns": (a.interval_us * 1e3).round() as u64,
            "depth": a.depth,
            "cycles": a.cycles,
            "cpu_ghz": a.cpu_ghz,
            "seed": a.seed,
            "overflowed_snapshots": overflowed,
        }),
    );
    dir.save_manifest().map_err(|e| {
        UserError::failed(format!(
            "cannot write the result {}: {e}",
            dir.path().display()
        ))
    })
}

/// `score` needs the calls and branch records back; say so plainly if this result store
/// cannot keep them rather than leave a result that cannot be scored.
fn check_round_trip(dir: &ResultDir, p: &Profile) -> CliResult {
    let back = kairos_result::read_profile(
        &ResultDir::open(dir.path()).map_err(|e| UserError::failed(e.to_string()))?,
    )
    .map_err(|e| {
        UserError::failed(format!(
            "the result {} does not read back: {e}",
            dir.path().display()
        ))
    })?;
    if back.calls.len() != p.calls.len() || back.branches.len() != p.branches.len() {
        return Err(UserError::failed(format!(
            "the result {} lost its {} (this build's result store does not save them); it cannot be scored",
            dir.path().display(),
            if back.calls.len() != p.calls.len() { "traced calls" } else { "branch records" }
        )));
    }
    Ok(())
}

fn score(a: ScoreArgs) -> CliResult {
    let format = Format::from_str(&a.format).map_err(|e| UserError::usage(e.to_string()))?;
    let methods = if a.methods.is_empty() {
        Method::ALL.to_vec()
    } else {
        a.methods
            .iter()
            .map(|m| Method::from_str(m))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| UserError::usage(e.to_string()))?
    };
    let opts = ScoreOptions {
        bucket_ns: us_to_ns(a.bucket_us, "--bucket-us")?,
        event_function: a.event_function.clone(),
        event_min_ns: us_to_ns(a.event_min_us, "--event-min-us")?,
        event_bucket_ns: us_to_ns(a.event_bucket_us, "--event-bucket-us")?,
        methods,
    };
    let (dir, profile) = open(&a.result_dir)?;
    let shown = a.result_dir.display();
    if !is_emulated(&dir, &profile) {
        return Err(UserError::failed(format!(
            "{shown} is not an emulated result; `kairos lab score` compares the time-assignment methods with the trace an \
             emulated result came from: make one with `kairos lab emulate-lbr -r TRACE_DIR --interval-us N -o DIR`"
        )));
    }
    if profile.calls.is_empty() {
        return Err(UserError::failed(format!(
            "{shown} has lost the traced calls it was emulated from; emulate it again with `kairos lab emulate-lbr`"
        )));
    }
    let table = kairos_lab::score_with(&profile, &opts)
        .map_err(|e| UserError::failed(format!("cannot score {shown}: {e}")))?;
    match format {
        Format::Text => {
            print!("{}", table.to_document(&describe(&dir, &profile)).to_text());
            print_notes(&dir);
        }
        f => print!("{}", table.to_table().render(f)),
    }
    Ok(())
}

/// One line on the emulation, from the result's branch info.
fn describe(dir: &ResultDir, p: &Profile) -> String {
    let interval = dir
        .manifest()
        .knobs
        .get("sampling-interval-us")
        .map_or_else(|| "?".into(), |s| format!("{s} us"));
    match &p.branch_info {
        Some(b) => format!(
            "{}-deep {}{}, every {interval}; {} of {} snapshots overflowed",
            b.depth,
            b.filter,
            if b.has_cycles { " with cycles" } else { "" },
            b.overflowed_snapshots,
            p.samples.len()
        ),
        None => format!("every {interval}"),
    }
}

fn print_notes(dir: &ResultDir) {
    let notes = &dir.manifest().notes;
    if !notes.is_empty() {
        println!("\nNotes:");
        for n in notes {
            println!("  - {n}");
        }
    }
}
