//! `kairos collect memory-consumption -- PROGRAM` and the reports of such a result.
//!
//! The program is started with the allocation tracker preloaded
//! (`LD_PRELOAD=<dir of kairos>/lib/libkairos_memtrack.so`); its raw files land in
//! `RESULT/memtrack/`, are symbolised once and stored as Parquet tables
//! (`allocations`, `sites`), then the summary is printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::{Instant, SystemTime};

use kairos_analysis_memory::{build, decode, replay, reports, tables};
use kairos_report::{Document, Format};
use kairos_result::{ResultDir, Source, TableInfo};

use crate::args::{CollectArgs, ReportArgs};
use crate::error::{CliResult, UserError};
use crate::knobs::Knobs;
use crate::pipeline;

pub const KIND: &str = "memory-consumption";
const RAW_DIR: &str = "memtrack";

pub fn collect(args: CollectArgs) -> CliResult {
    let knobs = Knobs::parse(KIND, &args.knobs)?;
    if args.pid.is_some() || args.system_wide {
        return Err(UserError::usage(
            "memory-consumption starts the program with the allocation tracker preloaded, so it cannot attach (-p) \
             or collect system-wide (-a); give the program after `--`",
        ));
    }
    if args.duration.is_some() {
        return Err(UserError::usage("memory-consumption follows the program to its end; -d is not supported, stop it with Ctrl-C"));
    }
    let Some(first) = args.program.first() else {
        return Err(UserError::usage("nothing to collect: give a program after `--`, e.g. `kairos collect memory-consumption -- ./app`"));
    };
    let program = resolve_program(Path::new(first)).ok_or_else(|| {
        UserError::failed(format!("program '{first}' was not found; give a path to an executable or a command on PATH"))
    })?;
    check_loadable(&program, first)?;
    let lib = tracker_lib()?;

    let mut dir = pipeline::create_result_dir(args.result_dir.as_deref(), "mc")?;
    let raw = dir.path().join(RAW_DIR);
    std::fs::create_dir_all(&raw).map_err(|e| UserError::failed(format!("cannot create {}: {e}", raw.display())))?;
    {
        let m = dir.manifest_mut();
        m.kind = Some(KIND.into());
        m.command_line = Some(std::env::args().collect());
        m.target = Some(kairos_result::Target::Program { program: first.clone(), args: args.program[1..].to_vec() });
        m.knobs = knobs.all().clone();
        m.start_time = Some(kairos_result::rfc3339_utc(SystemTime::now()));
        m.host = Some(pipeline::this_host());
        m.source = Some(Source::Collected);
    }
    pipeline::save(&dir)?;

    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut v = lib.clone().into_os_string();
            v.push(" ");
            v.push(old);
            v
        }
        _ => lib.clone().into_os_string(),
    };
    let started = Instant::now();
    // SIGINT/SIGTERM to kairos (alone, or with the whole terminal group) end the target
    // (SIGTERM) at once; the result keeps what the tracker wrote up to then.
    let status = Command::new(&program)
        .args(&args.program[1..])
        .env("LD_PRELOAD", preload)
        .env("KAIROS_MEMTRACK_DIR", &raw)
        .env("KAIROS_MEMTRACK_MIN_SIZE", knobs.get("min-object-size"))
        .spawn()
        .and_then(|mut child| crate::interrupt::wait(&mut child));
    let (status, interrupted) = match status {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(dir.path());
            return Err(UserError::failed(format!("'{first}' cannot be executed ({e}); check that it is a program for this machine and has the execute bit")));
        }
    };
    let elapsed = started.elapsed().as_secs_f64();
    // The target is the only child Kairos has waited for: its rusage gives the page
    // faults and CPU times `kairos compare` shows (the tracker's own faults included).
    let process = crate::cmd_run::children_rusage();

    let trace = decode::read_dir(&raw).map_err(|e| UserError::failed(format!("cannot read the tracker's files: {e}")))?;
    if trace.processes.is_empty() {
        let _ = std::fs::remove_dir_all(dir.path());
        if let Some(sig) = interrupted {
            return Err(UserError::failed(format!("interrupted by signal {sig} before the allocation tracker wrote anything; nothing was recorded")));
        }
        return Err(UserError::failed(format!(
            "the allocation tracker was not loaded into {first} (it wrote nothing): the program may be setuid, \
             clear LD_PRELOAD, or be statically linked; run it as a dynamically linked program of your own user"
        )));
    }
    let data = build::build(&trace);
    drop(trace);
    // The summary's replay and the table writing are independent: run them side by side.
    let (written, st) = std::thread::scope(|s| {
        let summary = s.spawn(|| replay::replay(&data.rows, 0));
        let written = tables::write(&dir.tables_path(), &data);
        (written, summary.join())
    });
    let st = st.map_err(|_| UserError::failed("the analysis of the allocation events failed unexpectedly; please report this"))?;
    let infos = written
        .map_err(|e| UserError::failed(format!("cannot write the result tables: {e}; check free disk space and permissions")))?;
    {
        use std::os::unix::process::ExitStatusExt;
        let m = dir.manifest_mut();
        m.duration_secs = Some(elapsed);
        m.stopped_by = Some(match interrupted {
            Some(sig) => crate::cmd_collect::stop_reason(&kairos_collector::StopReason::Signal(sig)),
            None => "target exited".into(),
        });
        m.target_exit = Some(match (status.code(), status.signal()) {
            (Some(code), _) => kairos_result::TargetExit::Code { code },
            (None, Some(signal)) => kairos_result::TargetExit::Signal { signal },
            _ => kairos_result::TargetExit::None,
        });
        m.notes.extend(data.notes.iter().cloned());
        m.extra.insert("process".into(), process);
        m.tables = infos.into_iter().map(|(name, file, rows, bytes)| TableInfo { name, file, rows, bytes }).collect();
    }
    pipeline::save(&dir)?;
    let mut doc = reports::summary(&data, &st, &meta(&dir), 10);
    doc.title = Some("Memory consumption".into());
    print!("{}", doc.to_text());
    print_notes(&dir, &st);
    println!("\nResult: {}  (see `kairos report allocations -r {}`)", dir.path().display(), dir.path().display());
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        eprintln!("kairos: the target was killed by signal {sig}; the result covers it up to that point");
    }
    Ok(())
}

