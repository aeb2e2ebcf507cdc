//! `segments` (ours): every segment between two branches is sized by its function's
//! expected duration per visit, not by the function's share of the run as in paper
//! method 3. A function that runs often but briefly (large share, many visits) no
//! longer swallows the interval; one that runs rarely but long keeps its length. See
//! [`crate::methods::durations`] for the segment model and overflowed snapshots.
//!
//! Where records carry measured cycles, the per-function durations are the measured
//! means instead (cycles x the run's ns-per-cycle rate).

use crate::methods::{cycles, durations};
use crate::pipe::Out;
use crate::prepare::{Iv, Prepared};

/// Per-function durations: measured where cycles exist, sampled time / visits elsewhere.
pub(crate) fn model(p: &Prepared) -> Vec<f64> {
    let mut d = durations::per_function(p);
    if let Some(rho) = cycles::rate(p) {
        let mut acc = vec![(0.0, 0u32); d.len()];
        for r in p.all_recs().iter() {
            if let (Some(c), Some(a)) = (r.cycles(), acc.get_mut(p.func(r) as usize)) {
                if p.cycles_saturate.is_none_or(|s| c < s) {
                    a.0 += f64::from(c) * rho;
                    a.1 += 1;
                }
            }
        }
        for (x, (sum, n)) in d.iter_mut().zip(acc) {
            if n > 0 {
                *x = sum / f64::from(n);
            }
        }
    }
    d
}

pub(crate) fn seg_durations(p: &Prepared, d: &[f64], iv: Iv<'_>) -> Vec<f64> {
    let get = |f: u32| d.get(f as usize).copied().unwrap_or(0.0);
    iv.recs
        .iter()
        .map(|r| get(p.func(r)))
        .chain([get(iv.leaf_func)])
        .collect()
}

pub(crate) fn run(p: &Prepared, out: &mut Out) {
    let d = model(p);
    let scale = durations::calibrate(p, |iv| seg_durations(p, &d, iv));
    for iv in p.ivs() {
        durations::place(iv, &seg_durations(p, &d, iv), scale, out);
    }
}
