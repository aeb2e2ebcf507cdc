//! `kairos collect trace -- PROGRAM`: the exact tracer. Records the entry and exit time of
//! every function call, either through the -finstrument-functions runtime Kairos ships
//! (`instrument`) or through uprobes on an unmodified binary (`uprobes`); pairs them into
//! calls; and stores them as the `calls` table of a result of kind "trace". The program
//! first runs once untraced, so the tracer's own cost is measured and reported.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

use kairos_collector::uprobe::{ProbeTarget, UprobeOptions};
use kairos_result::{ResultDir, Source};
use kairos_trace::elf_functions::ElfTraceInfo;
use kairos_trace::profile::locate;
use kairos_trace::{pair_thread, Event, EventKind, FunctionLoc, ThreadInfo, TracedThread};
use serde_json::json;

use crate::args::CollectArgs;
use crate::error::{CliResult, UserError};
use crate::knobs::Knobs;
use crate::pipeline;

/// Folder of the runtime's raw per-thread files inside the result (kept: they can be
/// decoded again without re-running the program).
const RAW_DIR: &str = "trace";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Instrument,
    Uprobes,
}

/// What either recorder produced.
struct Recorded {
    threads: Vec<TracedThread>,
    functions: Vec<FunctionLoc>,
    traced_seconds: f64,
    exit: kairos_result::TargetExit,
    notes: Vec<String>,
    lost_events: u64,
    refused: Vec<(String, String)>,
    probed: Option<usize>,
    /// The signal to kairos that ended the recording (and the program) early.
    interrupted: Option<i32>,
}

pub fn run(args: CollectArgs) -> CliResult {
    let knobs = Knobs::parse("trace", &args.knobs)?;
    if args.pid.is_some() || args.system_wide {
        return Err(UserError::usage("collect trace launches the program it traces: give it after `--` (-p and -a are not supported)"));
    }
    if args.duration.is_some() {
        return Err(UserError::usage("collect trace records the whole run of the program; -d is not supported (give the program a smaller input)"));
    }
    let Some(name) = args.program.first() else {
        return Err(UserError::usage("nothing to trace: give a program after `--`, e.g. `kairos collect trace -- ./app`"));
    };
    let program = crate::cmd_collect::resolve_program(Path::new(name)).ok_or_else(|| {
        UserError::failed(format!("program '{name}' was not found; give a path to an executable or a command on PATH"))
    })?;
    let elf = kairos_trace::elf_functions::inspect(&program)
        .map_err(|e| UserError::failed(format!("{e}; collect trace needs an ELF executable")))?;
    let (mode, reason) = match knobs.get("mode") {
        "instrument" if !elf.instrumented => {
            return Err(UserError::failed(format!("{name} was not built with -finstrument-functions; rebuild it or use -k mode=uprobes")))
        }
        "instrument" => (Mode::Instrument, "asked for with -k mode=instrument"),
        "uprobes" => (Mode::Uprobes, "asked for with -k mode=uprobes"),
        _ if elf.instrumented => (Mode::Instrument, "auto: the program was built with -finstrument-functions"),
        _ => (Mode::Uprobes, "auto: the program was not built with -finstrument-functions"),
    };
    let prog_args: Vec<OsString> = args.program[1..].iter().map(OsString::from).collect();

    let mut dir = pipeline::create_result_dir(args.result_dir.as_deref(), "tr")?;
    fill_manifest(&mut dir, &args, &knobs);
    pipeline::save(&dir)?;
    let outcome = record_all(&dir, mode, &program, &prog_args, &elf, knobs.get("measure-overhead") == "on");
    let (untraced, rec) = match outcome {
        Ok(r) => r,
        Err(e) => {
            // Nothing usable was recorded: leave no half result behind.
            let _ = std::fs::remove_dir_all(dir.path());
            return Err(e);
        }
    };
    finish(&mut dir, mode, reason, untraced, rec)
}

