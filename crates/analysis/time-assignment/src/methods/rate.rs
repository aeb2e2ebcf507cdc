//! The ns-per-cycle rate of LBR cycle counts, learned only where the data pins it down.
//!
//! LBR_INFO cycles count core cycles since the previous entry; turning them into ns
//! needs the rate. A ratio of sums (interval lengths over cycles) is wrong wherever an
//! interval's records do not span exactly the interval: the stretch before the first new
//! record and after the newest one is unmeasured, and on a busy loop whose ring
//! overflows the records span a few percent of the interval (`cycles` learned 25x the
//! true rate on `transitions` that way, see crates/lab/README.md). Two bounds hold
//! exactly instead:
//!
//! - upper: the segments ended by the new records after the oldest one lie inside the
//!   interval, so rate x (their cycles) <= T. A saturated count is a lower bound on its
//!   cycles, so it may be counted as saturated.
//! - lower: when an interval and the next one of the thread are complete (no record
//!   lost), the interval lies inside the stretch from the newest record before it to
//!   the first record after it, so T <= rate x (the new records' cycles + the first
//!   cycles of the next interval); every count involved must be unsaturated.
//!
//! The rate is known only when there are lower bounds: the largest one is used, moved
//! up to the middle of [lower, upper] (geometric) when the upper bound is within 20%. With
//! only upper bounds, a guessed rate could make records swallow time they never spanned,
//! so the rate stays unknown and callers treat cycles as absent. 16-bit counts saturate
//! at 65535 cycles (22 us at 3 GHz), so programs whose calls last longer than that
//! between any two short ones (the `spikes` and `transitions` samples) give no lower
//! bound at all.

use crate::prepare::{Iv, Prepared};

/// Lower bounds needed before the rate counts as known.
const MIN_LOWER_BOUNDS: usize = 3;
/// Upper bound within this factor of the lower: take the middle.
const CLOSE: f64 = 1.2;

/// The learned rate and the bounds it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rate {
    pub ns_per_cycle: f64,
    pub lower: f64,
    pub upper: Option<f64>,
    pub lower_bounds: usize,
}

fn saturated(p: &Prepared, c: u32) -> bool {
    p.cycles_saturate.is_some_and(|s| c >= s)
}

/// Whether every new record has cycles.
fn all_cycles(iv: Iv<'_>) -> bool {
    iv.recs.iter().all(|r| r.cycles().is_some())
}

/// The cycles of the new records (all present, see [`all_cycles`]).
fn cycles(iv: Iv<'_>) -> impl Iterator<Item = u32> + '_ {
    iv.recs.iter().map(|r| r.cycles().unwrap_or(0))
}

/// The rate, or None when no lower bound pins it down.
pub(crate) fn learn(p: &Prepared) -> Option<Rate> {
    // Without cycles there is no bound at all (and the passes below cost at scale).
    if !p.has_cycles {
        return None;
    }
    // Each interval with the next interval of its thread (None for the thread's last).
    let mut next_of: Vec<Option<u32>> = vec![None; p.n_intervals()];
    let mut last: Vec<Option<u32>> = vec![None; p.n_threads];
    for (k, iv) in p.ivs().enumerate() {
        if let Some(l) = last.get_mut(iv.slot as usize) {
            if let Some(prev) = l.replace(k as u32) {
                next_of[prev as usize] = Some(k as u32);
            }
        }
    }
    let (mut lower, mut upper) = (Vec::new(), Vec::new());
    for (k, iv) in p.ivs().enumerate() {
        let t = iv.len() as f64;
        if t <= 0.0 || !all_cycles(iv) {
            continue;
        }
        let inside: f64 = cycles(iv).skip(1).map(f64::from).sum();
        if inside > 0.0 {
            upper.push(t / inside);
        }
        let Some(next) = next_of[k].and_then(|n| p.iv(n as usize)) else {
            continue;
        };
        let first_next = next.recs.first().and_then(|r| r.cycles());
        let unsat = |x: &u32| !saturated(p, *x);
        if iv.complete && next.complete && cycles(iv).all(|x| unsat(&x)) {
            if let Some(f) = first_next.filter(unsat) {
                let span = cycles(iv).map(f64::from).sum::<f64>() + f64::from(f);
                lower.push(t / span);
            }
        }
    }
    if lower.len() < MIN_LOWER_BOUNDS {
        return None;
    }
    let lo = lower.iter().copied().fold(0.0, f64::max);
    let hi = upper.iter().copied().reduce(f64::min);
    let rate = match hi {
        Some(h) if h >= lo && h <= lo * CLOSE => (lo * h).sqrt(),
        _ => lo,
    };
    Some(Rate {
        ns_per_cycle: rate,
        lower: lo,
        upper: hi,
        lower_bounds: lower.len(),
    })
}
