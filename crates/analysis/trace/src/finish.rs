//! The end of `collect trace`: the calls become the result's profile (`calls` table),
//! the manifest says what was traced, how and at what cost, and the summary is printed.

use kairos_analysis_api::Failure;
use kairos_result::ResultDir;
use kairos_session as session;
use serde_json::json;

use crate::recorded::{Mode, Recorded};

pub(crate) fn finish(
    dir: &mut ResultDir,
    mode: Mode,
    reason: &str,
    untraced: Option<f64>,
    rec: Recorded,
) -> Result<(), Failure> {
    let (profile, sym_notes) = crate::build_profile(
        &rec.threads,
        &rec.functions,
        kairos_symbolize::SymbolizerOptions::default(),
    );
    let c = Counts::of(&rec, &profile);
    let overhead = untraced.map(|u| {
        let slowdown = if u > 0.0 { rec.traced_seconds / u } else { 0.0 };
        // Negative when run-to-run noise exceeds the tracer's cost (few calls): reported
        // as is, so the reader sees the measurement rather than a clamped zero.
        let per_call = if c.calls > 0 {
            (rec.traced_seconds - u) * 1e9 / c.calls as f64
        } else {
            0.0
        };
        (u, slowdown, per_call)
    });
    let m = dir.manifest_mut();
    m.duration_secs = Some(rec.traced_seconds);
    m.target_exit = Some(rec.exit);
    m.stopped_by = Some(match rec.interrupted {
        Some(sig) => session::stop_reason(&kairos_collector::StopReason::Signal(sig)),
        None => "target exited".into(),
    });
    m.notes.extend(rec.notes.iter().cloned());
    m.notes.extend(sym_notes);
    c.note(&rec, &mut m.notes);
    m.extra.insert(
        "trace".into(),
        c.manifest_entry(&rec, &profile, (mode, reason), overhead),
    );
    let tables = kairos_result::write_profile(dir, &profile).map_err(|e| {
        Failure::failed(format!(
            "cannot write the result tables in {}: {e}; check free disk space and permissions",
            dir.path().display()
        ))
    })?;
    dir.manifest_mut().tables = tables;
    session::save(dir)?;
    print_summary(dir, &profile, mode, reason, overhead, rec.traced_seconds);
    Ok(())
}

/// What the pairing of the trace left over, besides the calls.
struct Counts {
    calls: u64,
    /// Exits with no entry, and calls closed by a caller's exit.
    unmatched: u64,
    unwound: u64,
    /// Calls still open at the end, and their functions' names (each once, sorted).
    open: usize,
    open_names: Vec<String>,
}

impl Counts {
    fn of(rec: &Recorded, profile: &kairos_model::Profile) -> Counts {
        let sum =
            |f: fn(&crate::Paired) -> u64| rec.threads.iter().map(|t| f(&t.paired)).sum::<u64>();
        let mut open_names: Vec<String> = rec
            .threads
            .iter()
            .flat_map(|t| t.paired.open_at_end.iter())
            .filter_map(|&f| rec.functions.get(f as usize))
            .filter_map(|loc| {
                profile
                    .frames
                    .iter()
                    .find(|fr| fr.address == loc.address)
                    .map(|fr| fr.function.clone())
            })
            .collect();
        let open = open_names.len();
        open_names.sort();
        open_names.dedup();
        Counts {
            calls: profile.calls.len() as u64,
            unmatched: sum(|p| p.unmatched_exits),
            unwound: sum(|p| p.unwound),
            open,
            open_names,
        }
    }

    /// A note for each thing that makes calls wrong or missing.
    fn note(&self, rec: &Recorded, notes: &mut Vec<String>) {
        let (open, unmatched, unwound) = (self.open, self.unmatched, self.unwound);
        if open > 0 {
            notes.push(format!("{open} calls were still open when the trace ended ({}); they end at the last time stamp", self.open_names.join(", ")));
        }
        if unmatched > 0 || unwound > 0 {
            notes.push(format!("{unmatched} exits had no matching entry and {unwound} calls were closed by a caller's exit (longjmp, exceptions, or missed returns)"));
        }
        if rec.lost_events > 0 {
            notes.push(format!(
                "the kernel dropped {} probe hits (ring buffer full); calls around them may be wrong",
                rec.lost_events
            ));
        }
        if !rec.refused.is_empty() {
            let list: Vec<String> = rec
                .refused
                .iter()
                .map(|(n, why)| format!("{n} ({why})"))
                .collect();
            notes.push(format!(
                "the kernel refused to probe {} functions, not traced: {}",
                rec.refused.len(),
                list.join(", ")
            ));
        }
    }

    /// The manifest's `trace` entry: how it was traced, the counts and the overhead.
    fn manifest_entry(
        &self,
        rec: &Recorded,
        profile: &kairos_model::Profile,
        (mode, reason): (Mode, &str),
        overhead: Option<(f64, f64, f64)>,
    ) -> serde_json::Value {
        json!({
            "mode": match mode { Mode::Instrument => "instrument", Mode::Uprobes => "uprobes" },
            "mode_reason": reason,
            "clock": "CLOCK_MONOTONIC",
            "calls": self.calls,
            "threads": profile.threads.len(),
            "functions": profile.frames.len(),
            "unmatched_exits": self.unmatched,
            "unwound_calls": self.unwound,
            "open_at_end": self.open,
            "lost_events": rec.lost_events,
            "probed_functions": rec.probed,
            "refused_functions": rec.refused.iter().map(|(n, why)| json!({"name": n, "reason": why})).collect::<Vec<_>>(),
            "overhead": overhead.map(|(u, s, p)| json!({
                "untraced_seconds": u, "traced_seconds": rec.traced_seconds, "slowdown": s, "ns_per_call": p,
            })),
        })
    }
}

fn print_summary(
    dir: &ResultDir,
    p: &kairos_model::Profile,
    mode: Mode,
    reason: &str,
    overhead: Option<(f64, f64, f64)>,
    traced: f64,
) {
    let mode = match mode {
        Mode::Instrument => "instrument",
        Mode::Uprobes => "uprobes",
    };
    println!("\nTrace ({mode}: {reason})");
    println!(
        "  threads {}, functions {}, calls {}",
        p.threads.len(),
        p.frames.len(),
        p.calls.len()
    );
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
            (Some(file), Some(line)) => {
                format!("  {}:{line}", file.rsplit('/').next().unwrap_or(file))
            }
            _ => String::new(),
        };
        println!("  {n:>10}  {:>12.3}  {}{at}", *ns as f64 / 1e6, fr.function);
    }
    for n in &dir.manifest().notes {
        println!("  note: {n}");
    }
    println!("\nResult: {}", dir.path().display());
}
