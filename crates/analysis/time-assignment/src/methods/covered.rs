//! `covered` (ours; the default branch method): plain sampling, changed only where two
//! records bracket a visit.
//!
//! Plain sampling is unbiased because its errors cancel: a sample just inside a short
//! call gets its whole interval (over-credit), and the rest of that call is credited to
//! the next sample (under-credit). Making part of an interval exact while a sample
//! keeps the rest breaks that cancellation wherever the phase changes: the gap an
//! overflowed ring leaves holds the end of the previous phase, which no sample stands
//! for (on `transitions`, "covered part exact, gap to the sample" is worse than plain
//! sampling; crates/lab/README.md). So:
//!
//! - everything no pair of records brackets keeps plain sampling's bookkeeping: the gap
//!   of an overflowed interval, and the head and tail of every interval, go to the
//!   sampled function, drawn where they lie (the head at the start, the tail at t_i);
//! - a visit between two records of the interval moves to its own function, with its
//!   measured length (cycles x the rate, where exact bounds pin the rate down, see
//!   [`crate::methods::rate`]) or its function's expected length per visit; a visit of
//!   unknown length stays with plain sampling (over-estimating it would let the records'
//!   mix replace plain sampling; under-estimating only gives plain sampling back);
//! - in a run of at least [`LONG_CHAIN`] complete intervals no change of phase is near,
//!   so heads go to their own function too: the head and tail lengths are the best
//!   linear estimate under the constraint that the stretches fill the interval, the
//!   head continuing the previous tail's visit (as in `visits`).
//!
//! Expected lengths per visit: d_f = (plain-sampling time of f) / (visits of f the
//! records ended), over the threads whose snapshots (almost) never overflowed, where
//! the records count every visit; a lost record is not seen at all, so elsewhere counts
//! are too low, lengths too long, and functions have no expected length (only measured
//! cycles give them one).

use kairos_model::FrameIdx;

use crate::methods::rate::{self, Rate};
use crate::pipe::Out;
use crate::prepare::{func_of, FnKey, Iv, Prepared, Rec};
use crate::Point;

/// Coefficient of variation assumed for a full visit whose length is estimated.
const CV: f64 = 0.3;
/// Relative error assumed for a measured length (the rate's uncertainty).
const MEASURED_CV: f64 = 0.02;
/// Share of a thread's snapshots that may have overflowed for its visit counts, hence
/// its expected lengths per visit, to be used.
const MAX_OVERFLOWED: f64 = 0.01;
/// Complete intervals in a row from which heads are credited to their own function.
const LONG_CHAIN: usize = 32;

struct Model {
    rate: Option<Rate>,
    saturate: Option<u32>,
    /// Expected length of a visit per function; None: unknown.
    d: Vec<Option<f64>>,
    /// [`Prepared::fn_of_frame`], to look up a record's function.
    fn_of_frame: Vec<FnKey>,
}

impl Model {
    fn learn(p: &Prepared) -> Model {
        let n = p.n_funcs();
        // A visit count is right only where no snapshot lost records: a lost record is
        // not seen at all, so overflows make counts too low and lengths too long. Only
        // threads whose snapshots (almost) never overflowed are counted.
        let mut per_thread: Vec<(u64, u64)> = vec![(0, 0); p.n_threads];
        for iv in p.ivs() {
            if let Some(e) = per_thread.get_mut(iv.slot as usize) {
                e.0 += 1;
                e.1 += u64::from(!iv.complete);
            }
        }
        let trusted = |t: u32| {
            per_thread
                .get(t as usize)
                .is_some_and(|&(all, lost)| (lost as f64) <= MAX_OVERFLOWED * all as f64)
        };
        let (mut time, mut visits) = (vec![0.0; n], vec![0u64; n]);
        for iv in p.ivs().filter(|iv| trusted(iv.slot)) {
            if let Some(x) = time.get_mut(iv.leaf_func as usize) {
                *x += iv.len() as f64;
            }
            for r in iv.recs {
                if let Some(v) = visits.get_mut(p.func(r) as usize) {
                    *v += 1;
                }
            }
        }
        let mut d: Vec<Option<f64>> = time
            .iter()
            .zip(&visits)
            .map(|(&t, &v)| (v > 0).then(|| t / v as f64))
            .collect();
        let rate = rate::learn(p);
        if let Some(r) = rate {
            // Measured means replace estimates for functions whose visits never saturate.
            let mut acc = vec![(0.0, 0u64, false); n];
            for rec in p.all_recs().iter() {
                if let (Some(c), Some(a)) = (rec.cycles(), acc.get_mut(p.func(rec) as usize)) {
                    if p.cycles_saturate.is_some_and(|s| c >= s) {
                        a.2 = true;
                    } else {
                        a.0 += f64::from(c) * r.ns_per_cycle;
                        a.1 += 1;
                    }
                }
            }
            for (x, (sum, k, sat)) in d.iter_mut().zip(acc) {
                if k > 0 && !sat {
                    *x = Some(sum / k as f64);
                }
            }
        }
        Model {
            rate,
            saturate: p.cycles_saturate,
            d,
            fn_of_frame: p.fn_of_frame().to_vec(),
        }
    }

