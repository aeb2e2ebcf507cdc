//! Where a method's error comes from (issue 14 item 1; crates/lab/README.md): on the
//! synthetic `transitions` trace (or `spikes`), the `cycles` method as it is, with exact
//! unsaturated cycles, and oracles that know the covered part exactly and give the gap
//! no record covers to one estimate or another.
//!
//! `cargo run --release -p kairos-lab --example lbr_decompose -- [transitions|spikes|TRACE_DIR] [SEED]`
//! (TRACE_DIR: a real trace from `kairos collect trace`).

use kairos_lab::decompose::{coverage, exact_cycles, oracle_points, run_shares, Gap};
use kairos_lab::{emulate_lbr_with, score_points, score_with, synth, EmulateOptions, ScoreOptions};
use kairos_model::Profile;
use kairos_time_assignment::{assign, Method};

fn rate_note(p: &Profile, m: Method) -> String {
    let blind = Profile {
        calls: Vec::new(),
        ..p.clone()
    };
    assign(&blind, m)
        .map(|a| {
            a.notes
                .into_iter()
                .filter(|n| n.contains("per cycle") || n.contains("not converted"))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

fn main() -> Result<(), kairos_lab::Error> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "transitions".into());
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let trace = match which.as_str() {
        "spikes" => synth::spikes(2.0, seed).0,
        "transitions" => synth::transitions(3300),
        dir => {
            let r = kairos_result::ResultDir::open(dir)
                .map_err(|e| kairos_lab::Error::InvalidOptions(format!("{dir}: {e}")))?;
            kairos_result::read_profile(&r)
                .map_err(|e| kairos_lab::Error::InvalidOptions(format!("{dir}: {e}")))?
        }
    };
    let so = ScoreOptions::new(10_000_000);
    let kind = if matches!(which.as_str(), "spikes" | "transitions") {
        "2 s synthetic"
    } else {
        "real trace"
    };
    println!("{which}, {kind}, seed {seed}, cycles at 3 GHz; share error over 10 ms buckets\n");
    println!("| depth | interval | coverage | none | cycles | cycles, exact cycles | covered (ours) | oracle: all exact | {} |", Gap::ALL.map(|g| format!("oracle: gap to {}", g.as_str())).join(" | "));
    println!(
        "|---|---|---|---|---|---|---|---|{}",
        "---|".repeat(Gap::ALL.len())
    );
    let mut notes = Vec::new();
    for (depth, us) in [
        (16usize, 100u64),
        (32, 100),
        (16, 1000),
        (32, 1000),
        (16, 10_000),
    ] {
        let o = EmulateOptions {
            cycles: true,
            seed,
            ..EmulateOptions::new(us * 1000, depth)
        };
        let e = emulate_lbr_with(&trace, &o)?;
        let wide = exact_cycles(&e, o.cpu_ghz)?;
        let pick = |p: &Profile, m: Method| -> Result<f64, kairos_lab::Error> {
            let t = score_with(
                p,
                &ScoreOptions {
                    methods: vec![m],
                    ..so.clone()
                },
            )?;
            Ok(t.get(m).map_or(f64::NAN, |x| x.share_error * 100.0))
        };
        let mut row = format!(
            "| {depth} | {us} us | {:.0}% | {:.2}% | {:.2}% | {:.2}% | {:.2}% |",
            coverage(&e)? * 100.0,
            pick(&e, Method::None)?,
            pick(&e, Method::Cycles)?,
            pick(&wide, Method::Cycles)?,
            pick(&e, Method::Covered)?
        );
        row += &format!(
            " {:.2}% |",
            score_points(&e, &so, &oracle_points(&e, None)?)?.0 * 100.0
        );
        for g in Gap::ALL {
            row += &format!(
                " {:.2}% |",
                score_points(&e, &so, &oracle_points(&e, Some(g))?)?.0 * 100.0
            );
        }
        println!("{row}");
        notes.push(format!(
            "depth {depth}, {us} us: cycles: {} / with exact cycles: {}",
            rate_note(&e, Method::Cycles),
            rate_note(&wide, Method::Cycles)
        ));
    }
    println!();
    for n in notes {
        println!("- {n}");
    }
    // Whole-run shares: what the gap rule does to functions at a change of phase.
    let o = EmulateOptions {
        cycles: true,
        seed,
        ..EmulateOptions::new(100_000, 16)
    };
    let e = emulate_lbr_with(&trace, &o)?;
    let blind = Profile {
        calls: Vec::new(),
        ..e.clone()
    };
    let covered = assign(&blind, Method::Covered)
        .map(|a| a.points)
        .unwrap_or_default();
    let sample = run_shares(&e, &oracle_points(&e, Some(Gap::Sample))?)?;
    let ours = run_shares(&e, &covered)?;
    println!("\nWhole-run shares, depth 16 at 100 us (functions above 1%):\n");
    println!(
        "| function | exact | oracle, gap to the sample | covered (ours) |\n|---|---|---|---|"
    );
    for ((name, exact, s), (_, _, c)) in sample.iter().zip(&ours) {
        if *exact > 0.01 {
            println!(
                "| {name} | {:.2}% | {:.2}% | {:.2}% |",
                exact * 100.0,
                s * 100.0,
                c * 100.0
            );
        }
    }
    Ok(())
}
