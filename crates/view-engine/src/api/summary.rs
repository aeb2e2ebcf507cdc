//! `api/summary`: facts of the selection and its top functions by self weight.

use serde_json::{json, Value};

use super::common::{data, derived, duration, thousands};
use crate::error::Error;
use crate::ids::NONE;
use crate::index::Index;
use crate::lanes::Funcs;
use crate::query::{Query, Sel};
use crate::results::{Data, Derived};
use crate::site::State;
use crate::sums::ThreadMask;

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let dv = derived(d, q)?;
    let ix = &dv.index;
    let sel = q.sel(d)?;
    let mask = ThreadMask::new(&ix.profile, &sel.tids);
    let range = ix.range(sel.from, sel.to);
    let t = crate::whole::is_whole(ix, &range)
        .then(|| whole_tally(ix, &mask))
        .flatten()
        .or_else(|| lane_tally(ix, &sel))
        .or_else(|| block_tally(ix, &mask, &range))
        .unwrap_or_else(|| tally(ix, &mask, range, None));
    let method = q.get("method").unwrap_or("none");
    let facts = facts(d, &dv, &t, &sel, method);
    let top = top(ix, &t);
    let mut notes = dv.notes.clone();
    notes.dedup();
    Ok(
        json!({ "facts": facts.iter().map(|(a, b)| [a, b]).collect::<Vec<_>>(), "top": top, "notes": notes }),
    )
}

/// The summary's facts: result, samples (or points), weight, threads, selection, elapsed
/// time, the time assignment, losses.
fn facts(d: &Data, dv: &Derived, t: &Tally, sel: &Sel, method: &str) -> Vec<(String, String)> {
    let p = &dv.index.profile;
    let time = p.weight_is_time();
    let w = |x: u64| if time { duration(x) } else { thousands(x) };
    let m = d.dir.manifest();
    let mut facts: Vec<(String, String)> = vec![
        (
            "Result".into(),
            format!(
                "{} ({})",
                d.dir.path().display(),
                m.kind.as_deref().unwrap_or("unknown")
            ),
        ),
        (
            if method == "none" {
                "Samples"
            } else {
                "Points"
            }
            .into(),
            thousands(t.count),
        ),
        (
            if time {
                "CPU time".into()
            } else {
                format!("Event count ({})", p.weight_event.as_deref().unwrap_or("?"))
            },
            w(t.weight),
        ),
        (
            "Threads".into(),
            t.threads.iter().filter(|&&t| t).count().to_string(),
        ),
        (
            "Selection".into(),
            duration(
                sel.to
                    .min(d.start_ns + d.duration_ns + 1)
                    .saturating_sub(sel.from),
            ),
        ),
        (
            "Elapsed".into(),
            m.duration_secs
                .map_or("n/a".into(), |s| format!("{s:.3} s")),
        ),
    ];
    if method != "none" {
        facts.push((
            "Time assignment".into(),
            format!("{method}: {:.1} points per sample", dv.points_per_sample),
        ));
    }
    let l = p.losses;
    facts.push((
        "Lost".into(),
        format!(
            "{} records, {} samples, {} throttles",
            l.lost_records, l.lost_samples, l.throttled
        ),
    ));
    facts
}

/// The ten functions of most self weight (the last slot: samples without a stack).
fn top(ix: &Index, t: &Tally) -> Vec<Value> {
    let nf = ix.funcs.len();
    let (self_w, self_c, weight) = (&t.self_w, &t.self_c, t.weight);
    let mut order: Vec<usize> = (0..=nf).filter(|&f| self_c[f] > 0).collect();
    order.sort_by(|&a, &b| {
        self_w[b]
            .cmp(&self_w[a])
            .then(self_c[b].cmp(&self_c[a]))
            .then(a.cmp(&b))
    });
    let share = |x: u64| {
        if weight > 0 {
            x as f64 / weight as f64
        } else {
            0.0
        }
    };
    order
        .iter()
        .take(10)
        .map(|&f| {
            let (name, module) = if f == nf { ("[no stack]", "") } else { (ix.funcs.name[f].as_str(), ix.funcs.module[f].as_str()) };
            json!({ "func": if f == nf { Value::Null } else { json!(f) }, "function": name, "module": module,
                    "self": self_w[f], "self_share": share(self_w[f]), "count": self_c[f] })
        })
        .collect()
}

/// Self weight and count per function (the last slot: no stack), totals, and which
/// threads were seen, over the samples of `range` that `mask` admits.
struct Tally {
    self_w: Vec<u64>,
    self_c: Vec<u64>,
    weight: u64,
    count: u64,
    threads: Vec<bool>,
}

impl Tally {
    /// Adds `b`'s samples.
    fn merge(&mut self, b: Tally) {
        crate::par::add(&mut self.self_w, &b.self_w);
        crate::par::add(&mut self.self_c, &b.self_c);
        self.weight += b.weight;
        self.count += b.count;
        for (x, y) in self.threads.iter_mut().zip(&b.threads) {
            *x |= *y;
        }
    }

    /// The samples `idx` of one lane with their function codes `codes`; weights are
    /// summed later from the counts when `const_w`.
    fn add_lane<T: Copy + Into<u32>>(
        &mut self,
        ix: &Index,
        idx: &[u32],
        codes: &[T],
        const_w: Option<u64>,
    ) {
        let nf = self.self_w.len() - 1;
        for (&i, &f) in idx.iter().zip(codes) {
            let f = (f.into() as usize).min(nf);
            self.self_c[f] += 1;
            if const_w.is_none() {
                let w = ix.samples.weight(i as usize);
                self.self_w[f] = self.self_w[f].wrapping_add(w);
                self.weight = self.weight.wrapping_add(w);
            }
        }
        self.count += idx.len().min(codes.len()) as u64;
    }
}

