//! Runs a fuzz target on files without AFL, to reproduce and locate a crash:
//!
//!     cargo run --release --bin replay -- TARGET FILE_OR_DIR...
//!
//! Prints one line per file (`ok` or the panic message with its file:line) and exits 1
//! when any input panicked. For a full backtrace run it on the one file with
//! RUST_BACKTRACE=1 and `--hook` (keeps Rust's own panic message and backtrace).
//! `--stats` adds what the reader decoded from each file (to check a seed corpus).
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let raw = args.iter().position(|a| a == "--hook").map(|i| args.remove(i)).is_some();
    let stats = args.iter().position(|a| a == "--stats").map(|i| args.remove(i)).is_some();
    let Some(name) = args.first().cloned() else {
        eprintln!("usage: replay [--hook] [--stats] TARGET FILE_OR_DIR...   (targets: {})", names());
        std::process::exit(2);
    };
    let Some(target) = kairos_fuzz::target(&name) else {
        eprintln!("replay: no target {name:?} (targets: {})", names());
        std::process::exit(2);
    };
    let mut files = Vec::new();
    for a in &args[1..] {
        let p = PathBuf::from(a);
        if p.is_dir() {
            files.extend(kairos_fuzz::inputs_in(&p));
        } else {
            files.push(p);
        }
    }
    let mut failed = 0;
    for f in &files {
        let data = match std::fs::read(f) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("{}: {e}", f.display());
                failed += 1;
                continue;
            }
        };
        let start = Instant::now();
        if raw {
            (target.run)(&data);
            println!("ok     {:>8.2} ms  {}", start.elapsed().as_secs_f64() * 1e3, f.display());
            continue;
        }
        match kairos_fuzz::run_catching(target, &data) {
            Ok(()) => {
                let took = start.elapsed().as_secs_f64() * 1e3;
                let summary = if stats { format!("  [{}]", kairos_fuzz::reader_summary(&data)) } else { String::new() };
                println!("ok     {took:>8.2} ms  {}{summary}", f.display());
            }
            Err(panic) => {
                failed += 1;
                println!("PANIC  {}: {panic}", f.display());
            }
        }
    }
    println!("{name}: {} inputs, {failed} failed", files.len());
    std::process::exit(i32::from(failed > 0));
}

fn names() -> String {
    kairos_fuzz::TARGETS.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
}
