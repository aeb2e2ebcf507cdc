//! `nesting` (ours): segment durations per call/return context. A function's segments
//! differ by how they start and end: in a loop body `p3` runs briefly between returning
//! from `p3_A` and calling it again, while `p3_f2` after returning from `p3_B` may run
//! long before calling `p3_C`. The context of a segment is (the branch that opened it:
//! kind + FROM function, its function, the branch that closed it: kind + TO function;
//! the tail's closing branch is the sample).
//!
//! Durations per context are learned by non-negative least squares over the complete
//! intervals (each interval's length = the sum of its segments' durations, partial ones
//! counted half), with a ridge towards the `segments` per-function duration, so
//! contexts seen rarely keep the per-function value. Where cycles were measured the
//! prior is the measured mean of the context. Placement is as in `segments`.

use std::collections::HashMap;

use kairos_model::BranchKind;

use crate::methods::{cycles, durations, segments};
use crate::pipe::Out;
use crate::prepare::{FnKey, Iv, Prepared};

type Ctx = (
    Option<(BranchKind, FnKey)>,
    FnKey,
    Option<(BranchKind, FnKey)>,
);

/// Strength of the pull towards the per-function duration, in observations.
const PRIOR: f64 = 2.0;
const ITERATIONS: usize = 60;

fn contexts(p: &Prepared, iv: Iv<'_>) -> Vec<Ctx> {
    let links = p.links(&iv);
    let mut v: Vec<Ctx> = iv
        .recs
        .iter()
        .zip(links)
        .map(|(r, l)| (l.opened_by(), p.func(r), Some((l.kind, l.to_func))))
        .collect();
    let opener = iv
        .recs
        .last()
        .zip(links.last())
        .map(|(r, l)| (l.kind, p.func(r)));
    v.push((opener, iv.leaf_func, None));
    v
}

pub(crate) fn run(p: &Prepared, out: &mut Out) {
    let fd = segments::model(p);
    let fscale = durations::calibrate(p, |iv| segments::seg_durations(p, &fd, iv));
    // Intern contexts and build the rows (interval -> (context, factor)).
    let mut ids: HashMap<Ctx, usize> = HashMap::new();
    let mut prior: Vec<f64> = Vec::new();
    let mut keys: Vec<Vec<usize>> = Vec::with_capacity(p.n_intervals());
    for iv in p.ivs() {
        let k = contexts(p, iv)
            .into_iter()
            .map(|c| {
                *ids.entry(c).or_insert_with(|| {
                    prior.push(fd.get(c.1 as usize).copied().unwrap_or(0.0) * fscale);
                    prior.len() - 1
                })
            })
            .collect();
        keys.push(k);
    }
    if let Some(rho) = cycles::rate(p) {
        let mut acc = vec![(0.0, 0u32); prior.len()];
        for (iv, k) in p.ivs().zip(&keys) {
            for (r, &c) in iv.recs.iter().zip(k) {
                if let Some(cy) = r
                    .cycles()
                    .filter(|&cy| p.cycles_saturate.is_none_or(|s| cy < s))
                {
                    acc[c].0 += f64::from(cy) * rho;
                    acc[c].1 += 1;
                }
            }
        }
        for (x, (s, n)) in prior.iter_mut().zip(acc) {
            if n > 0 {
                *x = s / f64::from(n);
            }
        }
    }
    let rows: Vec<(usize, Vec<f64>)> = p
        .ivs()
        .enumerate()
        .filter(|(_, iv)| iv.complete && !iv.recs.is_empty())
        .map(|(i, iv)| (i, durations::factors(iv)))
        .collect();
    let floor = prior
        .iter()
        .copied()
        .filter(|&x| x > 0.0)
        .fold(f64::INFINITY, f64::min);
    let floor = if floor.is_finite() {
        floor * 1e-3
    } else {
        1e-9
    };
    let mut d: Vec<f64> = prior.iter().map(|&x| x.max(floor)).collect();
    for _ in 0..ITERATIONS {
        let mut num: Vec<f64> = prior.iter().map(|&x| PRIOR * x.max(floor)).collect();
        let mut den: Vec<f64> = d.iter().map(|&x| PRIOR * x).collect();
        for (i, f) in &rows {
            let iv = &p.intervals[*i];
            let pred: f64 = keys[*i].iter().zip(f).map(|(&k, f)| d[k] * f).sum();
            for (&k, f) in keys[*i].iter().zip(f) {
                num[k] += f * iv.len() as f64;
                den[k] += f * pred;
            }
        }
        for ((x, n), dn) in d.iter_mut().zip(&num).zip(&den) {
            if *dn > 0.0 {
                *x = (*x * n / dn).max(floor);
            }
        }
    }
    for (iv, k) in p.ivs().zip(&keys) {
        let seg: Vec<f64> = k.iter().map(|&k| d[k]).collect();
        durations::place(iv, &seg, 1.0, out);
    }
}
