//! `kairos selftest [--only NAME,...] [--format text|json] [--keep DIR]`: a self-check for
//! machines we do not have. Every collection this machine supports runs beside perf doing
//! the same (kairos-selftest), one line per capability; the exit status says whether
//! anything disagreed.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::error::{CliResult, UserError};

const EXIT_STATUS: &str = "Exit status: 0 when nothing disagrees (a line not available here is no disagreement), 1 when something disagrees (or the results directory cannot be made), 2 for a usage error.";

#[derive(Debug, Args)]
#[command(after_help = format!("{}\n{EXIT_STATUS}", kairos_selftest::help()))]
pub struct SelftestArgs {
    /// Run only these checks (names listed below, comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub only: Vec<String>,
    /// text (one line per capability as it is checked) or json (all at the end).
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Keep kairos's results and perf's files in this new or empty directory (default: a
    /// temporary directory, removed afterwards).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

pub fn run(args: SelftestArgs) -> CliResult {
    let json = match args.format.as_str() {
        "text" => false,
        "json" => true,
        other => {
            return Err(UserError::usage(format!(
                "unknown format '{other}' for selftest; use text or json"
            )))
        }
    };
    let kairos = std::env::current_exe().map_err(|e| {
        UserError::failed(format!("cannot find this kairos binary's own path ({e}); run it by its path, e.g. target/release/kairos selftest"))
    })?;
    let samples = kairos
        .parent()
        .map(|d| d.join("samples"))
        .unwrap_or_else(|| PathBuf::from("samples"));
    let opts = kairos_selftest::Options {
        kairos,
        samples,
        only: args.only,
        keep: args.keep,
    };
    let mut print = |l: &kairos_selftest::Line| {
        if !json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", kairos_selftest::render::text_line(l));
            let _ = out.flush();
        }
    };
    let report = kairos_selftest::run(&opts, &mut print).map_err(|e| match e {
        kairos_selftest::Error::UnknownCheck { .. } => {
            UserError::usage(format!("{e}; see kairos selftest --help"))
        }
        kairos_selftest::Error::KeepNotEmpty(_) => {
            UserError::usage(format!("{e}; give --keep a new or empty directory"))
        }
        kairos_selftest::Error::WorkDir { .. } => UserError::failed(format!(
            "{e}; give --keep a directory you may write, or set TMPDIR to one"
        )),
    })?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&kairos_selftest::render::json(&report))
                .unwrap_or_default()
        );
    } else {
        println!("{}", kairos_selftest::render::closing(&report));
    }
    match report.disagreements() {
        0 => Ok(()),
        n => {
            let (what, lines) = if n == 1 {
                ("capability disagrees", "its line gives")
            } else {
                ("capabilities disagree", "their lines give")
            };
            let marked = if json {
                "verdict \"disagrees\""
            } else {
                "DISAGREES"
            };
            Err(UserError::failed(format!(
                "{n} {what} ({marked}): {lines} both figures; run it again with --keep DIR to look at the results"
            )))
        }
    }
}