    fn d(&self, f: FnKey) -> Option<f64> {
        self.d.get(f as usize).copied().flatten()
    }

    /// Length of the full visit that record `r` ends: (expected, variance), None if unknown.
    fn full(&self, r: &Rec) -> Option<(f64, f64)> {
        let d = self.d(func_of(&self.fn_of_frame, r));
        match (self.rate, r.cycles()) {
            (Some(rate), Some(c)) => {
                let m = f64::from(c) * rate.ns_per_cycle;
                if self.saturate.is_some_and(|s| c >= s) {
                    // A lower bound: the visit is at least m, about d when d says more.
                    let mu = d.unwrap_or(m).max(m);
                    Some((mu, (CV * mu).powi(2)))
                } else {
                    Some((m, (MEASURED_CV * m).powi(2)))
                }
            }
            _ => d.map(|d| (d, (CV * d).powi(2))),
        }
    }

    /// A partial stretch of f (head or tail) of unknown cut: half a visit, as uncertain as one.
    fn partial(&self, f: FnKey, t: f64) -> (f64, f64) {
        match self.d(f) {
            Some(d) => (d / 2.0, d * d),
            None => (0.0, t * t),
        }
    }
}

/// Buffers reused from interval to interval (tens of millions of intervals).
#[derive(Default)]
struct Scratch {
    mu: Vec<f64>,
    v: Vec<f64>,
    x: Vec<f64>,
    free: Vec<bool>,
    items: Vec<(Option<FrameIdx>, Option<u32>, f64)>,
}