fn record_all(
    dir: &ResultDir,
    mode: Mode,
    program: &Path,
    args: &[OsString],
    elf: &ElfTraceInfo,
    measure: bool,
) -> CliResult<(Option<f64>, Recorded)> {
    let untraced = if measure { Some(run_untraced(program, args)?) } else { None };
    let rec = match mode {
        Mode::Instrument => record_instrument(dir, program, args, elf)?,
        Mode::Uprobes => record_uprobes(program, args, elf)?,
    };
    Ok((untraced, rec))
}

/// One untraced run, output discarded, for the overhead baseline.
fn run_untraced(program: &Path, args: &[OsString]) -> CliResult<f64> {
    let start = Instant::now();
    let (_, interrupted) = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut child| crate::interrupt::wait(&mut child))
        .map_err(|e| UserError::failed(format!("cannot run {} ({e}); check that it is a program for this machine", program.display())))?;
    if let Some(sig) = interrupted {
        return Err(UserError::failed(format!("interrupted by signal {sig} during the untraced baseline run, before tracing started; nothing was recorded")));
    }
    Ok(start.elapsed().as_secs_f64())
}

fn exit_of(status: std::process::ExitStatus) -> kairos_result::TargetExit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => kairos_result::TargetExit::Code { code },
        (None, Some(signal)) => kairos_result::TargetExit::Signal { signal },
        _ => kairos_result::TargetExit::None,
    }
}

/// The runtime to preload: $KAIROS_TRACE_RUNTIME, else `lib/` next to the kairos binary
/// (where the build puts it).
fn runtime_path() -> CliResult<PathBuf> {
    if let Some(p) = std::env::var_os("KAIROS_TRACE_RUNTIME") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| UserError::failed(format!("cannot locate the kairos binary ({e}); set KAIROS_TRACE_RUNTIME to libkairos_trace.so")))?;
    let p = exe.parent().unwrap_or(Path::new(".")).join("lib/libkairos_trace.so");
    if !p.is_file() {
        return Err(UserError::failed(format!(
            "the tracing runtime {} is missing; rebuild kairos with `cargo build` or set KAIROS_TRACE_RUNTIME to libkairos_trace.so",
            p.display()
        )));
    }
    Ok(p)
}

