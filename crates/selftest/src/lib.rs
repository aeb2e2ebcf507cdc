//! `kairos selftest`: a self-check for machines we do not have. On whatever machine it runs
//! on, every collection that machine supports runs side by side with perf doing the same
//! (or, where perf has no equivalent, against the sample program's own account), and each
//! capability gets one line: agrees (with the figures), disagrees (with both figures), or
//! not available here and why. Kairos runs as a subprocess (the binary given in
//! [`Options::kairos`]), perf too, on the bundled sample programs; results go to a
//! temporary directory removed afterwards unless kept.
//!
//! Modules: `checks` (one per capability), `verdict` (figures, tolerances, verdicts),
//! `perf_text` (reading perf's output), `programs` (reading the sample programs' output),
//! `render` (text and JSON), `context` (running things), `shared_runs` (the runs more than
//! one check reads).

mod checks;
mod context;
pub mod perf_text;
pub mod programs;
pub mod render;
mod shared_runs;
pub mod verdict;

use std::path::PathBuf;
use std::time::Instant;

pub use checks::{CheckInfo, CHECKS};
pub use verdict::{Figure, Line, Tolerance, Unit, Verdict};

/// What stops the self-check before any line: the command line or the results directory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("there is no check '{name}'; the checks are {known}")]
    UnknownCheck { name: String, known: String },
    #[error("{path} cannot hold the results: {source}")]
    WorkDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0} is not empty: the results would mix with what is there")]
    KeepNotEmpty(PathBuf),
}

/// What to run, and with what.
#[derive(Debug, Clone)]
pub struct Options {
    /// The kairos binary to check.
    pub kairos: PathBuf,
    /// The folder of the sample programs (`samples/` beside the binary).
    pub samples: PathBuf,
    /// Checks to run, by name; empty for all.
    pub only: Vec<String>,
    /// Keep the results in this directory (new or empty) instead of a temporary one.
    pub keep: Option<PathBuf>,
}

/// Every line, in check order.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub lines: Vec<Line>,
    pub seconds: f64,
    /// Where the results were kept, if they were.
    pub kept: Option<PathBuf>,
    /// `perf version`, when perf runs here.
    pub perf: Option<String>,
}

impl Report {
    pub fn disagreements(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.verdict == Verdict::Disagrees)
            .count()
    }
}

/// The checks `only` names (all when empty), in check order.
pub fn select(only: &[String]) -> Result<Vec<&'static CheckInfo>, Error> {
    for name in only {
        if !CHECKS.iter().any(|c| c.name == name) {
            return Err(Error::UnknownCheck {
                name: name.clone(),
                known: checks::names().join(", "),
            });
        }
    }
    Ok(CHECKS
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| o == c.name))
        .collect())
}

/// The list of checks for `--help`: one per line, name and what it compares.
pub fn help() -> String {
    let mut s = String::from("Checks (--only takes their names):\n");
    for c in CHECKS {
        s.push_str(&format!("  {:<17} {}\n", c.name, c.compares));
    }
    s
}

/// Runs the selected checks one after the other (they time programs, so never at once),
/// calling `on_line` as each line is known.
pub fn run(opts: &Options, on_line: &mut dyn FnMut(&Line)) -> Result<Report, Error> {
    let selected = select(&opts.only)?;
    let started = Instant::now();
    // The temporary directory lives until the end of this function.
    let (work, _temp) = match &opts.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| Error::WorkDir {
                path: dir.clone(),
                source,
            })?;
            let mut entries = std::fs::read_dir(dir).map_err(|source| Error::WorkDir {
                path: dir.clone(),
                source,
            })?;
            if entries.next().is_some() {
                return Err(Error::KeepNotEmpty(dir.clone()));
            }
            (
                std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()),
                None,
            )
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("kairos-selftest-")
                .tempdir()
                .map_err(|source| Error::WorkDir {
                    path: std::env::temp_dir(),
                    source,
                })?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let mut ctx = context::Ctx {
        kairos: opts.kairos.clone(),
        samples: opts.samples.clone(),
        work,
        caps: kairos_platform::detect(),
        perf: context::find_perf(),
        kernel_runs: None,
        pmu_memory: None,
    };
    // The bandwidth timeline's sources are kairos-bandwidth's to judge (as `kairos info`).
    ctx.caps.items.push(kairos_bandwidth::record::capability(
        &kairos_bandwidth::record::Places::default(),
    ));
    let mut lines = Vec::new();
    for c in selected {
        let line = (c.run)(&mut ctx);
        on_line(&line);
        lines.push(line);
    }
    Ok(Report {
        lines,
        seconds: started.elapsed().as_secs_f64(),
        kept: opts.keep.clone(),
        perf: ctx.perf.ok(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_known_checks_and_keeps_check_order() {
        let picked =
            select(&["watchpoints".to_string(), "cpu-clock".to_string()]).unwrap_or_default();
        assert_eq!(
            picked.iter().map(|c| c.name).collect::<Vec<_>>(),
            ["cpu-clock", "watchpoints"]
        );
        assert_eq!(select(&[]).map(|v| v.len()).unwrap_or(0), CHECKS.len());
        let e = select(&["cycle".to_string()])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("there is no check 'cycle'; the checks are cpu-clock, cycles, lbr"),
            "{e}"
        );
    }

    #[test]
    fn help_lists_every_check() {
        let h = help();
        for c in CHECKS {
            assert!(
                h.contains(&format!("  {:<17} {}", c.name, c.compares)),
                "{h}"
            );
        }
    }

    #[test]
    fn a_kept_directory_must_be_new_or_empty() {
        let Ok(t) = tempfile::tempdir() else { return };
        assert!(std::fs::write(t.path().join("something"), "x").is_ok());
        let opts = Options {
            kairos: PathBuf::from("/nonexistent/kairos"),
            samples: PathBuf::from("/nonexistent"),
            only: vec!["watchpoints".into()],
            keep: Some(t.path().to_path_buf()),
        };
        let e = run(&opts, &mut |_| {})
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.ends_with("is not empty: the results would mix with what is there"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_sample_program_is_not_available_with_where_it_was_looked_for() {
        let Ok(t) = tempfile::tempdir() else { return };
        let opts = Options {
            kairos: PathBuf::from("/nonexistent/kairos"),
            samples: t.path().join("samples"),
            only: vec!["address-sampling".into()],
            keep: Some(t.path().join("kept")),
        };
        let r = run(&opts, &mut |_| {});
        assert!(r.is_ok(), "{r:?}");
        let Ok(r) = r else { return };
        let l = &r.lines[0];
        // Where address sampling exists here, the program is what is missing; elsewhere
        // kairos's reason comes first. Either way: not available, and why.
        assert_eq!(l.verdict, Verdict::NotAvailable, "{l:?}");
        assert!(
            l.summary.contains("three_arrays is not at") || l.summary.starts_with("kairos: "),
            "{}",
            l.summary
        );
        assert!(t.path().join("kept").is_dir());
    }
}