/// Best linear estimate of lengths with expectations `mu` and variances `v` that sum
/// to `t`: x = mu + v / sum(v) x (t - sum(mu)); stretches that would go negative are
/// held at 0 and the rest solved again. Writes `x`.
fn fill(mu: &[f64], v: &[f64], t: f64, free: &mut Vec<bool>, x: &mut Vec<f64>) {
    free.clear();
    free.resize(mu.len(), true);
    x.clear();
    x.resize(mu.len(), 0.0);
    for _ in 0..mu.len().max(1) {
        let sm: f64 = mu
            .iter()
            .zip(free.iter())
            .filter(|(_, &f)| f)
            .map(|(m, _)| m)
            .sum();
        let sv: f64 = v
            .iter()
            .zip(free.iter())
            .filter(|(_, &f)| f)
            .map(|(v, _)| v)
            .sum();
        let nf = free.iter().filter(|&&f| f).count().max(1) as f64;
        let slack = t - sm;
        for k in 0..mu.len() {
            x[k] = if !free[k] {
                0.0
            } else if sv > 0.0 {
                mu[k] + v[k] / sv * slack
            } else {
                mu[k] + slack / nf
            };
        }
        let mut any = false;
        for k in 0..x.len() {
            if free[k] && x[k] < 0.0 {
                free[k] = false;
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    x.iter_mut().for_each(|v| *v = v.max(0.0));
}

/// Length of the gap, and the lengths of the stretches (oldest first, the tail last) of
/// `iv` in `s.x`, given how long the head's visit had already run at the interval's
/// start, when known.
fn lengths(m: &Model, iv: Iv<'_>, before: Option<f64>, s: &mut Scratch) -> f64 {
    let t = iv.len() as f64;
    let n = iv.recs.len();
    let Scratch { mu, v, x, free, .. } = s;
    if n == 0 {
        x.clear();
        x.push(t);
        return 0.0;
    }
    let (tail_mu, tail_v) = m.partial(iv.leaf_func, t);
    mu.clear();
    v.clear();
    if !iv.complete {
        // Every stretch is a full visit but the tail; unknown ones count for nothing.
        mu.extend(iv.recs.iter().map(|r| m.full(r).map_or(0.0, |x| x.0)));
        v.extend(iv.recs.iter().map(|r| m.full(r).map_or(0.0, |x| x.1)));
        mu.push(tail_mu);
        v.push(tail_v);
        let covered: f64 = mu.iter().sum();
        if covered <= t {
            x.clear();
            x.extend_from_slice(mu);
            return t - covered;
        }
        fill(mu, v, t, free, x);
        return 0.0;
    }
    let first = &iv.recs[0];
    let (head_mu, head_v) = match (before, m.full(first)) {
        // The head ends the visit the previous tail was in: what is left of it.
        (Some(b), Some((d, v))) => ((d - b).max(0.05 * d), v + (b - d).max(0.0).powi(2)),
        (None, Some((d, _))) => (d / 2.0, d * d),
        (_, None) => (0.0, t * t),
    };
    mu.push(head_mu);
    v.push(head_v);
    for r in &iv.recs[1..] {
        // Unknown lengths count for nothing, as in overflowed intervals: what they took
        // stays with the head and tail, weighed like plain sampling.
        let (a, b) = m.full(r).unwrap_or((0.0, 0.0));
        mu.push(a);
        v.push(b);
    }
    mu.push(tail_mu);
    v.push(tail_v);
    fill(mu, v, t, free, x);
    0.0
}

/// Appends the points, oldest first: what plain sampling weighs (the gap, or the head
/// of a complete interval) as the sampled function's at the start, one point per record
/// (the full visit it ends, in its FROM function; 0 for the record ending the head),
/// then the sample's tail at t_i. Returns the weight given like plain sampling.
fn emit(
    iv: Iv<'_>,
    gap: f64,
    x: &[f64],
    own_head: bool,
    items: &mut Vec<(Option<FrameIdx>, Option<u32>, f64)>,
    out: &mut Out,
) -> u64 {
    let t = iv.len();
    // (frame, record, length): the head, if any, becomes part of the sampled function's.
    items.clear();
    let head_to_sample = iv.complete && !own_head;
    let lead = if head_to_sample {
        gap + x.first().copied().unwrap_or(0.0)
    } else {
        gap
    };
    if lead > 0.0 || !iv.complete {
        items.push((iv.leaf_frame(), None, lead));
    }
    for (k, r) in iv.recs.iter().enumerate() {
        let w = if head_to_sample && k == 0 {
            0.0
        } else {
            x.get(k).copied().unwrap_or(0.0)
        };
        items.push((r.frame(), Some(r.record), w));
    }
    items.push((iv.leaf_frame(), None, x.last().copied().unwrap_or(0.0)));
    let total: f64 = items.iter().map(|i| i.2).sum();
    let scale = if total > 0.0 { t as f64 / total } else { 0.0 };
    let (mut cum, mut prev) = (0.0, 0u64);
    let mut plain = 0u64;
    let n = items.len();
    for (k, &(frame, record, w)) in items.iter().enumerate() {
        cum += w * scale;
        // The sample's point ends at t_i; an all-zero interval gives it everything.
        let off = if k + 1 == n {
            t
        } else {
            (cum.round() as u64).clamp(prev, t)
        };
        if record.is_some() || off > prev || k + 1 == n {
            out.push(Point {
                time_ns: iv.start + off,
                thread: iv.thread,
                frame,
                weight_ns: off - prev,
                from_branch: record.is_some(),
                sample: iv.sample,
                record,
            });
        }
        if record.is_none() && (k == 0 || k + 1 == n) {
            plain += off - prev;
        }
        prev = off;
    }
    plain
}

/// Per interval: whether it lies in a run of at least [`LONG_CHAIN`] consecutive
/// complete intervals of its thread.
fn long_chains(p: &Prepared) -> Vec<bool> {
    let mut out = vec![false; p.n_intervals()];
    // Per thread: the intervals of its current run of complete ones.
    let mut runs: Vec<Vec<usize>> = vec![Vec::new(); p.n_threads];
    let close = |run: &mut Vec<usize>, out: &mut Vec<bool>| {
        if run.len() >= LONG_CHAIN {
            run.iter().for_each(|&i| out[i] = true);
        }
        run.clear();
    };
    for (i, iv) in p.ivs().enumerate() {
        let Some(run) = runs.get_mut(iv.slot as usize) else {
            continue;
        };
        if iv.complete {
            run.push(i);
        } else {
            close(run, &mut out);
        }
    }
    for run in &mut runs {
        close(run, &mut out);
    }
    out
}

pub(crate) fn run(p: &Prepared, out: &mut Out, notes: &mut Vec<String>) {
    let m = Model::learn(p);
    if p.has_cycles {
        notes.push(match m.rate {
            Some(r) => format!("covered: {:.4} ns per cycle, from {} lower bounds", r.ns_per_cycle, r.lower_bounds),
            None => "covered: cycles not converted to time (no complete interval without a saturated count pins the rate down); lengths estimated as without cycles".into(),
        });
    }
    let (mut plain, mut total) = (0u64, 0u64);
    // Per thread: the sampled function and how long its visit had run at the sample.
    let mut open: Vec<Option<(FnKey, f64)>> = vec![None; p.n_threads];
    let long = long_chains(p);
    let mut s = Scratch::default();
    for (i, iv) in p.ivs().enumerate() {
        let head = iv.recs.first().map_or(iv.leaf_func, |r| p.func(r));
        let before = open
            .get(iv.slot as usize)
            .copied()
            .flatten()
            .filter(|&(f, _)| iv.complete && f == head)
            .map(|(_, b)| b);
        let gap = lengths(&m, iv, before, &mut s);
        plain += emit(
            iv,
            gap,
            &s.x,
            long.get(i).copied().unwrap_or(false),
            &mut s.items,
            out,
        );
        total += iv.len();
        let ran = if iv.recs.is_empty() {
            before.unwrap_or(0.0) + iv.len() as f64
        } else {
            s.x.last().copied().unwrap_or(0.0)
        };
        if let Some(o) = open.get_mut(iv.slot as usize) {
            *o = Some((iv.leaf_func, ran));
        }
    }
    if total > 0 {
        notes.push(format!("covered: {:.1}% of the time weighed like plain sampling (not between two records of an interval)", 100.0 * plain as f64 / total as f64));
    }
}
