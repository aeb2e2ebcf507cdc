//! The two recorders of `collect trace`: the instrumentation runtime's files, or the
//! collector's uprobes; each gives the threads' paired calls and the functions' locations.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kairos_analysis_api::Failure;
use kairos_collector::uprobe::{ProbeTarget, UprobeHit, UprobeOptions};
use kairos_result::ResultDir;
use kairos_session as session;

use crate::elf_functions::ElfTraceInfo;
use crate::profile::locate;
use crate::recorded::{runtime_path, Recorded, RAW_DIR};
use crate::runtime_file::{RuntimeTrace, ThreadFile};
use crate::{pair_thread, Event, EventKind, FunctionLoc, ThreadInfo, TracedThread};

pub(crate) fn instrument(
    dir: &ResultDir,
    program: &Path,
    args: &[OsString],
    elf: &ElfTraceInfo,
) -> Result<Recorded, Failure> {
    let raw = dir.path().join(RAW_DIR);
    std::fs::create_dir_all(&raw).map_err(|e| {
        Failure::failed(format!(
            "cannot create {} ({e}); check free space and permissions",
            raw.display()
        ))
    })?;
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
        .and_then(|mut child| session::interrupt::wait(&mut child))
        .map_err(|e| Failure::failed(format!("cannot run {} ({e})", program.display())))?;
    let traced_seconds = start.elapsed().as_secs_f64();

    let trace = crate::runtime_file::read_dir(&raw)
        .map_err(|e| Failure::failed(format!("cannot read the trace: {e}")))?;
    let mut notes = trace.notes.clone();
    if trace.threads.is_empty() {
        if let Some(sig) = interrupted {
            return Err(Failure::failed(format!(
                "interrupted by signal {sig} before {} wrote any trace (the runtime writes a thread's events every 65536 calls and at exit); nothing was recorded",
                program.display()
            )));
        }
        return Err(Failure::failed(format!(
            "{} wrote no trace: it ended before its first call, was killed, or ended through _exit/exec (the runtime writes at exit)",
            program.display()
        )));
    }
    let prog_name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut table = FunctionTable::default();
    let threads = trace
        .threads
        .iter()
        .map(|t| traced_thread(&trace, t, &prog_name, &mut table))
        .collect();
    let functions = table.locate(&trace, &mut notes);
    if interrupted.is_some() {
        notes.push("interrupted: the program was ended (SIGTERM) before it finished".to_string());
    }
    Ok(Recorded {
        threads,
        functions,
        traced_seconds,
        exit: session::exit_of(status),
        notes,
        lost_events: 0,
        refused: Vec::new(),
        probed: None,
        interrupted,
    })
}

/// One function table across processes: (pid, run-time address) -> index.
#[derive(Default)]
struct FunctionTable {
    index: HashMap<(i32, u64), u32>,
    /// Per process: (index, run-time address) of its functions.
    by_pid: BTreeMap<i32, Vec<(u32, u64)>>,
}

impl FunctionTable {
    /// The index of the function at `addr` in process `pid`, given on first sight.
    fn of(&mut self, pid: i32, addr: u64) -> u32 {
        let next = self.index.len() as u32;
        let by_pid = &mut self.by_pid;
        *self.index.entry((pid, addr)).or_insert_with(|| {
            by_pid.entry(pid).or_default().push((next, addr));
            next
        })
    }

    /// Each function's location, from its process's copy of its maps (a note for a
    /// process without one).
    fn locate(self, trace: &RuntimeTrace, notes: &mut Vec<String>) -> Vec<FunctionLoc> {
        let mut functions = vec![
            FunctionLoc {
                address: 0,
                module: None,
                elf_vaddr: 0,
                name_hint: None
            };
            self.index.len()
        ];
        for (pid, list) in self.by_pid {
            let maps = trace.maps.get(&pid).map(Vec::as_slice).unwrap_or(&[]);
            if maps.is_empty() {
                notes.push(format!(
                    "no maps copy for process {pid}: its functions are named by address only"
                ));
            }
            let addrs: Vec<u64> = list.iter().map(|&(_, a)| a).collect();
            for ((i, _), loc) in list.iter().zip(locate(&addrs, maps)) {
                functions[*i as usize] = loc;
            }
        }
        functions
    }
}

/// One thread's file as paired calls, its functions numbered in `table`.
fn traced_thread(
    trace: &RuntimeTrace,
    t: &ThreadFile,
    prog_name: &str,
    table: &mut FunctionTable,
) -> TracedThread {
    let events: Vec<Event> = t
        .events
        .iter()
        .map(|e| Event {
            time_ns: e.time_ns,
            function: table.of(t.pid, e.function),
            kind: if e.exit {
                EventKind::Exit
            } else {
                EventKind::Entry
            },
        })
        .collect();
    let name = if t.comm.is_empty() {
        prog_name.to_string()
    } else {
        t.comm.clone()
    };
    let process_name = trace
        .threads
        .iter()
        .find(|m| m.tid == t.pid)
        .map_or_else(|| prog_name.to_string(), |m| m.comm.clone());
    TracedThread {
        info: ThreadInfo {
            pid: t.pid,
            tid: t.tid,
            name,
            process_name,
        },
        paired: pair_thread(&events),
    }
}

pub(crate) fn uprobes(
    program: &Path,
    args: &[OsString],
    elf: &ElfTraceInfo,
) -> Result<Recorded, Failure> {
    if elf.functions.is_empty() {
        return Err(Failure::failed(format!(
            "{} has no function symbols (stripped?); uprobes mode probes the functions of its symbol table",
            program.display()
        )));
    }
    // The kernel resolves the probe's path itself: give it an absolute one.
    let path = program
        .canonicalize()
        .unwrap_or_else(|_| program.to_path_buf());
    let opts = UprobeOptions {
        program: program.to_path_buf(),
        args: args.to_vec(),
        functions: elf
            .functions
            .iter()
            .map(|f| ProbeTarget {
                name: f.name.clone(),
                path: path.clone(),
                file_offset: f.file_offset,
            })
            .collect(),
        ring_pages: 2048,
    };
    let mut rec = kairos_collector::uprobe::record(&opts).map_err(session::collect_error)?;
    // Rings are read one CPU after another; a thread that migrated has events in several.
    rec.hits.sort_by_key(|h| h.time_ns);
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (threads, entry_ip) = calls_per_thread(&rec.hits, &name);
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
        Some(kairos_collector::TargetExit::Signal(signal)) => {
            kairos_result::TargetExit::Signal { signal }
        }
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

/// The hits (in time order) as paired calls per thread, and the address each function
/// was first entered at.
fn calls_per_thread(hits: &[UprobeHit], name: &str) -> (Vec<TracedThread>, HashMap<u32, u64>) {
    let mut per_tid: BTreeMap<(u32, u32), Vec<Event>> = BTreeMap::new();
    let mut entry_ip: HashMap<u32, u64> = HashMap::new();
    for h in hits {
        if !h.is_return {
            entry_ip.entry(h.function).or_insert(h.ip);
        }
        let kind = if h.is_return {
            EventKind::Exit
        } else {
            EventKind::Entry
        };
        per_tid.entry((h.pid, h.tid)).or_default().push(Event {
            time_ns: h.time_ns,
            function: h.function,
            kind,
        });
    }
    let threads = per_tid
        .into_iter()
        .map(|((pid, tid), ev)| TracedThread {
            info: ThreadInfo {
                pid: pid as i32,
                tid: tid as i32,
                name: name.to_string(),
                process_name: name.to_string(),
            },
            paired: pair_thread(&ev),
        })
        .collect();
    (threads, entry_ip)
}
