//! The accuracy table of issue 3 item 8: every time-assignment method x LBR depth (16,
//! 32) x sampling interval (1000, 100 us) on the `transitions` and `spikes` traces.
//!
//! `cargo run --release -p kairos-lab --example lbr_accuracy [SECONDS] [SEED]`
//!
//! The traces are the synthetic models of the two sample programs (`kairos_lab::synth`),
//! so the table is the same on every machine; `bench/lbr_accuracy.sh` scores real traces
//! from `kairos collect trace` with the CLI where the tracer is available.

use kairos_lab::{emulate_lbr_with, score_with, synth, EmulateOptions, ScoreOptions};
use kairos_time_assignment::Method;

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (spikes, _) = synth::spikes(seconds, seed);
    let transitions = synth::transitions((seconds * 1650.0) as u32);
    println!("LBR accuracy (synthetic traces of {seconds} s, seed {seed}); share error = mean total variation distance per 10 ms bucket;");
    println!("recall = rare_delay calls >= 100 us found in a 100 us bucket they overlap.\n");
    println!("{:<12} {:>5} {:>9} {:<13} {:>8} {:>10} {:>12}", "trace", "depth", "interval", "method", "pts/smp", "share err", "recall");
    let mut goals = Vec::new();
    for (name, trace) in [("transitions", &transitions), ("spikes", &spikes)] {
        for depth in [16usize, 32] {
            for interval_us in [1000u64, 100] {
                let o = EmulateOptions { seed, ..EmulateOptions::new(interval_us * 1000, depth) };
                let o = EmulateOptions { cycles: true, ..o };
                let table = match emulate_lbr_with(trace, &o).and_then(|e| score_with(&e, &ScoreOptions::new(10_000_000))) {
                    Ok(t) => t,
                    Err(e) => {
                        eprintln!("{name} depth {depth} interval {interval_us} us: {e}");
                        continue;
                    }
                };
                for r in &table.rows {
                    match r.result {
                        Some(m) => {
                            let recall = if name == "spikes" {
                                format!("{}/{} {:>3.0}%", m.events_found, table.events_total, table.recall(r.method).unwrap_or(0.0))
                            } else {
                                "-".into()
                            };
                            println!(
                                "{name:<12} {depth:>5} {:>6} us {:<13} {:>8.2} {:>9.1}% {recall:>12}",
                                interval_us, r.method.to_string(), m.points_per_sample, m.share_error * 100.0
                            );
                        }
                        None => println!("{name:<12} {depth:>5} {:>6} us {:<13} n/a: {}", interval_us, r.method.to_string(), r.note.clone().unwrap_or_default()),
                    }
                }
                goals.push((name, depth, interval_us, table));
            }
        }
    }
    println!("\nGoals:");
    for (name, depth, interval_us, t) in &goals {
        let best = t
            .rows
            .iter()
            .filter(|r| !matches!(r.method, Method::None | Method::Equal | Method::Ratio | Method::Proportional))
            .filter_map(|r| r.result.map(|m| (r.method, m)))
            .min_by(|a, b| a.1.share_error.total_cmp(&b.1.share_error));
        let prop = t.get(Method::Proportional).map(|m| m.share_error);
        if let (Some((bm, b)), Some(p)) = (best, prop) {
            println!(
                "  {name} {depth}-deep {interval_us} us: best of ours `{bm}` error {:.1}% vs proportional {:.1}% -> {} (goal: at most half)",
                b.share_error * 100.0,
                p * 100.0,
                if b.share_error <= p / 2.0 { "met" } else { "NOT met" }
            );
        }
        if *name == "spikes" && *depth == 16 && *interval_us == 1000 {
            let best_recall = t.rows.iter().filter_map(|r| t.recall(r.method).map(|x| (r.method, x))).max_by(|a, b| a.1.total_cmp(&b.1));
            if let (Some((m, r)), Some(plain)) = (best_recall, t.recall(Method::None)) {
                println!(
                    "  spikes 16-deep 1 ms: best recall `{m}` {r:.0}% vs plain sampling {plain:.0}% -> {} (goal: >= 90%)",
                    if r >= 90.0 { "met" } else { "NOT met" }
                );
            }
        }
    }
}