fn record_instrument(dir: &ResultDir, program: &Path, args: &[OsString], elf: &ElfTraceInfo) -> CliResult<Recorded> {
    let raw = dir.path().join(RAW_DIR);
    std::fs::create_dir_all(&raw).map_err(|e| UserError::failed(format!("cannot create {} ({e}); check free space and permissions", raw.display())))?;
    let raw = raw.canonicalize().unwrap_or(raw);
    let mut cmd = Command::new(program);
    cmd.args(args).env("KAIROS_TRACE_DIR", &raw);
    // A program that links the runtime in needs no second copy; the others get it
    // preloaded, which overrides glibc's no-op __cyg_profile_func_* hooks.
    if !elf.has_runtime {
        let mut preload = runtime_path()?.into_os_string();
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
            preload.push(":");
            preload.push(old);
        }
        cmd.env("LD_PRELOAD", preload);
    }
    let start = Instant::now();
    // A signal to kairos ends the program (SIGTERM); the runtime writes its buffers
    // first unless the program handles SIGTERM itself.
    let (status, interrupted) = cmd
        .spawn()
        .and_then(|mut child| crate::interrupt::wait(&mut child))
        .map_err(|e| UserError::failed(format!("cannot run {} ({e})", program.display())))?;
    let traced_seconds = start.elapsed().as_secs_f64();

    let trace = kairos_trace::runtime_file::read_dir(&raw).map_err(|e| UserError::failed(format!("cannot read the trace: {e}")))?;
    let mut notes = trace.notes.clone();
    if trace.threads.is_empty() {
        if let Some(sig) = interrupted {
            return Err(UserError::failed(format!(
                "interrupted by signal {sig} before {} wrote any trace (the runtime writes a thread's events every 65536 calls and at exit); nothing was recorded",
                program.display()
            )));
        }
        return Err(UserError::failed(format!(
            "{} wrote no trace: it ended before its first call, was killed, or ended through _exit/exec (the runtime writes at exit)",
            program.display()
        )));
    }
    // One function table across processes: (pid, run-time address) -> index.
    let mut index: HashMap<(i32, u64), u32> = HashMap::new();
    let mut by_pid: BTreeMap<i32, Vec<(u32, u64)>> = BTreeMap::new();
    let mut threads = Vec::new();
    let prog_name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for t in &trace.threads {
        let events: Vec<Event> = t
            .events
            .iter()
            .map(|e| {
                let next = index.len() as u32;
                let f = *index.entry((t.pid, e.function)).or_insert_with(|| {
                    by_pid.entry(t.pid).or_default().push((next, e.function));
                    next
                });
                Event { time_ns: e.time_ns, function: f, kind: if e.exit { EventKind::Exit } else { EventKind::Entry } }
            })
            .collect();
        let name = if t.comm.is_empty() { prog_name.clone() } else { t.comm.clone() };
        let process_name = trace.threads.iter().find(|m| m.tid == t.pid).map_or_else(|| prog_name.clone(), |m| m.comm.clone());
        threads.push(TracedThread { info: ThreadInfo { pid: t.pid, tid: t.tid, name, process_name }, paired: pair_thread(&events) });
    }
    let mut functions = vec![FunctionLoc { address: 0, module: None, elf_vaddr: 0, name_hint: None }; index.len()];
    for (pid, list) in by_pid {
        let maps = trace.maps.get(&pid).map(Vec::as_slice).unwrap_or(&[]);
        if maps.is_empty() {
            notes.push(format!("no maps copy for process {pid}: its functions are named by address only"));
        }
        let addrs: Vec<u64> = list.iter().map(|&(_, a)| a).collect();
        for ((i, _), loc) in list.iter().zip(locate(&addrs, maps)) {
            functions[*i as usize] = loc;
        }
    }
    if interrupted.is_some() {
        notes.push("interrupted: the program was ended (SIGTERM) before it finished".to_string());
    }
    Ok(Recorded { threads, functions, traced_seconds, exit: exit_of(status), notes, lost_events: 0, refused: Vec::new(), probed: None, interrupted })
}

fn record_uprobes(program: &Path, args: &[OsString], elf: &ElfTraceInfo) -> CliResult<Recorded> {
    if elf.functions.is_empty() {
        return Err(UserError::failed(format!(
            "{} has no function symbols (stripped?); uprobes mode probes the functions of its symbol table",
            program.display()
        )));
    }
    // The kernel resolves the probe's path itself: give it an absolute one.
    let path = program.canonicalize().unwrap_or_else(|_| program.to_path_buf());
    let opts = UprobeOptions {
        program: program.to_path_buf(),
        args: args.to_vec(),
        functions: elf.functions.iter().map(|f| ProbeTarget { name: f.name.clone(), path: path.clone(), file_offset: f.file_offset }).collect(),
        ring_pages: 2048,
    };
    let mut rec = kairos_collector::uprobe::record(&opts).map_err(crate::cmd_collect::collect_error)?;
    // Rings are read one CPU after another; a thread that migrated has events in several.
    rec.hits.sort_by_key(|h| h.time_ns);
    let mut per_tid: BTreeMap<(u32, u32), Vec<Event>> = BTreeMap::new();
    let mut entry_ip: HashMap<u32, u64> = HashMap::new();
    for h in &rec.hits {
        if !h.is_return {
            entry_ip.entry(h.function).or_insert(h.ip);
        }
        let kind = if h.is_return { EventKind::Exit } else { EventKind::Entry };
        per_tid.entry((h.pid, h.tid)).or_default().push(Event { time_ns: h.time_ns, function: h.function, kind });
    }
    let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let threads = per_tid
        .into_iter()
        .map(|((pid, tid), ev)| TracedThread {
            info: ThreadInfo { pid: pid as i32, tid: tid as i32, name: name.clone(), process_name: name.clone() },
            paired: pair_thread(&ev),
        })
        .collect();
    let module = Some(path.display().to_string());
    let functions = elf
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| FunctionLoc {
            address: entry_ip.get(&(i as u32)).copied().unwrap_or(f.vaddr),
            module: module.clone(),
            elf_vaddr: f.vaddr,
            name_hint: Some(f.name.clone()),
        })
        .collect();
    let exit = match rec.target_exit {
        Some(kairos_collector::TargetExit::Code(code)) => kairos_result::TargetExit::Code { code },
        Some(kairos_collector::TargetExit::Signal(signal)) => kairos_result::TargetExit::Signal { signal },
        None => kairos_result::TargetExit::None,
    };
    let mut notes = Vec::new();
    if let Some(e) = &elf.entry_function {
        notes.push(format!("{e} (the entry point) is not probed: it is not called, and a return probe there would overwrite argc"));
    }
    if rec.interrupted {
        notes.push("interrupted: the program was stopped before it finished".to_string());
    }
    Ok(Recorded {
        threads,
        functions,
        traced_seconds: rec.wall_seconds,
        exit,
        notes,
        lost_events: rec.lost,
        refused: rec.refused,
        probed: Some(rec.probed),
        interrupted: rec.signal.or(rec.interrupted.then_some(libc::SIGINT)),
    })
}

