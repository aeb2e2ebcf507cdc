//! Validation against an exact trace: a synthetic program's exact execution is sampled
//! with emulated LBR (last D call/return records before each sample, `is_new` since the
//! previous sample, cycles = ns since the previous record), every method assigns times,
//! and the per-bucket function-share error against the trace is compared.
//! `cargo test --release -p kairos-time-assignment --test emulated -- --nocapture` prints
//! the table.

#![allow(clippy::unwrap_used)]

mod common;

use common::B;
use kairos_model::BranchKind;
use kairos_time_assignment::{assign, Method};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn jitter(&mut self, mean: f64) -> u64 {
        (mean * (0.5 + self.next())).max(1.0) as u64
    }
}

/// Exact execution: segments (function, start, end) and branches (time, from, to, kind).
struct Trace {
    segs: Vec<(u32, u64, u64)>,
    branches: Vec<(u64, u32, u32, BranchKind)>,
}

/// main loops: A (which calls B twice), a short run in main, C; every ~5 ms a 100 us spike.
fn program(total_ns: u64, seed: u64) -> Trace {
    let mut r = Rng(seed);
    let mut t = 0u64;
    let mut tr = Trace {
        segs: Vec::new(),
        branches: Vec::new(),
    };
    let run = |tr: &mut Trace, t: &mut u64, f: u32, d: u64| {
        tr.segs.push((f, *t, *t + d));
        *t += d;
    };
    let (main, a, b, c, spike) = (0, 1, 2, 3, 4);
    let mut next_spike = 5_000_000.0 * r.next();
    while t < total_ns {
        run(&mut tr, &mut t, main, r.jitter(2_000.0));
        tr.branches.push((t, main, a, BranchKind::Call));
        run(&mut tr, &mut t, a, r.jitter(4_000.0));
        for _ in 0..2 {
            tr.branches.push((t, a, b, BranchKind::Call));
            run(&mut tr, &mut t, b, r.jitter(1_000.0));
            tr.branches.push((t, b, a, BranchKind::Return));
            run(&mut tr, &mut t, a, r.jitter(500.0));
        }
        tr.branches.push((t, a, main, BranchKind::Return));
        run(&mut tr, &mut t, main, r.jitter(300.0));
        tr.branches.push((t, main, c, BranchKind::Call));
        run(&mut tr, &mut t, c, r.jitter(15_000.0));
        tr.branches.push((t, c, main, BranchKind::Return));
        if t as f64 > next_spike {
            run(&mut tr, &mut t, main, r.jitter(200.0));
            tr.branches.push((t, main, spike, BranchKind::Call));
            run(&mut tr, &mut t, spike, 100_000);
            tr.branches.push((t, spike, main, BranchKind::Return));
            next_spike += 5_000_000.0 * (0.5 + r.next());
        }
    }
    tr
}

fn emulate(tr: &Trace, period: u64, depth: usize, cycles: bool) -> kairos_model::Profile {
    let mut b = B::new(depth as u32, cycles);
    let frames: Vec<u32> = ["main", "A", "B", "C", "spike"]
        .iter()
        .map(|n| b.frame(n))
        .collect();
    let end = tr.segs.last().map_or(0, |s| s.2);
    let (mut si, mut bi, mut prev) = (0usize, 0usize, 0u64);
    let mut t = period;
    while t <= end {
        while si < tr.segs.len() && tr.segs[si].2 < t {
            si += 1;
        }
        while bi < tr.branches.len() && tr.branches[bi].0 <= t {
            bi += 1;
        }
        let leaf = tr.segs.get(si).map(|s| frames[s.0 as usize]);
        let lo = bi.saturating_sub(depth);
        let snap: Vec<common::R> = (lo..bi)
            .map(|k| {
                let (bt, from, to, kind) = tr.branches[k];
                let before = if k == 0 { 0 } else { tr.branches[k - 1].0 };
                let cy = cycles.then(|| (bt - before).clamp(1, u32::MAX as u64) as u32);
                (
                    Some(frames[from as usize]),
                    Some(frames[to as usize]),
                    kind,
                    cy,
                    bt > prev,
                )
            })
            .collect();
        b.sample(t, 0, leaf, period, &snap);
        prev = t;
        t += period;
    }
    b.p
}

/// Mean over buckets of half the L1 distance between estimated and true function shares.
fn error(tr: &Trace, p: &kairos_model::Profile, m: Method, bucket: u64) -> Option<f64> {
    let a = assign(p, m).ok()?;
    let end = p.samples.last()?.time_ns;
    let nb = (end / bucket) as usize;
    let nf = 5;
    let mut truth = vec![vec![0.0; nf]; nb];
    let mut est = vec![vec![0.0; nf]; nb];
    let add = |grid: &mut Vec<Vec<f64>>, f: usize, s: u64, e: u64| {
        let mut x = s;
        while x < e {
            let k = (x / bucket) as usize;
            let stop = ((k as u64 + 1) * bucket).min(e);
            if let Some(row) = grid.get_mut(k) {
                row[f] += (stop - x) as f64;
            }
            x = stop;
        }
    };
    for &(f, s, e) in &tr.segs {
        add(&mut truth, f as usize, s, e.min(end));
    }
    for pt in &a.points {
        if let Some(f) = pt.frame {
            add(&mut est, f as usize, pt.time_ns - pt.weight_ns, pt.time_ns);
        }
    }
    let mut sum = 0.0;
    for (t, e) in truth.iter().zip(&est) {
        let (tt, et): (f64, f64) = (t.iter().sum(), e.iter().sum());
        if tt <= 0.0 || et <= 0.0 {
            sum += 1.0;
            continue;
        }
        sum += 0.5
            * t.iter()
                .zip(e)
                .map(|(a, b)| (a / tt - b / et).abs())
                .sum::<f64>();
    }
    Some(sum / nb as f64)
}

#[test]
fn our_estimators_beat_paper_method_3_against_an_exact_trace() {
    let tr = program(400_000_000, 7);
    println!(
        "{:>8} {:>5} {:>6} | {}",
        "period",
        "depth",
        "cycles",
        Method::ALL.map(|m| format!("{m:>12}")).join(" ")
    );
    for (period, depth, cycles) in [
        (1_000_000, 16, false),
        (1_000_000, 32, false),
        (100_000, 16, false),
        (100_000, 32, false),
        (1_000_000, 16, true),
        (100_000, 16, true),
    ] {
        let p = emulate(&tr, period, depth, cycles);
        let bucket = period / 10;
        let errs: Vec<Option<f64>> = Method::ALL
            .iter()
            .map(|&m| error(&tr, &p, m, bucket))
            .collect();
        let cells: Vec<String> = errs
            .iter()
            .map(|e| e.map_or("-".into(), |e| format!("{e:12.4}")))
            .collect();
        println!("{period:>8} {depth:>5} {cycles:>6} | {}", cells.join(" "));
        let get =
            |m: Method| errs[Method::ALL.iter().position(|&x| x == m).unwrap_or(0)].unwrap_or(1.0);
        assert!(
            get(Method::Segments) < get(Method::Proportional),
            "segments vs proportional at {period} {depth}"
        );
        assert!(
            get(Method::Nesting) < get(Method::Proportional),
            "nesting vs proportional at {period} {depth}"
        );
    }
}