/// Whether `path` holds a memory-consumption result (so `kairos report` dispatches here).
pub fn is_memory_result(path: &Path) -> bool {
    ResultDir::open(path).is_ok_and(|d| d.manifest().kind.as_deref() == Some(KIND))
}

pub fn report(args: &ReportArgs) -> CliResult {
    let format = Format::from_str(&args.format).map_err(|e| UserError::usage(format!("{e}")))?;
    let dir = ResultDir::open(&args.result_dir).map_err(|e| {
        UserError::failed(format!("cannot open result {}: {e}; give a directory made by `kairos collect`", args.result_dir.display()))
    })?;
    let data = tables::read(&dir.tables_path())
        .map_err(|e| UserError::failed(format!("result {} is damaged: {e}; collect it again", args.result_dir.display())))?;
    let limit = args.limit.filter(|&n| n > 0);
    let span = data.rows.iter().map(|r| r.time_ns).max().unwrap_or(0);
    let bucket_ns = match args.bucket_ms {
        Some(ms) if ms > 0.0 && ms.is_finite() => (ms * 1e6) as u64,
        Some(ms) => return Err(UserError::usage(format!("--bucket-ms {ms} must be a positive number of milliseconds"))),
        None => ((span / 40).div_ceil(1_000_000)).max(1) * 1_000_000,
    };
    if args.report == "heap-timeline" && span / bucket_ns.max(1) > 100_000 {
        return Err(UserError::usage(format!("--bucket-ms would make more than 100000 buckets over {:.3} s; give a larger width", span as f64 / 1e9)));
    }
    let st = replay::replay(&data.rows, if args.report == "heap-timeline" { bucket_ns } else { 0 });
    let text = match args.report.as_str() {
        "summary" => reports::summary(&data, &st, &meta(&dir), limit.unwrap_or(10)).render(format),
        "allocations" => one("Allocations by memory object (bottom-up)", reports::allocations(&data, &st, limit.or(Some(50))), format),
        "sizes" => one("Allocation sizes", reports::sizes(&st), format),
        _ => one("Heap over time", reports::heap_timeline(&st), format),
    };
    print!("{text}");
    if format == Format::Text {
        print_notes(&dir, &st);
    }
    Ok(())
}

fn one(title: &str, t: kairos_report::Table, format: Format) -> String {
    if format == Format::Text {
        let mut d = Document::new(title);
        d.push_table(t);
        d.to_text()
    } else {
        t.render(format)
    }
}