fn fill_manifest(dir: &mut ResultDir, args: &CollectArgs, knobs: &Knobs) {
    let m = dir.manifest_mut();
    m.kind = Some("trace".into());
    m.command_line = Some(std::env::args().collect());
    m.target = Some(kairos_result::Target::Program {
        program: args.program.first().cloned().unwrap_or_default(),
        args: args.program.iter().skip(1).cloned().collect(),
    });
    m.knobs = knobs.all().clone();
    m.start_time = Some(kairos_result::rfc3339_utc(SystemTime::now()));
    m.host = Some(pipeline::this_host());
    m.source = Some(Source::Collected);
}

fn finish(dir: &mut ResultDir, mode: Mode, reason: &str, untraced: Option<f64>, rec: Recorded) -> CliResult {
    let (profile, sym_notes) = kairos_trace::build_profile(&rec.threads, &rec.functions, kairos_symbolize::SymbolizerOptions::default());
    let calls = profile.calls.len() as u64;
    let sum = |f: fn(&kairos_trace::Paired) -> u64| rec.threads.iter().map(|t| f(&t.paired)).sum::<u64>();
    let (unmatched, unwound) = (sum(|p| p.unmatched_exits), sum(|p| p.unwound));
    let mut open_names: Vec<String> = rec
        .threads
        .iter()
        .flat_map(|t| t.paired.open_at_end.iter())
        .filter_map(|&f| rec.functions.get(f as usize))
        .filter_map(|loc| profile.frames.iter().find(|fr| fr.address == loc.address).map(|fr| fr.function.clone()))
        .collect();
    let open = open_names.len();
    open_names.sort();
    open_names.dedup();

    let overhead = untraced.map(|u| {
        let slowdown = if u > 0.0 { rec.traced_seconds / u } else { 0.0 };
        // Negative when run-to-run noise exceeds the tracer's cost (few calls): reported
        // as is, so the reader sees the measurement rather than a clamped zero.
        let per_call = if calls > 0 { (rec.traced_seconds - u) * 1e9 / calls as f64 } else { 0.0 };
        (u, slowdown, per_call)
    });
    let m = dir.manifest_mut();
    m.duration_secs = Some(rec.traced_seconds);
    m.target_exit = Some(rec.exit);
    m.stopped_by = Some(match rec.interrupted {
        Some(sig) => crate::cmd_collect::stop_reason(&kairos_collector::StopReason::Signal(sig)),
        None => "target exited".into(),
    });
    m.notes.extend(rec.notes.iter().cloned());
    m.notes.extend(sym_notes);
    if open > 0 {
        m.notes.push(format!("{open} calls were still open when the trace ended ({}); they end at the last time stamp", open_names.join(", ")));
    }
    if unmatched > 0 || unwound > 0 {
        m.notes.push(format!("{unmatched} exits had no matching entry and {unwound} calls were closed by a caller's exit (longjmp, exceptions, or missed returns)"));
    }
    if rec.lost_events > 0 {
        m.notes.push(format!("the kernel dropped {} probe hits (ring buffer full); calls around them may be wrong", rec.lost_events));
    }
    if !rec.refused.is_empty() {
        let list: Vec<String> = rec.refused.iter().map(|(n, why)| format!("{n} ({why})")).collect();
        m.notes.push(format!("the kernel refused to probe {} functions, not traced: {}", rec.refused.len(), list.join(", ")));
    }
    m.extra.insert(
        "trace".into(),
        json!({
            "mode": match mode { Mode::Instrument => "instrument", Mode::Uprobes => "uprobes" },
            "mode_reason": reason,
            "clock": "CLOCK_MONOTONIC",
            "calls": calls,
            "threads": profile.threads.len(),
            "functions": profile.frames.len(),
            "unmatched_exits": unmatched,
            "unwound_calls": unwound,
            "open_at_end": open,
            "lost_events": rec.lost_events,
            "probed_functions": rec.probed,
            "refused_functions": rec.refused.iter().map(|(n, why)| json!({"name": n, "reason": why})).collect::<Vec<_>>(),
            "overhead": overhead.map(|(u, s, p)| json!({
                "untraced_seconds": u, "traced_seconds": rec.traced_seconds, "slowdown": s, "ns_per_call": p,
            })),
        }),
    );
    let tables = kairos_result::write_profile(dir, &profile).map_err(|e| {
        UserError::failed(format!("cannot write the result tables in {}: {e}; check free disk space and permissions", dir.path().display()))
    })?;
    dir.manifest_mut().tables = tables;
    pipeline::save(dir)?;
    print_summary(dir, &profile, mode, reason, overhead, rec.traced_seconds);
    Ok(())
}

