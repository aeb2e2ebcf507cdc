//! `kairos collect trace -- PROGRAM`: records the entry and exit time of every function
//! call, either through the -finstrument-functions runtime Kairos ships (`instrument`,
//! [`crate::record::instrument`]) or through uprobes on an unmodified binary (`uprobes`,
//! [`crate::record::uprobes`]). The program first runs once untraced, so the tracer's own
//! cost is measured; [`crate::finish`] pairs and stores the calls.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_result::ResultDir;
use kairos_session as session;

use crate::elf_functions::ElfTraceInfo;
use crate::recorded::{Mode, Recorded};
use crate::SPEC;

pub(crate) fn collect(req: &CollectRequest) -> Result<(), Failure> {
    kairos_session::refuse_target_step(req, "trace")?;
    kairos_session::refuse_cpu_list(req, "trace")?;
    let knobs = &req.knobs;
    if req.pid.is_some() || req.system_wide {
        return Err(Failure::usage("collect trace launches the program it traces: give it after `--` (-p and -a are not supported)"));
    }
    if req.duration.is_some() {
        return Err(Failure::usage("collect trace records the whole run of the program; -d is not supported (give the program a smaller input)"));
    }
    let program = session::launched(
        req,
        "nothing to trace: give a program after `--`, e.g. `kairos collect trace -- ./app`",
    )?;
    let name = &req.program[0];
    let elf = crate::elf_functions::inspect(&program)
        .map_err(|e| Failure::failed(format!("{e}; collect trace needs an ELF executable")))?;
    let (mode, reason) = match knobs.get("mode") {
        "instrument" if !elf.instrumented => {
            return Err(Failure::failed(format!(
            "{name} was not built with -finstrument-functions; rebuild it or use -k mode=uprobes"
        )))
        }
        "instrument" => (Mode::Instrument, "asked for with -k mode=instrument"),
        "uprobes" => (Mode::Uprobes, "asked for with -k mode=uprobes"),
        _ if elf.instrumented => (
            Mode::Instrument,
            "auto: the program was built with -finstrument-functions",
        ),
        _ => (
            Mode::Uprobes,
            "auto: the program was not built with -finstrument-functions",
        ),
    };
    let prog_args: Vec<OsString> = req.program[1..].iter().map(OsString::from).collect();

    let mut dir = session::create_result_dir(req.result_dir.as_deref(), SPEC.result_suffix)?;
    let target = kairos_result::Target::Program {
        program: name.clone(),
        args: req.program[1..].to_vec(),
    };
    session::start_manifest(&mut dir, SPEC.name, knobs, target);
    session::save(&dir)?;
    let outcome = record_all(
        &dir,
        mode,
        &program,
        &prog_args,
        &elf,
        knobs.get("measure-overhead") == "on",
    );
    let (untraced, rec) = match outcome {
        Ok(r) => r,
        Err(e) => {
            // Nothing usable was recorded: leave no half result behind.
            let _ = std::fs::remove_dir_all(dir.path());
            return Err(e);
        }
    };
    crate::finish::finish(&mut dir, mode, reason, untraced, rec)
}

fn record_all(
    dir: &ResultDir,
    mode: Mode,
    program: &Path,
    args: &[OsString],
    elf: &ElfTraceInfo,
    measure: bool,
) -> Result<(Option<f64>, Recorded), Failure> {
    let untraced = if measure {
        Some(run_untraced(program, args)?)
    } else {
        None
    };
    let rec = match mode {
        Mode::Instrument => crate::record::instrument(dir, program, args, elf)?,
        Mode::Uprobes => crate::record::uprobes(program, args, elf)?,
    };
    Ok((untraced, rec))
}

/// One untraced run, output discarded, for the overhead baseline.
fn run_untraced(program: &Path, args: &[OsString]) -> Result<f64, Failure> {
    let start = Instant::now();
    let (_, interrupted) = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut child| session::interrupt::wait(&mut child))
        .map_err(|e| {
            Failure::failed(format!(
                "cannot run {} ({e}); check that it is a program for this machine",
                program.display()
            ))
        })?;
    if let Some(sig) = interrupted {
        return Err(Failure::failed(format!("interrupted by signal {sig} during the untraced baseline run, before tracing started; nothing was recorded")));
    }
    Ok(start.elapsed().as_secs_f64())
}
