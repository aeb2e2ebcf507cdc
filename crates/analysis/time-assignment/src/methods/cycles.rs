//! `cycles`: measured LBR cycles. LBR_INFO (and Arch LBR) cycles count the core cycles
//! since the previous LBR entry was recorded, so the cycles of record j measure the
//! segment that record j *ends*: the time spent in its FROM function since record j+1.
//!
//! Cycles become ns with one rate (ns per cycle) learned over the whole run: on complete
//! intervals (no record lost) whose records all carry cycles, the cycles of the new
//! records sum, interval after interval, to the elapsed time (the segment straddling
//! t_{i-1} is counted once, by the interval whose records end it), so rate = sum T / sum C.
//!
//! Within an interval the unmeasured part is the tail, from the newest record to the
//! sample. Chained over complete intervals of a thread it is known exactly up to rate
//! error: tail_i = tail_{i-1} + T_i - C_i x rate (clamped to [0, T_i]). The records then
//! get their measured durations newest first, the oldest gets what is left of the
//! interval. Saturated 16-bit counts (65535) are lower bounds: the unexplained rest of
//! the interval is shared between them and the tail in proportion to r_f. Intervals with
//! a record without cycles fall back to paper method 3 (`proportional`).

use crate::layout::{epsilon, share_or, split};
use crate::methods::proportional;
use crate::pipe::Out;
use crate::prepare::{Iv, Prepared};
use crate::{Error, Method};

fn all_measured(iv: Iv<'_>) -> bool {
    !iv.recs.is_empty() && iv.recs.iter().all(|r| r.cycles().is_some())
}

fn set(carry: &mut [Option<f64>], slot: u32, v: Option<f64>) {
    if let Some(c) = carry.get_mut(slot as usize) {
        *c = v;
    }
}

fn saturated(p: &Prepared, c: u32) -> bool {
    p.cycles_saturate.is_some_and(|s| c >= s)
}

/// ns per cycle over the run, or None when no interval has measured cycles.
pub(crate) fn rate(p: &Prepared) -> Option<f64> {
    let sum = |complete_only: bool| {
        let (mut t, mut c) = (0.0, 0.0);
        for iv in p
            .ivs()
            .filter(|iv| all_measured(*iv) && (iv.complete || !complete_only))
        {
            if iv
                .recs
                .iter()
                .any(|r| r.cycles().is_some_and(|c| saturated(p, c)))
            {
                continue;
            }
            t += iv.len() as f64;
            c += iv
                .recs
                .iter()
                .filter_map(|r| r.cycles())
                .map(f64::from)
                .sum::<f64>();
        }
        (c > 0.0 && t > 0.0).then(|| t / c)
    };
    sum(true).or_else(|| sum(false))
}

pub(crate) fn run(p: &Prepared, out: &mut Out, notes: &mut Vec<String>) -> Result<(), Error> {
    if !p
        .ivs()
        .any(|iv| iv.recs.iter().any(|r| r.cycles().is_some()))
    {
        return Err(Error::MethodUnavailable {
            method: Method::Cycles,
            reason:
                "no branch record carries cycles (the CPU or the recording did not measure them)"
                    .into(),
        });
    }
    let rho = rate(p).unwrap_or(1.0);
    notes.push(format!(
        "cycles: {rho:.4} ns per cycle learned from the run"
    ));
    let eps = epsilon(&p.shares);
    let (mut fallback, mut sat) = (0u64, 0u64);
    let mut carry: Vec<Option<f64>> = vec![None; p.n_threads]; // thread slot -> tail of its previous interval
    for iv in p.ivs() {
        let t = iv.len() as f64;
        if iv.recs.is_empty() {
            split(iv, &[1.0], out);
            set(&mut carry, iv.slot, Some(t));
            continue;
        }
        if !all_measured(iv) {
            fallback += 1;
            set(&mut carry, iv.slot, None);
            split(iv, &proportional::weights(p, iv), out);
            continue;
        }
        let m: Vec<f64> = iv
            .recs
            .iter()
            .map(|r| f64::from(r.cycles().unwrap_or(0)) * rho)
            .collect();
        let total: f64 = m.iter().sum();
        let sats: Vec<usize> = (0..iv.recs.len())
            .filter(|&j| iv.recs[j].cycles().is_some_and(|c| saturated(p, c)))
            .collect();
        let mut w = vec![0.0; iv.recs.len() + 1];
        if !sats.is_empty() {
            sat += sats.len() as u64;
            // Unexplained time goes to the saturated segments and the tail by r_f.
            let rest = (t - total).max(0.0);
            let shares: Vec<f64> = sats
                .iter()
                .map(|&j| share_or(&p.shares, p.func(&iv.recs[j]), eps))
                .collect();
            let tail_share = share_or(&p.shares, iv.leaf_func, eps);
            let sum_s: f64 = shares.iter().sum::<f64>() + tail_share;
            w[..iv.recs.len()].copy_from_slice(&m);
            for (&j, s) in sats.iter().zip(&shares) {
                w[j] += rest * s / sum_s;
            }
            w[iv.recs.len()] = rest * tail_share / sum_s;
            set(&mut carry, iv.slot, None);
            split(iv, &w, out);
            continue;
        }
        let prev_tail = if iv.complete {
            carry.get(iv.slot as usize).copied().flatten()
        } else {
            None
        };
        let tail = match prev_tail {
            Some(pt) => (pt + t - total).clamp(0.0, t),
            None => (t - total).max(0.0),
        };
        set(&mut carry, iv.slot, Some(tail));
        let mut budget = t - tail;
        w[iv.recs.len()] = tail;
        for j in (1..iv.recs.len()).rev() {
            w[j] = m[j].min(budget);
            budget -= w[j];
        }
        w[0] = budget.max(0.0);
        split(iv, &w, out);
    }
    if fallback > 0 {
        notes.push(format!("cycles: {fallback} intervals had records without cycles and used method 3 (proportional)"));
    }
    if sat > 0 {
        notes.push(format!(
            "cycles: {sat} records had saturated cycle counts (lower bounds)"
        ));
    }
    Ok(())
}