fn print_summary(dir: &ResultDir, p: &kairos_model::Profile, mode: Mode, reason: &str, overhead: Option<(f64, f64, f64)>, traced: f64) {
    let mode = match mode {
        Mode::Instrument => "instrument",
        Mode::Uprobes => "uprobes",
    };
    println!("\nTrace ({mode}: {reason})");
    println!("  threads {}, functions {}, calls {}", p.threads.len(), p.frames.len(), p.calls.len());
    match overhead {
        Some((u, s, per)) if per > 0.0 => {
            println!("  tracer overhead: {s:.2}x, {:.3} us per call (untraced {u:.3} s, traced {traced:.3} s)", per / 1000.0)
        }
        Some((u, s, _)) => println!(
            "  tracer overhead: {s:.2}x, below run-to-run noise (untraced {u:.3} s, traced {traced:.3} s; too few calls to measure per call)"
        ),
        None => println!("  traced run {traced:.3} s (overhead not measured: -k measure-overhead=off)"),
    }
    let mut per: Vec<(u64, u64, u32)> = vec![(0, 0, 0); p.frames.len()];
    for c in &p.calls {
        if let Some(e) = per.get_mut(c.frame as usize) {
            e.0 += 1;
            e.1 += c.end_ns - c.start_ns;
            e.2 = c.frame;
        }
    }
    per.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    println!("  {:>10}  {:>12}  function", "calls", "total ms");
    for (n, ns, f) in per.iter().filter(|e| e.0 > 0).take(15) {
        let fr = &p.frames[*f as usize];
        let at = match (&fr.file, fr.line) {
            (Some(file), Some(line)) => format!("  {}:{line}", file.rsplit('/').next().unwrap_or(file)),
            _ => String::new(),
        };
        println!("  {n:>10}  {:>12.3}  {}{at}", *ns as f64 / 1e6, fr.function);
    }
    for n in &dir.manifest().notes {
        println!("  note: {n}");
    }
    println!("\nResult: {}", dir.path().display());
}