fn print_notes(dir: &ResultDir, st: &replay::Stats) {
    println!("\nNotes:");
    for n in dir.manifest().notes.iter().cloned().chain(reports::accounting_notes(st)) {
        println!("  - {n}");
    }
}

fn meta(dir: &ResultDir) -> Vec<(String, String)> {
    let m = dir.manifest();
    let mut v = Vec::new();
    if let Some(kairos_result::Target::Program { program, args }) = &m.target {
        v.push(("Target".into(), format!("{program} {}", args.join(" ")).trim_end().to_string()));
    }
    if let Some(k) = m.knobs.get("min-object-size") {
        v.push(("Min object size".into(), format!("{k} B (smaller blocks are counted, without a stack)")));
    }
    match m.target_exit {
        Some(kairos_result::TargetExit::Code { code }) => v.push(("Target exit".into(), format!("status {code}"))),
        Some(kairos_result::TargetExit::Signal { signal }) => v.push(("Target exit".into(), format!("killed by signal {signal}"))),
        _ => {}
    }
    v
}

/// Finds the program like execvp would, so a typo fails before a result is created.
fn resolve_program(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.is_file().then(|| program.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

/// The tracker library: `$KAIROS_MEMTRACK_LIB`, else `lib/libkairos_memtrack.so` next to
/// the kairos binary (where the build puts it).
fn tracker_lib() -> CliResult<PathBuf> {
    if let Some(p) = std::env::var_os("KAIROS_MEMTRACK_LIB") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| UserError::failed(format!("cannot find the kairos binary ({e})")))?;
    let lib = exe.parent().map(|d| d.join("lib").join("libkairos_memtrack.so")).unwrap_or_default();
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(UserError::failed(format!(
            "the allocation tracker {} is missing; rebuild Kairos with `cargo build --release` (it builds the tracker), \
             or point KAIROS_MEMTRACK_LIB at libkairos_memtrack.so",
            lib.display()
        )))
    }
}

/// Refuses programs the preloaded tracker cannot enter: statically linked ELF files (no
/// PT_INTERP: no dynamic loader runs, so LD_PRELOAD is never read) and setuid/setgid
/// programs (the loader ignores LD_PRELOAD for them). Scripts (`#!`) pass: their
/// interpreter is what runs.
fn check_loadable(program: &Path, name: &str) -> CliResult {
    use std::os::unix::fs::PermissionsExt;
    let Ok(bytes) = std::fs::read(program) else { return Ok(()) };
    if bytes.starts_with(b"#!") {
        return Ok(());
    }
    if let Ok(meta) = std::fs::metadata(program) {
        if meta.permissions().mode() & 0o6000 != 0 && unsafe { libc::geteuid() } != 0 {
            return Err(UserError::failed(format!(
                "{name} is setuid or setgid: the dynamic loader ignores LD_PRELOAD for it, so the allocation tracker cannot be loaded into it"
            )));
        }
    }
    match elf_interp(&bytes) {
        Some(false) => Err(UserError::failed(format!(
            "{name} is statically linked: the allocation tracker (LD_PRELOAD) cannot be loaded into it; rebuild it dynamically"
        ))),
        _ => Ok(()),
    }
}

/// For a 64- or 32-bit little-endian ELF file: whether it has a PT_INTERP program header.
/// `None` when it is not such a file (then the loader will say what is wrong).
fn elf_interp(b: &[u8]) -> Option<bool> {
    if b.get(..4)? != b"\x7fELF" || *b.get(5)? != 1 {
        return None;
    }
    let is64 = *b.get(4)? == 2;
    let rd = |at: usize, n: usize| -> Option<u64> {
        let s = b.get(at..at + n)?;
        Some(s.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
    };
    let (phoff, phentsize, phnum) =
        if is64 { (rd(0x20, 8)?, rd(0x36, 2)?, rd(0x38, 2)?) } else { (rd(0x1c, 4)?, rd(0x2a, 2)?, rd(0x2c, 2)?) };
    const PT_INTERP: u64 = 3;
    for i in 0..phnum.min(4096) {
        let at = usize::try_from(phoff.checked_add(i.checked_mul(phentsize)?)?).ok()?;
        if rd(at, 4)? == PT_INTERP {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_interp_is_total() {
        assert_eq!(elf_interp(b"junk"), None);
        let exe = std::fs::read("/proc/self/exe").expect("own binary");
        assert_eq!(elf_interp(&exe), Some(true));
        for n in [0, 10, 64, 100] {
            let _ = elf_interp(&exe[..n.min(exe.len())]);
        }
    }
}
