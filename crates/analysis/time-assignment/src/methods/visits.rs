//! `visits` (ours): like `segments`, every stretch between two branch records belongs to
//! the FROM function of the newer record and has that function's expected duration per
//! visit d_f (plain-sampling time / visits, or measured cycles). What differs is where
//! the interval's slack goes. The full visits in the middle of an interval are the
//! best-known stretches; the head (a visit that began before t_{i-1}) and the tail (cut
//! by the sample) are only partly inside and their length is mostly unknown. So each
//! stretch gets its expected length plus a share of the slack (interval length minus the
//! sum of expected lengths) in proportion to its uncertainty, the best linear estimate
//! under the constraint that the stretches fill the interval:
//!
//!   x_k = mu_k + v_k / sum(v) x (T - sum(mu))
//!
//! with mu = d (full) or d/2 (partial), v = (CV x d)^2 (full) or d^2 (partial). A rare
//! 150 us call seen in the middle of a 1 ms interval thus keeps about 150 us, where
//! `segments` and method 3 stretch it with everything else when the interval holds
//! few records. When the expected lengths overfill the interval (negative slack), all
//! shrink together as in `segments`: every record proves its function ran, so none is
//! squeezed to nothing.
//!
//! Chaining: the head of a complete interval continues the visit the previous sample
//! was in, whose elapsed part b this method assigned as the previous tail. So the head
//! expects d - b (at least 5% of d), known as well as a full visit unless b already exceeds d:
//! then the visit is an outlier (a long call, a preemption) and its variance grows with
//! the excess, so the slack goes there rather than to a short function sampled next.
//!
//! Overflowed snapshots (the ring was full and shares nothing with the previous one):
//! the oldest record's stretch began with a lost branch, so it is a full visit, and the
//! start of the interval is not covered by any record. The best guess for that uncovered
//! part is the mix the records show, so the covered stretches are scaled up together
//! (as in `segments`) rather than piling the gap onto one stretch.

use std::collections::HashMap;

use kairos_model::ThreadIdx;

use crate::layout::split;
use crate::methods::segments;
use crate::pipe::Out;
use crate::prepare::{FnKey, Iv, Prepared};

/// Coefficient of variation assumed for a full visit's duration.
const CV: f64 = 0.3;

/// The stretch lengths of `iv` (oldest first, the tail last) given per-function d and,
/// when known, how long the head's visit had already run before the interval began.
pub(crate) fn lengths(p: &Prepared, d: &[f64], iv: Iv<'_>, before: Option<f64>) -> Vec<f64> {
    let mu_full = segments::seg_durations(p, d, iv);
    let n = mu_full.len();
    let t = iv.len() as f64;
    let partial = |k: usize| k + 1 == n || (k == 0 && iv.complete);
    if !iv.complete {
        // Scale the covered pattern over the whole interval; the tail still counts half.
        let mu: Vec<f64> = mu_full
            .iter()
            .enumerate()
            .map(|(k, m)| if partial(k) { m * 0.5 } else { *m })
            .collect();
        let s: f64 = mu.iter().sum();
        return if s > 0.0 {
            mu.iter().map(|m| m * t / s).collect()
        } else {
            mu
        };
    }
    let mut mu: Vec<f64> = mu_full
        .iter()
        .enumerate()
        .map(|(k, m)| if partial(k) { m * 0.5 } else { *m })
        .collect();
    let mut v: Vec<f64> = mu_full
        .iter()
        .enumerate()
        .map(|(k, m)| if partial(k) { m * m } else { (CV * m).powi(2) })
        .collect();
    // The head continues the visit the previous interval's tail was in: what is left of
    // it is its expected length minus what already ran (a little at least: the record
    // proves it ran), known about as well as a full
    // visit, unless the visit has already outrun its expected length: then it is an
    // outlier (a long call, a preemption) and how much more it runs is anyone's guess.
    if let (Some(b), true) = (before, n > 1) {
        let d = mu_full[0];
        mu[0] = (d - b).max(0.05 * d);
        v[0] = (CV * d).powi(2) + (b - d).max(0.0).powi(2);
    }
    let total: f64 = mu.iter().sum();
    if total > t {
        // Overfull: every record proves its function ran, so none is squeezed to nothing;
        // all shrink together.
        return mu.iter().map(|m| m * t / total).collect();
    }
    // Slack >= 0 here, so no stretch can go below its expected length.
    let vs: f64 = v.iter().sum();
    let slack = t - total;
    mu.iter()
        .zip(&v)
        .map(|(m, vk)| {
            if vs > 0.0 {
                m + vk / vs * slack
            } else {
                m * t / total.max(f64::MIN_POSITIVE)
            }
        })
        .collect()
}

pub(crate) fn run(p: &Prepared, out: &mut Out) {
    let d = segments::model(p);
    // Per thread: the sampled function and how long its visit has run at the sample.
    let mut open: HashMap<ThreadIdx, (FnKey, f64)> = HashMap::new();
    for iv in p.ivs() {
        let prev = open.get(&iv.thread).copied();
        let head = iv.recs.first().map_or(iv.leaf_func, |r| p.func(r));
        let before = prev
            .filter(|&(f, _)| iv.complete && f == head)
            .map(|(_, b)| b);
        let x = lengths(p, &d, iv, before);
        split(iv, &x, out);
        // A sample with no new record is still in the visit the previous one was in.
        let ran = if iv.recs.is_empty() {
            before.unwrap_or(0.0) + iv.len() as f64
        } else {
            x.last().copied().unwrap_or(0.0)
        };
        open.insert(iv.thread, (iv.leaf_func, ran));
    }
}
