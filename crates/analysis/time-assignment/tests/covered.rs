//! `covered`, the default method: plain sampling's weighing for what no pair of records
//! explains, measured or expected lengths for the visits between two records, and a
//! cycle rate learned only from bounds that hold exactly.

#![allow(clippy::unwrap_used)]

mod common;

use common::B;
use kairos_model::BranchKind;
use kairos_time_assignment::{assign, Method, Point};

/// main calls f (300 ns) and g (700 ns) in turn, 50 ns apart, from t = 0; sampled
/// every `period` with a `depth`-deep ring; cycles (3 per ns, unsaturated) if asked.
/// Returns the profile and the exact self time of f and g.
fn program(
    period: u64,
    depth: usize,
    cycles: bool,
    until: u64,
) -> (kairos_model::Profile, [u64; 2]) {
    let mut b = B::new(depth as u32, cycles);
    let (main, f, g) = (b.frame("main"), b.frame("f"), b.frame("g"));
    // (time, from, to, kind) and who runs after each branch.
    let mut ev: Vec<(u64, u32, u32, BranchKind)> = Vec::new();
    let mut t = 0;
    let mut truth = [0u64; 2];
    let mut k = 0;
    while t < until {
        let (callee, len) = if k % 2 == 0 { (f, 300) } else { (g, 700) };
        t += 50;
        ev.push((t, main, callee, BranchKind::Call));
        ev.push((t + len, callee, main, BranchKind::Return));
        truth[k % 2] += len;
        t += len;
        k += 1;
    }
    let running = |x: u64| match ev.partition_point(|e| e.0 <= x) {
        0 => main,
        i => ev[i - 1].2,
    };
    let mut prev = 0;
    let mut s = period;
    while s <= t {
        let next = ev.partition_point(|e| e.0 <= s);
        let snap: Vec<common::R> = (next.saturating_sub(depth)..next)
            .map(|i| {
                let (at, from, to, kind) = ev[i];
                let before = if i == 0 { 0 } else { ev[i - 1].0 };
                let cy = cycles.then(|| ((at - before) * 3).max(1) as u32);
                (Some(from), Some(to), kind, cy, at > prev)
            })
            .collect();
        b.sample(s, 0, Some(running(s)), period, &snap);
        prev = s;
        s += period;
    }
    (b.p, truth)
}

fn total(points: &[Point], p: &kairos_model::Profile, name: &str) -> u64 {
    points
        .iter()
        .filter(|x| {
            x.frame
                .is_some_and(|f| p.frames[f as usize].function == name)
        })
        .map(|x| x.weight_ns)
        .sum()
}

#[test]
fn without_branch_records_it_is_plain_sampling() {
    let (mut p, _) = program(1000, 16, false, 50_000);
    p.branches.clear();
    assert_eq!(
        assign(&p, Method::Covered).unwrap().points,
        assign(&p, Method::None).unwrap().points
    );
}

#[test]
fn measured_cycles_give_the_visits_between_records_their_length() {
    let (p, truth) = program(2000, 16, true, 2_000_000);
    let a = assign(&p, Method::Covered).unwrap();
    // The rate (1/3 ns per cycle) from its lower bounds, a little below the truth.
    let rate: f64 = a
        .notes
        .iter()
        .find_map(|n| n.strip_prefix("covered: ")?.split(' ').next()?.parse().ok())
        .unwrap();
    assert!((0.32..=0.3334).contains(&rate), "{:?}", a.notes);
    // Every f and g visit lies between two records or is cut by a sample; the shares
    // come out within 1% of the truth.
    let all = (truth[0] + truth[1]) as f64;
    for (name, exact) in [("f", truth[0]), ("g", truth[1])] {
        let got = total(&a.points, &p, name) as f64;
        assert!(
            (got - exact as f64).abs() < 0.01 * all,
            "{name}: {got} vs {exact}"
        );
    }
    // A full visit of f between two records gets its 300 ns (to the rate's 1%).
    let full: Vec<u64> = a
        .points
        .iter()
        .filter(|x| {
            x.from_branch && x.weight_ns > 0 && p.frames[x.frame.unwrap() as usize].function == "f"
        })
        .map(|x| x.weight_ns)
        .collect();
    assert!(
        full.iter().filter(|&&w| w.abs_diff(300) <= 4).count() * 2 > full.len(),
        "{full:?}"
    );
}

#[test]
fn an_overflowed_ring_leaves_the_interval_to_plain_sampling() {
    // 4-deep ring, 20 us between samples: about 40 branches per interval, so every
    // snapshot overflowed and nothing says how long the few seen visits lasted.
    let (p, _) = program(20_000, 4, false, 2_000_000);
    let covered = assign(&p, Method::Covered).unwrap();
    let none = assign(&p, Method::None).unwrap();
    for name in ["main", "f", "g"] {
        assert_eq!(
            total(&covered.points, &p, name),
            total(&none.points, &p, name),
            "{name}"
        );
    }
    // Each interval's weight sums to its length, records included (weight 0).
    assert_eq!(
        covered.points.iter().map(|x| x.weight_ns).sum::<u64>(),
        none.points.iter().map(|x| x.weight_ns).sum::<u64>()
    );
    assert!(covered
        .points
        .iter()
        .filter(|x| x.from_branch)
        .all(|x| x.weight_ns == 0));
}

#[test]
fn saturated_cycles_leave_the_rate_unknown() {
    // Every call lasts far beyond 65535 cycles at 3 per ns: the 16-bit counts saturate,
    // no bound pins the rate down, and the method says so instead of guessing.
    let (mut p, _) = program(100_000, 16, true, 20_000_000);
    for b in &mut p.branches {
        b.cycles = b.cycles.map(|c| c.min(65_535));
    }
    for b in p
        .branches
        .iter_mut()
        .filter(|b| b.kind == BranchKind::Return)
    {
        b.cycles = Some(65_535);
    }
    let a = assign(&p, Method::Covered).unwrap();
    assert!(
        a.notes.iter().any(|n| n.contains("not converted to time")),
        "{:?}",
        a.notes
    );
}
