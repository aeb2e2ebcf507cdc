//! Manual runs and benchmarks of the watchpoints:
//!   watch [OPTIONS] -p PID ADDR[/LEN][:w|:rw]...
//!   watch [OPTIONS] ADDR[/LEN][:w|:rw]... -- PROGRAM ARGS...   (launched; non-PIE addresses)
//! OPTIONS: --secs N (10), --budget F (allowed slowdown, 0.05), --no-classify, --quiet.
//! LEN defaults to 8, the kind to rw. Prints one line per hit, then a summary.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use kairos_collector::launch;
use kairos_collector::watch::rotate::{plan_sets, run};
use kairos_collector::watch::schedule::DutyConfig;
use kairos_collector::watch::*;

fn parse_watch(s: &str) -> Result<Watch, String> {
    let (spec, kind) = match s.rsplit_once(':') {
        Some((a, "w")) => (a, WatchKind::Write),
        Some((a, "rw")) => (a, WatchKind::ReadWrite),
        Some((_, k)) => return Err(format!("{s}: kind must be w or rw, not {k}")),
        None => (s, WatchKind::ReadWrite),
    };
    let (addr, len) = spec.split_once('/').unwrap_or((spec, "8"));
    let addr = u64::from_str_radix(addr.trim_start_matches("0x"), 16)
        .map_err(|e| format!("{s}: address: {e}"))?;
    let len: u8 = len.parse().map_err(|e| format!("{s}: length: {e}"))?;
    Watch::new(addr, len, kind).map_err(|e| e.to_string())
}

fn usage(msg: &str) -> ! {
    eprintln!("watch: {msg}\nusage: watch [--secs N] [--budget F] [--no-classify] [--quiet] (-p PID ADDR[/LEN][:w|:rw]... | ADDR... -- PROGRAM ARGS...)");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut secs, mut budget, mut classify, mut quiet) = (10.0f64, 0.05f64, true, false);
    let mut pid = None;
    let mut watches = Vec::new();
    let mut program: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let next = |i: usize| {
            args.get(i + 1)
                .cloned()
                .unwrap_or_else(|| usage("an option lacks its value"))
        };
        match args[i].as_str() {
            "--secs" => {
                secs = next(i)
                    .parse()
                    .unwrap_or_else(|_| usage("--secs takes seconds"))
            }
            "--budget" => {
                budget = next(i)
                    .parse()
                    .unwrap_or_else(|_| usage("--budget takes a fraction"))
            }
            "-p" => {
                pid = Some(
                    next(i)
                        .parse::<i32>()
                        .unwrap_or_else(|_| usage("-p takes a PID")),
                )
            }
            "--no-classify" => classify = false,
            "--quiet" => quiet = true,
            "--" => {
                program = args[i + 1..].to_vec();
                break;
            }
            a => watches.push(parse_watch(a).unwrap_or_else(|e| usage(&e))),
        }
        i += if matches!(args[i].as_str(), "--secs" | "--budget" | "-p") {
            2
        } else {
            1
        };
    }
    if watches.is_empty() || (pid.is_none() == program.is_empty()) {
        usage("give addresses and either -p PID or -- PROGRAM");
    }
    // A launched program waits before exec until its watchpoints are reserved, so its
    // first threads are watched from their start.
    let mut launched = None;
    if !program.is_empty() {
        let rest: Vec<OsString> = program[1..].iter().map(OsString::from).collect();
        match launch::spawn_waiting(Path::new(&program[0]), &rest) {
            Ok(l) => {
                pid = Some(l.pid);
                launched = Some(l);
            }
            Err(e) => usage(&e.to_string()),
        }
    }
    let pid = pid.unwrap_or_else(|| usage("no PID"));
    let mut watcher = Watcher::open(WatchTarget { pid }, 4).unwrap_or_else(|e| {
        eprintln!("watch: {e}");
        std::process::exit(1);
    });
    if let Some(w) = watcher.warning() {
        eprintln!("watch: warning: {w}");
    }
    if let Some(l) = launched.as_mut() {
        if let Err(e) = l.release() {
            usage(&e.to_string());
        }
    }
    let sets = plan_sets(&watches, watcher.slots(), classify);
    // The duty cycle counts in traps: price them on this machine.
    let mut cfg = DutyConfig {
        budget,
        ..DutyConfig::default()
    };
    match calibrate::measure_trap_cost(3) {
        Ok(ns) => cfg.trap_cost_ns = ns.max(1),
        Err(e) => eprintln!(
            "watch: warning: trap cost not measured ({e}); assuming {} us",
            cfg.trap_cost_ns / 1000
        ),
    }
    let stop = AtomicBool::new(false);
    let rep = run(
        &mut watcher,
        &sets,
        classify,
        cfg,
        Duration::from_secs_f64(secs),
        &stop,
    );
    if let Some(l) = launched.as_mut() {
        if l.try_wait().is_none() {
            l.terminate(Duration::from_secs(2), &mut || {});
        }
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let mut summary: BTreeMap<(u64, i32, String), u64> = BTreeMap::new();
    for h in watcher.hits() {
        if !quiet {
            let _ = writeln!(
                out,
                "{} {} {} ip={:#x} {:#x}/{} {:?}",
                h.time_ns, h.tid, h.cpu, h.ip, h.addr, h.len, h.access
            );
        }
        *summary
            .entry((h.addr, h.tid, format!("{:?}", h.access)))
            .or_default() += 1;
    }
    let _ = writeln!(out, "# hits per address, thread and access:");
    for ((addr, tid, access), n) in &summary {
        let _ = writeln!(out, "# {addr:#x} tid {tid} {access}: {n}");
    }
    let _ = writeln!(
        out,
        "# {} hits in {} sets; armed {:.1} % of {:.2} s; estimated slowdown {:.2} % (budget {:.1} %, {:.1} us per hit); losses {:?}{}",
        rep.hits,
        sets.len(),
        rep.armed_fraction * 100.0,
        rep.elapsed_ns as f64 / 1e9,
        rep.estimated_slowdown * 100.0,
        budget * 100.0,
        cfg.trap_cost_ns as f64 / 1e3,
        rep.losses,
        rep.ended_by.map(|e| format!("; stopped: {e}")).unwrap_or_default()
    );
}
