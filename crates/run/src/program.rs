//! What every run shares before and after the program: the program found before anything
//! is changed, the result directory that is removed again when the run fails before the
//! program ran, and the manifest that says what ran and how it ended.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use kairos_result::{Manifest, ResultDir, TargetExit};

use crate::Error;

/// The program to start (the first word of `program`), checked to exist: a path that is a
/// file, or a command on PATH (found as exec would, by the collectors' own lookup).
/// `example` is the command line the refusal of an empty one shows.
pub(crate) fn program_of<'a>(
    program: &'a [String],
    example: &'static str,
) -> Result<&'a str, Error> {
    let first = program.first().ok_or(Error::NothingToRun { example })?;
    if kairos_session::resolve_program(Path::new(first)).is_none() {
        return Err(Error::ProgramNotFound(first.clone()));
    }
    Ok(first)
}

/// The arguments after the program's name.
pub(crate) fn args_of(program: &[String]) -> &[String] {
    program.get(1..).unwrap_or_default()
}

/// A `-r DIR` made for a run. Dropped without [`NewResult::keep`] (the run failed before
/// it had anything to record), it removes the directory again.
pub(crate) struct NewResult(Option<ResultDir>);

impl NewResult {
    /// Makes `path` (nothing when None).
    pub(crate) fn create(path: Option<&Path>) -> Result<NewResult, Error> {
        let dir = match path {
            Some(p) => Some(kairos_session::create_result_dir(Some(p), "run")?),
            None => None,
        };
        Ok(NewResult(dir))
    }

    /// The directory, to be written and kept.
    pub(crate) fn keep(mut self) -> Option<ResultDir> {
        self.0.take()
    }
}

impl Drop for NewResult {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            let _ = std::fs::remove_dir_all(d.path());
        }
    }
}

/// Saves `d`'s manifest; its path for the caller to show.
pub(crate) fn save(d: &ResultDir) -> Result<PathBuf, Error> {
    kairos_session::save(d)?;
    Ok(d.path().to_path_buf())
}

/// The manifest of a `kairos run` result: what ran, when, for how long and how it ended
/// (`signalled`: Kairos passed a stop signal on to it).
pub(crate) fn run_manifest(
    m: &mut Manifest,
    program: &[String],
    elapsed: f64,
    exit: TargetExit,
    signalled: bool,
) {
    m.kind = Some("run".into());
    m.command_line = Some(std::env::args().collect());
    m.target = Some(kairos_result::Target::Program {
        program: program.first().cloned().unwrap_or_default(),
        args: args_of(program).to_vec(),
    });
    m.start_time = Some(kairos_result::rfc3339_utc(
        SystemTime::now() - Duration::from_secs_f64(elapsed),
    ));
    m.clock_offset_ns = kairos_session::clock_offset_ns();
    m.duration_secs = Some(elapsed);
    m.host = Some(kairos_session::this_host());
    m.target_exit = Some(exit);
    m.stopped_by = Some(if signalled {
        "signal".into()
    } else {
        "target exited".into()
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_refused_before_anything_changes() {
        let none: Vec<String> = Vec::new();
        assert!(matches!(
            program_of(&none, "kairos run -- ./app"),
            Err(Error::NothingToRun { .. })
        ));
        let missing = vec!["/no/such/program".to_string()];
        assert!(matches!(
            program_of(&missing, "x"),
            Err(Error::ProgramNotFound(p)) if p == "/no/such/program"
        ));
        let sh = vec!["sh".to_string(), "-c".to_string(), "true".to_string()];
        assert_eq!(program_of(&sh, "x").unwrap(), "sh");
        assert_eq!(args_of(&sh), ["-c", "true"]);
        assert!(args_of(&none).is_empty());
    }

    #[test]
    fn a_result_made_for_a_failed_run_is_removed() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("res");
        drop(NewResult::create(Some(&p)).unwrap());
        assert!(!p.exists());
        let kept = NewResult::create(Some(&p)).unwrap().keep();
        assert!(kept.is_some() && p.is_dir());
    }
}
