//! Manual check and measurement: `collect OUT.perf.data INTERVAL_US [dwarf] [auto] -- PROGRAM ARGS...`,
//! `... -p PID SECONDS`, or `... -a SECONDS`. Prints the summary.

use std::time::Duration;

use kairos_collector::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: collect OUT INTERVAL_US [dwarf] [auto] (-- PROGRAM ARGS... | -p PID SECS | -a SECS)");
        std::process::exit(2);
    }
    let out = std::path::PathBuf::from(&args[0]);
    let interval: u64 = args[1].parse().unwrap_or(1000);
    let mut i = 2;
    let mut unwinding = Unwinding::FramePointers;
    let mut event = EventChoice::CpuClock;
    while i < args.len() && !args[i].starts_with('-') {
        match args[i].as_str() {
            "dwarf" => {
                unwinding = Unwinding::Dwarf {
                    stack_bytes: Unwinding::DEFAULT_STACK_BYTES,
                }
            }
            "auto" => event = EventChoice::Auto,
            _ => {}
        }
        i += 1;
    }
    let secs = |s: Option<&String>| {
        s.and_then(|s| s.parse::<f64>().ok())
            .map(Duration::from_secs_f64)
    };
    let (target, duration) = match args.get(i).map(String::as_str) {
        Some("-p") => (
            Target::Pid(args.get(i + 1).and_then(|p| p.parse().ok()).unwrap_or(0)),
            secs(args.get(i + 2)),
        ),
        Some("-a") => (Target::SystemWide, secs(args.get(i + 1))),
        _ => (
            Target::Launch {
                program: args.get(i + 1).cloned().unwrap_or_default().into(),
                args: args.iter().skip(i + 2).map(Into::into).collect(),
            },
            None,
        ),
    };
    let mut o = CollectOptions::new(target, out);
    o.interval_us = interval;
    o.unwinding = unwinding;
    o.event = event;
    o.duration = duration;
    match collect(&o, &mut |p| eprintln!("{p:?}")) {
        Ok(s) => println!("{s:#?}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
