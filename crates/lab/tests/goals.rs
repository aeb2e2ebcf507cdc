//! Issue 14's goals for the default time-assignment method, on the synthetic traces of
//! the sample programs with fixed seeds (deterministic: nothing here depends on timing
//! or on the machine). The table with every method is printed by
//! `cargo run --release -p kairos-lab --example lbr_accuracy`.
#![allow(clippy::unwrap_used, clippy::panic)]

use kairos_lab::accuracy::{mean_sd, paired, run_cell, Cell, CellRuns, Cycles};
use kairos_lab::synth;
use kairos_time_assignment::Method;

const SEEDS: [u64; 3] = [1, 2, 3];
const SECONDS: f64 = 1.0;
const METHODS: [Method; 2] = [Method::None, Method::DEFAULT];

fn cell(trace: &str, depth: usize, interval_us: u64, cycles: Cycles) -> CellRuns {
    let make = |seed: u64| match trace {
        "spikes" => synth::spikes(SECONDS, seed).0,
        _ => synth::transitions((SECONDS * 1650.0) as u32),
    };
    run_cell(
        trace,
        make,
        Cell {
            depth,
            interval_ns: interval_us * 1000,
            cycles,
        },
        &SEEDS,
        &METHODS,
    )
    .unwrap()
}

fn describe(c: &CellRuns) -> String {
    let err = |m: Method| {
        c.get(m)
            .map(|r| mean_sd(&r.share_error))
            .unwrap_or((f64::NAN, 0.0))
    };
    let (n, d) = (err(Method::None), err(Method::DEFAULT));
    let (diff, noise) = paired(
        &c.get(Method::DEFAULT).unwrap().share_error,
        &c.get(Method::None).unwrap().share_error,
    );
    format!(
        "{} depth {} {} us cycles {}: none {:.3}% ±{:.3}, {} {:.3}% ±{:.3} (paired difference {:+.4}% ±{:.4}), coverage {:.0}%",
        c.trace,
        c.cell.depth,
        c.cell.interval_ns / 1000,
        c.cell.cycles.as_str(),
        n.0 * 100.0,
        n.1 * 100.0,
        Method::DEFAULT,
        d.0 * 100.0,
        d.1 * 100.0,
        diff * 100.0,
        noise * 100.0,
        mean_sd(&c.coverage).0 * 100.0
    )
}

#[test]
fn the_default_is_never_worse_than_plain_sampling() {
    for trace in ["transitions", "spikes"] {
        for depth in [16, 32] {
            for us in [1000, 100] {
                for cycles in [Cycles::Lbr, Cycles::No] {
                    let c = cell(trace, depth, us, cycles);
                    assert_eq!(
                        c.worse_than_none(Method::DEFAULT),
                        Some(false),
                        "{}",
                        describe(&c)
                    );
                }
            }
        }
    }
}

#[test]
fn the_default_halves_the_error_and_finds_the_delays_at_1_ms() {
    for depth in [16, 32] {
        for cycles in [Cycles::Lbr, Cycles::No] {
            let c = cell("spikes", depth, 1000, cycles);
            assert!(mean_sd(&c.coverage).0 >= 0.1, "{}", describe(&c));
            let gain = c.gain(Method::DEFAULT).unwrap();
            assert!(gain >= 2.0, "gain {gain:.2}: {}", describe(&c));
            let recall = mean_sd(&c.get(Method::DEFAULT).unwrap().recall).0;
            assert!(recall >= 90.0, "recall {recall:.0}%: {}", describe(&c));
        }
    }
}

#[test]
fn known_cycles_make_the_default_better_not_worse() {
    // Exact cycles (a known rate): the covered stretches get their measured lengths.
    let exact = cell("spikes", 16, 100, Cycles::Wide);
    let gain = exact.gain(Method::DEFAULT).unwrap();
    assert!(gain >= 2.0, "gain {gain:.2}: {}", describe(&exact));
    for (trace, us) in [("spikes", 1000), ("spikes", 100), ("transitions", 100)] {
        let with = cell(trace, 16, us, Cycles::Wide);
        let without = cell(trace, 16, us, Cycles::No);
        let e = |c: &CellRuns| mean_sd(&c.get(Method::DEFAULT).unwrap().share_error).0;
        assert!(
            e(&with) <= e(&without) * 1.01,
            "with cycles {}\nwithout {}",
            describe(&with),
            describe(&without)
        );
    }
}
