//! What `kairos collect` is pointed at: a program to launch, a running process, or every
//! CPU; checked before a result directory exists, so a typo leaves nothing behind.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_collector::Target;

/// The target of a sampling collection: exactly one of a program after `--`, `-p PID`, `-a`.
/// `analysis` names the command in the example of the sentence for a missing target.
pub fn target(req: &CollectRequest, analysis: &str) -> Result<Target, Failure> {
    match (req.pid, req.system_wide, req.program.is_empty()) {
        (Some(pid), false, true) => {
            let proc_dir = PathBuf::from(format!("/proc/{pid}"));
            let Ok(meta) = std::fs::metadata(&proc_dir) else {
                return Err(Failure::failed(format!("no process has PID {pid}; check it with `ps -p {pid}`")));
            };
            not_ours(pid, std::os::unix::fs::MetadataExt::uid(&meta))?;
            Ok(Target::Pid(pid))
        }
        (None, true, true) => Ok(Target::SystemWide),
        (None, false, false) => {
            let program = PathBuf::from(&req.program[0]);
            if resolve_program(&program).is_none() {
                return Err(not_found(&req.program[0]));
            }
            Ok(Target::Launch { program, args: req.program[1..].iter().map(OsString::from).collect() })
        }
        (None, false, true) => Err(Failure::usage(format!(
            "nothing to collect: give a program after `--`, -p PID or -a, e.g. `kairos collect {analysis} -- ./app`"
        ))),
        _ => Err(Failure::usage("give only one of: a program after `--`, -p PID, -a")),
    }
}

/// The kernel lets a user profile only processes it could trace: another user's process
/// needs root (or CAP_PERFMON with ptrace rights), whatever perf_event_paranoid says.
fn not_ours(pid: i32, owner: u32) -> Result<(), Failure> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if me == 0 || me == owner {
        return Ok(());
    }
    Err(Failure::failed(format!(
        "process {pid} belongs to another user (uid {owner}; you are uid {me}): only its user or root may profile it; \
         run kairos as that user, or as root"
    )))
}

/// `-d`, checked: a positive number of seconds.
pub fn check_duration(req: &CollectRequest) -> Result<Option<std::time::Duration>, Failure> {
    match req.duration {
        Some(d) if d > 0.0 && d.is_finite() => Ok(Some(std::time::Duration::from_secs_f64(d))),
        Some(d) => Err(Failure::usage(format!(
            "-d {d} is not a duration; give a positive number of seconds"
        ))),
        None => Ok(None),
    }
}

/// The program of an analysis that launches it itself (no `-p`, `-a`): its resolved path,
/// or the sentence for a name that is not a program. `nothing` is the sentence for none.
pub fn launched(req: &CollectRequest, nothing: &str) -> Result<PathBuf, Failure> {
    let Some(first) = req.program.first() else {
        return Err(Failure::usage(nothing));
    };
    resolve_program(Path::new(first)).ok_or_else(|| not_found(first))
}

fn not_found(name: &str) -> Failure {
    Failure::failed(format!(
        "program '{name}' was not found; give a path to an executable or a command on PATH"
    ))
}

/// Finds the program like execvp would, so a typo fails before a result is created.
pub fn resolve_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// For analyses that launch their target themselves (without the collector): a cache
/// group cannot be honoured, so it is refused before anything starts.
pub fn refuse_target_step(req: &CollectRequest, analysis: &str) -> Result<(), Failure> {
    match req.on_target {
        Some(_) => Err(Failure::usage(format!(
            "-k cache-group is not available for {analysis}: it runs the program itself; collect hotspots, system-overview or memory-access, or run it under `kairos run --cache-ways N`"
        ))),
        None => Ok(()),
    }
}

/// `-C` refused by an analysis that does not sample per CPU (it traces or runs the program
/// itself).
pub fn refuse_cpu_list(req: &CollectRequest, analysis: &str) -> Result<(), Failure> {
    match req.cpus {
        Some(_) => Err(Failure::usage(format!(
            "-C is not available for {analysis}: it does not sample per CPU; collect hotspots, system-overview or memory-access with -C, or pin the program (taskset -c LIST)"
        ))),
        None => Ok(()),
    }
}

/// The request's step on the target (`-k cache-group`), in the collector's terms.
pub fn target_hook(req: &CollectRequest) -> Option<kairos_collector::TargetHook> {
    req.on_target
        .as_ref()
        .map(|s| kairos_collector::TargetHook(s.0.clone()))
}

/// The collector's target as the manifest describes it.
pub fn describe(target: &Target) -> kairos_result::Target {
    match target {
        Target::Launch { program, args } => kairos_result::Target::Program {
            program: program.display().to_string(),
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        },
        Target::Pid(pid) => kairos_result::Target::Pid { pid: *pid },
        Target::SystemWide => kairos_result::Target::SystemWide,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn req(
        program: &[&str],
        pid: Option<i32>,
        system_wide: bool,
        duration: Option<f64>,
    ) -> CollectRequest {
        CollectRequest {
            knobs: kairos_analysis_api::Knobs::parse("x", &[], &[]).unwrap(),
            program: program.iter().map(|s| s.to_string()).collect(),
            pid,
            system_wide,
            duration,
            result_dir: None,
            quiet: true,
            mmap_pages: None,
            cpus: None,
            on_target: None,
        }
    }

    #[test]
    fn exactly_one_target_with_a_sentence_otherwise() {
        assert!(matches!(
            target(&req(&["sh", "-c", "true"], None, false, None), "x"),
            Ok(Target::Launch { .. })
        ));
        assert!(matches!(
            target(&req(&[], None, true, None), "x"),
            Ok(Target::SystemWide)
        ));
        let e = target(&req(&[], None, false, None), "some-analysis").unwrap_err();
        assert!(
            e.is_usage()
                && e.to_string()
                    .contains("kairos collect some-analysis -- ./app"),
            "{e}"
        );
        assert!(target(&req(&["true"], None, true, None), "x")
            .unwrap_err()
            .is_usage());
        let e = target(&req(&["/no/such/program"], None, false, None), "x").unwrap_err();
        assert!(
            !e.is_usage() && e.to_string().contains("was not found"),
            "{e}"
        );
        let e = launched(&req(&[], None, false, None), "nothing here").unwrap_err();
        assert_eq!(e, Failure::usage("nothing here"));
    }

    #[test]
    fn durations_are_positive_seconds() {
        assert_eq!(
            check_duration(&req(&[], None, false, Some(0.5))).unwrap(),
            Some(std::time::Duration::from_millis(500))
        );
        assert_eq!(check_duration(&req(&[], None, false, None)).unwrap(), None);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(check_duration(&req(&[], None, false, Some(bad)))
                .unwrap_err()
                .is_usage());
        }
    }
}
