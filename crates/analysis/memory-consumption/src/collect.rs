//! `kairos collect memory-consumption -- PROGRAM`: the program runs with the allocation
//! tracker preloaded (`LD_PRELOAD=<dir of kairos>/lib/libkairos_memtrack.so`); its raw
//! files land in `RESULT/memtrack/`, then [`crate::finish`] turns them into the result.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_session as session;

use crate::decode::RAW_DIR;
use crate::SPEC;

pub(crate) fn collect(req: &CollectRequest) -> Result<(), Failure> {
    session::refuse_target_step(req, "memory-consumption")?;
    session::refuse_cpu_list(req, "memory-consumption")?;
    if req.pid.is_some() || req.system_wide {
        return Err(Failure::usage(
            "memory-consumption starts the program with the allocation tracker preloaded, so it cannot attach (-p) \
             or collect system-wide (-a); give the program after `--`",
        ));
    }
    if req.duration.is_some() {
        return Err(Failure::usage("memory-consumption follows the program to its end; -d is not supported, stop it with Ctrl-C"));
    }
    let program = session::launched(req, "nothing to collect: give a program after `--`, e.g. `kairos collect memory-consumption -- ./app`")?;
    let first = &req.program[0];
    crate::loadable::check_loadable(&program, first)?;
    let lib = tracker_lib()?;

    let mut dir = session::create_result_dir(req.result_dir.as_deref(), SPEC.result_suffix)?;
    let raw = dir.path().join(RAW_DIR);
    std::fs::create_dir_all(&raw)
        .map_err(|e| Failure::failed(format!("cannot create {}: {e}", raw.display())))?;
    let target = kairos_result::Target::Program {
        program: first.clone(),
        args: req.program[1..].to_vec(),
    };
    session::start_manifest(&mut dir, SPEC.name, &req.knobs, target);
    session::save(&dir)?;

    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut v = lib.clone().into_os_string();
            v.push(" ");
            v.push(old);
            v
        }
        _ => lib.clone().into_os_string(),
    };
    let bandwidth = session::bandwidth::start("");
    let started = Instant::now();
    // SIGINT/SIGTERM to kairos (alone, or with the whole terminal group) end the target
    // (SIGTERM) at once; the result keeps what the tracker wrote up to then.
    let status = Command::new(&program)
        .args(&req.program[1..])
        .env("LD_PRELOAD", preload)
        .env("KAIROS_MEMTRACK_DIR", &raw)
        .env("KAIROS_MEMTRACK_MIN_SIZE", req.knobs.get("min-object-size"))
        .spawn()
        .and_then(|mut child| session::interrupt::wait(&mut child));
    let (status, interrupted) = match status {
        Ok(s) => s,
        Err(e) => {
            drop(bandwidth.finish());
            let _ = std::fs::remove_dir_all(dir.path());
            return Err(Failure::failed(format!("'{first}' cannot be executed ({e}); check that it is a program for this machine and has the execute bit")));
        }
    };
    session::bandwidth::finish(&mut dir, bandwidth);
    let run = crate::finish::Run {
        status,
        interrupted,
        seconds: started.elapsed().as_secs_f64(),
        program: first.clone(),
    };
    crate::finish::finish(&mut dir, run)
}

/// The tracker library: `$KAIROS_MEMTRACK_LIB`, else `lib/libkairos_memtrack.so` next to
/// the kairos binary (where the build puts it).
pub fn tracker_lib() -> Result<PathBuf, Failure> {
    if let Some(p) = std::env::var_os("KAIROS_MEMTRACK_LIB") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find the kairos binary ({e})")))?;
    let lib = exe
        .parent()
        .map(|d| d.join("lib").join("libkairos_memtrack.so"))
        .unwrap_or_default();
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(Failure::failed(format!(
            "the allocation tracker {} is missing; rebuild Kairos with `cargo build --release` (it builds the tracker), \
             or point KAIROS_MEMTRACK_LIB at libkairos_memtrack.so",
            lib.display()
        )))
    }
}
