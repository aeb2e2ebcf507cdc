//! The segment model shared by our estimators (`segments`, `nesting`).
//!
//! Between two consecutive branch records the thread runs one function: the FROM
//! function of the newer record (= the TO function of the older one). An interval is
//! thus a chain of segments: the head (ending at the oldest new record; in a complete
//! interval it started before t_{i-1}, so only part of it is inside), full segments,
//! and the tail (from the newest record to the sample, in the sampled function, cut by
//! the sample). Each segment gets an expected duration d, partial ones half of it.
//!
//! The interval is split in proportion to those durations. For overflowed snapshots (the
//! ring was full and shares nothing with the previous one) packing the records against
//! the sample with their expected durations and giving the unseen start to the oldest
//! record's function was tried (`PACK_LOST`); on emulated traces it scored slightly worse
//! than stretching the observed pattern over the whole interval, so it is off.

use crate::layout::split;
use crate::pipe::Out;
use crate::prepare::{Iv, Prepared};

/// Fraction of a segment's expected duration that lies inside the interval.
pub(crate) const PARTIAL: f64 = 0.5;
/// Whether overflowed snapshots keep expected durations packed against the sample.
const PACK_LOST: bool = false;

/// Factors of the segments of `iv`, oldest first, the tail last.
pub(crate) fn factors(iv: Iv<'_>) -> Vec<f64> {
    let n = iv.recs.len();
    (0..=n)
        .map(|k| {
            if k == n || (k == 0 && iv.complete) {
                PARTIAL
            } else {
                1.0
            }
        })
        .collect()
}

/// Expected duration per visit of each function: its plain-sampling time divided by the
/// number of segments of it that records ended; functions never ended by a record count
/// one visit; functions sampling never saw get half the smallest positive duration.
pub(crate) fn per_function(p: &Prepared) -> Vec<f64> {
    let n = p.n_funcs();
    let (mut w, mut visits) = (vec![0.0; n], vec![0.0; n]);
    for iv in p.ivs() {
        if let Some(x) = w.get_mut(iv.leaf_func as usize) {
            *x += iv.len() as f64;
        }
        for r in iv.recs {
            if let Some(x) = visits.get_mut(p.func(r) as usize) {
                *x += 1.0;
            }
        }
    }
    let mut d: Vec<f64> = w
        .iter()
        .zip(&visits)
        .map(|(w, v)| w / f64::max(*v, 1.0))
        .collect();
    let floor = d
        .iter()
        .copied()
        .filter(|&x| x > 0.0)
        .fold(f64::INFINITY, f64::min);
    let floor = if floor.is_finite() { floor * 0.5 } else { 1.0 };
    d.iter_mut().filter(|x| **x <= 0.0).for_each(|x| *x = floor);
    d
}

/// Scales durations so that, over complete intervals, expected and real lengths agree.
pub(crate) fn calibrate(p: &Prepared, seg_d: impl Fn(Iv<'_>) -> Vec<f64>) -> f64 {
    let (mut t, mut e) = (0.0, 0.0);
    for iv in p.ivs().filter(|iv| iv.complete && !iv.recs.is_empty()) {
        t += iv.len() as f64;
        e += seg_d(iv)
            .iter()
            .zip(factors(iv))
            .map(|(d, f)| d * f)
            .sum::<f64>();
    }
    if t > 0.0 && e > 0.0 {
        t / e
    } else {
        1.0
    }
}

/// Places the points of `iv` given each segment's expected full duration `d` (oldest
/// first, the tail last) and the calibration `scale`.
pub(crate) fn place(iv: Iv<'_>, d: &[f64], scale: f64, out: &mut Out) {
    let mut w: Vec<f64> = d
        .iter()
        .zip(factors(iv))
        .map(|(d, f)| d * f * scale)
        .collect();
    let sum: f64 = w.iter().sum();
    let t = iv.len() as f64;
    if PACK_LOST && !iv.complete && sum < t {
        if let Some(first) = w.first_mut() {
            *first += t - sum;
        }
    }
    split(iv, &w, out);
}