/// The tally of the whole run, from the index's totals.
fn whole_tally(ix: &Index, mask: &ThreadMask) -> Option<Tally> {
    let (self_w, self_c) = crate::whole::functions(ix, mask)?;
    let threads = (0..ix.profile.threads.len())
        .map(|t| mask.admits(t as u32) && ix.totals.thread_c.get(t).is_some_and(|&c| c > 0))
        .collect();
    Some(Tally {
        weight: self_w.iter().sum(),
        count: self_c.iter().sum(),
        self_w,
        self_c,
        threads,
    })
}

/// The tally of a selection with a TID filter, over the chosen threads' lanes only: their
/// copies of the leaf functions read in order, weights looked up only when not constant.
fn lane_tally(ix: &Index, sel: &crate::query::Sel) -> Option<Tally> {
    let tids = sel.tids.as_ref()?;
    if tids.iter().any(|&t| t < 0) {
        return None;
    }
    let nf = ix.funcs.len();
    let nt = ix.profile.threads.len();
    let mut t = Tally {
        self_w: vec![0; nf + 1],
        self_c: vec![0; nf + 1],
        weight: 0,
        count: 0,
        threads: vec![false; nt],
    };
    let times = ix.times();
    let at = |i: u32| times.get(i as usize).copied().unwrap_or(u64::MAX);
    let const_w = match ix.samples.weight {
        crate::samples::Narrow::Const(v) => Some(v),
        _ => None,
    };
    for lane in ix
        .thread_lanes
        .iter()
        .filter(|l| l.tid.is_some_and(|x| tids.contains(&x)))
    {
        let a = lane.samples.partition_point(|&i| at(i) < sel.from);
        let b = lane.samples.partition_point(|&i| at(i) < sel.to).max(a);
        let idx = &lane.samples[a..b];
        match &lane.funcs {
            Funcs::U16(f) => t.add_lane(ix, idx, f.get(a..b).unwrap_or(&[]), const_w),
            Funcs::U32(f) => t.add_lane(ix, idx, f.get(a..b).unwrap_or(&[]), const_w),
        }
        // The threads of the lane's TID that have samples here.
        let of_tid: Vec<usize> = (0..nt)
            .filter(|&k| lane.tid == Some(ix.profile.threads[k].tid))
            .collect();
        match of_tid[..] {
            [k] => t.threads[k] |= !idx.is_empty(),
            _ => {
                for &i in idx {
                    if let Some(x) = t.threads.get_mut(ix.samples.thread(i as usize) as usize) {
                        *x = true;
                    }
                }
            }
        }
    }
    if let Some(w) = const_w {
        for (x, &c) in t.self_w.iter_mut().zip(&t.self_c) {
            *x = w.wrapping_mul(c);
        }
        t.weight = w.wrapping_mul(t.count);
    }
    Some(t)
}

/// The tally of a range without a TID filter from the sums at block edges, and a scan
/// of the partial blocks at its ends; None when those sums are not there.
fn block_tally(ix: &Index, mask: &ThreadMask, range: &std::ops::Range<usize>) -> Option<Tally> {
    let b = ix.blocks().filter(|_| mask.is_all())?;
    let cut = b.cut(range)?;
    let s = b.stacks(cut.mid);
    let (self_w, self_c) = crate::whole::functions_of_slots(ix, &s.w, &s.c);
    let per_thread = b.threads(cut.mid);
    let threads = (0..ix.profile.threads.len())
        .map(|t| per_thread.get(t).is_some_and(|x| x[0] > 0))
        .collect();
    let mut t = Tally {
        weight: self_w.iter().fold(0, |a: u64, &x| a.wrapping_add(x)),
        count: self_c.iter().sum(),
        self_w,
        self_c,
        threads,
    };
    for e in cut.edges {
        t.merge(tally(ix, mask, e, Some(1)));
    }
    Some(t)
}

/// One pass (split over the cores unless `parts` says how many parts).
fn tally(
    ix: &Index,
    mask: &ThreadMask,
    range: std::ops::Range<usize>,
    parts: Option<usize>,
) -> Tally {
    let nf = ix.funcs.len();
    let nt = ix.profile.threads.len();
    let body = |r: std::ops::Range<usize>| {
        // Local slices and integers, so the sums stay in registers (see `agg::scan`).
        let (mut self_w, mut self_c, mut threads) =
            (vec![0u64; nf + 1], vec![0u64; nf + 1], vec![false; nt]);
        let (sw, sc, th) = (&mut self_w[..], &mut self_c[..], &mut threads[..]);
        let (mut weight, mut count) = (0u64, 0u64);
        let s = &ix.samples;
        for i in r {
            let thread = s.thread(i);
            if !mask.admits(thread) {
                continue;
            }
            let f = match ix.leaf_func(i) {
                NONE => nf,
                f => (f as usize).min(nf),
            };
            let w = s.weight(i);
            sw[f] += w;
            sc[f] += 1;
            weight += w;
            count += 1;
            if let Some(x) = th.get_mut(thread as usize) {
                *x = true;
            }
        }
        Tally {
            self_w,
            self_c,
            weight,
            count,
            threads,
        }
    };
    let merge = |a: &mut Tally, b: Tally| a.merge(b);
    match parts {
        Some(k) => crate::par::split(range, k, body, merge),
        None => crate::par::fold(range, body, merge),
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
