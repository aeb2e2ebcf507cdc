//! Lays an interval's points out in time: given one non-negative weight per point
//! (oldest record first, the sample last), the interval is divided in proportion to the
//! weights and each point is placed at the end of its sub-interval, so the sample stays
//! at t_i and a record's point covers the execution that its branch ended.

use crate::pipe::Out;
use crate::prepare::Iv;
use crate::Point;

/// Appends the points of `iv` for `weights` (len = records + 1). All-zero or non-finite
/// weights fall back to an equal split. Weights (ns) always sum to the interval length.
pub(crate) fn split(iv: Iv<'_>, weights: &[f64], out: &mut Out) {
    let n = iv.recs.len() + 1;
    let clean: Vec<f64> = (0..n)
        .map(|k| {
            weights
                .get(k)
                .copied()
                .filter(|w| w.is_finite() && *w > 0.0)
                .unwrap_or(0.0)
        })
        .collect();
    let total: f64 = clean.iter().sum();
    let (clean, total) = if total > 0.0 {
        (clean, total)
    } else {
        (vec![1.0; n], n as f64)
    };
    let t = iv.len();
    let mut cum = 0.0;
    let mut prev = 0u64;
    for (k, w) in clean.iter().enumerate() {
        cum += w;
        let off = if k + 1 == n {
            t
        } else {
            ((t as f64) * (cum / total))
                .round()
                .clamp(prev as f64, t as f64) as u64
        };
        let (frame, record) = match iv.recs.get(k) {
            Some(r) => (r.frame(), Some(r.record)),
            None => (iv.leaf_frame(), None),
        };
        let from_branch = record.is_some();
        out.push(Point {
            time_ns: iv.start + off,
            thread: iv.thread,
            frame,
            weight_ns: off - prev,
            from_branch,
            sample: iv.sample,
            record,
        });
        prev = off;
    }
}

/// r_f of a function, with zero shares lifted to `eps` so they still get a point.
pub(crate) fn share_or(shares: &[f64], f: u32, eps: f64) -> f64 {
    let r = shares.get(f as usize).copied().unwrap_or(0.0);
    if r > 0.0 {
        r
    } else {
        eps
    }
}

/// A small share for functions plain sampling never saw: 1% of the smallest positive share.
pub(crate) fn epsilon(shares: &[f64]) -> f64 {
    let m = shares
        .iter()
        .copied()
        .filter(|&r| r > 0.0)
        .fold(f64::INFINITY, f64::min);
    if m.is_finite() {
        m * 0.01
    } else {
        1.0
    }
}
