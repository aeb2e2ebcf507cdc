//! `api/timeline`: per lane and pixel bucket, the samples' count, weight and the function
//! with most weight (its colour). Only non-empty buckets are sent.

use serde_json::{json, Value};

use super::{data, derived};
use crate::agg::ThreadMask;
use crate::index::{Index, Lane, NONE};
use crate::query::{Query, Sel};
use crate::{Error, State};

/// Buckets of one lane, columnar.
#[derive(Default)]
struct Buckets {
    bucket: Vec<u32>,
    count: Vec<u64>,
    weight: Vec<u64>,
    func: Vec<u32>,
}

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let dv = derived(d, q)?;
    let ix = &dv.index;
    let sel = q.sel(d)?;
    let width = q.num("width")?.unwrap_or(1000);
    if !(1..=4096).contains(&width) {
        return Err(Error::BadParam(format!(
            "width={width} must be 1 to 4096 pixels"
        )));
    }
    let by_cpu = q.choice("lanes", &["thread", "cpu"], "thread")? == "cpu";
    let lanes: Vec<&Lane> = ix
        .lanes(by_cpu)
        .iter()
        .filter(|l| {
            by_cpu
                || sel
                    .tids
                    .as_ref()
                    .is_none_or(|t| l.tid.is_some_and(|x| t.contains(&x)))
        })
        .collect();
    // Thread lanes are filtered by choosing lanes; CPU lanes sample by sample.
    let mask = if by_cpu {
        ThreadMask::new(&ix.profile, &sel.tids)
    } else {
        ThreadMask::all()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = lane_buckets(ix, &lanes, &sel, width as usize, &mask, cores, MIN_PIECE);
    let mut used: Vec<u32> = out
        .iter()
        .flat_map(|b| b.func.iter().copied())
        .filter(|&f| f != NONE)
        .collect();
    used.sort_unstable();
    used.dedup();
    let lanes_json: Vec<Value> = lanes
        .iter()
        .zip(&out)
        .map(|(l, b)| {
            let func: Vec<Value> = b.func.iter().map(|&f| if f == NONE { Value::Null } else { json!(f) }).collect();
            json!({ "key": l.key, "label": l.label, "tid": l.tid, "cpu": l.cpu, "samples": l.samples.len(),
                    "bucket": b.bucket, "count": b.count, "weight": b.weight, "func": func })
        })
        .collect();
    let names: Vec<&str> = used
        .iter()
        .map(|&f| ix.funcs.name[f as usize].as_str())
        .collect();
    let modules: Vec<&str> = used
        .iter()
        .map(|&f| ix.funcs.module[f as usize].as_str())
        .collect();
    let (from, to) = (sel.from - d.start_ns, sel.to - d.start_ns);
    Ok(json!({
        "from": from, "to": to, "width": width, "bucket_ns": (to - from) as f64 / width as f64,
        "functions": { "id": used, "name": names, "module": modules },
        "lanes": lanes_json,
    }))
}

/// Samples of a lane below which it is not cut into pieces: a thread costs more.
const MIN_PIECE: usize = 1 << 18;

/// Every lane's buckets. Lanes with many samples in the selection are cut at bucket starts
/// into pieces (a bucket is never in two, so the pieces' buckets concatenate exactly), and
/// the pieces are spread over `cores`: a single lane or two CPU lanes use every core too.
fn lane_buckets(
    ix: &Index,
    lanes: &[&Lane],
    sel: &Sel,
    width: usize,
    mask: &ThreadMask,
    cores: usize,
    min_piece: usize,
) -> Vec<Buckets> {
    let times = ix.times();
    let span = (sel.to - sel.from).max(1) as u128;
    let start_of = |k: usize| sel.from + ((k as u128 * span).div_ceil(width as u128)) as u64;
    let mut jobs: Vec<(usize, &[u32])> = Vec::new();
    for (l, lane) in lanes.iter().enumerate() {
        let a = lane
            .samples
            .partition_point(|&i| times[i as usize] < sel.from);
        let b = lane
            .samples
            .partition_point(|&i| times[i as usize] < sel.to)
            .max(a);
        let part = &lane.samples[a..b];
        let pieces = (part.len() / min_piece.max(1))
            .clamp(1, cores.max(1))
            .min(width);
        let mut from = 0;
        for j in 1..pieces {
            let t = start_of(width * j / pieces);
            let cut = part.partition_point(|&i| times[i as usize] < t).max(from);
            jobs.push((l, &part[from..cut]));
            from = cut;
        }
        jobs.push((l, &part[from..]));
    }
    let total: usize = jobs.iter().map(|j| j.1.len()).sum();
    let workers = if total >= min_piece {
        cores.min(jobs.len())
    } else {
        1
    };
    let mut results: Vec<Option<Buckets>> = (0..jobs.len()).map(|_| None).collect();
    if workers <= 1 {
        for (r, (_, part)) in results.iter_mut().zip(&jobs) {
            *r = Some(buckets(ix, part, sel, width, mask));
        }
    } else {
        // Workers take the next job as they finish one, so unequal pieces even out.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: Vec<Vec<(usize, Buckets)>> = std::thread::scope(|s| {
            let work = || {
                let mut mine = Vec::new();
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((_, part)) = jobs.get(k) else { break };
                    mine.push((k, buckets(ix, part, sel, width, mask)));
                }
                mine
            };
            let handles: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
            let mut all = vec![work()];
            all.extend(handles.into_iter().map(|h| h.join().unwrap_or_default()));
            all
        });
        for (k, b) in done.into_iter().flatten() {
            results[k] = Some(b);
        }
    }
    let mut out: Vec<Buckets> = (0..lanes.len()).map(|_| Buckets::default()).collect();
    for ((l, part), r) in jobs.iter().zip(results) {
        // A piece whose thread failed is done again here rather than lost.
        let b = r.unwrap_or_else(|| buckets(ix, part, sel, width, mask));
        let o = &mut out[*l];
        o.bucket.extend(b.bucket);
        o.count.extend(b.count);
        o.weight.extend(b.weight);
        o.func.extend(b.func);
    }
    out
}

/// Buckets of `samples` (sample indices of one lane within the selection, in time order).
fn buckets(ix: &Index, samples: &[u32], sel: &Sel, width: usize, mask: &ThreadMask) -> Buckets {
    let (cols, times) = (&ix.samples, ix.times());
    let span = (sel.to - sel.from).max(1) as u128;
    let mut out = Buckets::default();
    // Dense per-function weights of the current bucket, reset through `touched`.
    let mut acc = vec![0u64; ix.funcs.len() + 1];
    let mut touched: Vec<usize> = Vec::new();
    let (mut cur, mut count, mut weight, mut best, mut best_w) =
        (usize::MAX, 0u64, 0u64, NONE, 0u64);
    let flush = |out: &mut Buckets,
                 cur: usize,
                 count: u64,
                 weight: u64,
                 best: u32,
                 touched: &mut Vec<usize>,
                 acc: &mut [u64]| {
        if count > 0 {
            out.bucket.push(cur as u32);
            out.count.push(count);
            out.weight.push(weight);
            out.func.push(best);
        }
        for &t in touched.iter() {
            acc[t] = 0;
        }
        touched.clear();
    };
    // Samples are in time order: walk the bucket boundaries instead of dividing per sample.
    let start_of = |k: usize| sel.from + ((k as u128 * span).div_ceil(width as u128)) as u64;
    let mut next_start = 0u64;
    for &i in samples {
        let i = i as usize;
        if !mask.admits(cols.thread(i)) {
            continue;
        }
        let time_ns = times[i];
        if cur == usize::MAX || time_ns >= next_start {
            let k = (((time_ns - sel.from) as u128 * width as u128) / span).min(width as u128 - 1)
                as usize;
            flush(&mut out, cur, count, weight, best, &mut touched, &mut acc);
            (cur, count, weight, best, best_w) = (k, 0, 0, NONE, 0);
            next_start = if k + 1 >= width {
                u64::MAX
            } else {
                start_of(k + 1)
            };
        }
        let f = ix.leaf_func(i);
        let w = cols.weight(i);
        let slot = if f == NONE { acc.len() - 1 } else { f as usize };
        if acc[slot] == 0 {
            touched.push(slot);
        }
        // Weightless samples (pure counts) still vote.
        acc[slot] += w.max(1);
        if acc[slot] > best_w {
            (best, best_w) = (f, acc[slot]);
        }
        count += 1;
        weight += w;
    }
    flush(&mut out, cur, count, weight, best, &mut touched, &mut acc);
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kairos_model::{Frame, Mode, Profile, Sample, Stack, Thread};

    use super::*;
    use crate::index::Functions;

    /// `n` samples `1..step` ns apart (1: every ns, so samples fall on every bucket boundary).
    fn profile(n: usize, seed: u64, step: u64) -> Profile {
        let frame = |name: &str| Frame {
            address: 0,
            module: None,
            module_offset: 0,
            function: name.into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode: Mode::User,
        };
        let mut p = Profile {
            threads: vec![Thread {
                pid: 1,
                tid: 1,
                name: "t".into(),
                process_name: "t".into(),
            }],
            frames: (0..7).map(|i| frame(&format!("f{i}"))).collect(),
            stacks: (0..7)
                .map(|i| Stack {
                    parent: None,
                    frame: i,
                })
                .collect(),
            ..Profile::default()
        };
        let mut x = seed;
        let mut t = 1_000u64;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += if step == 1 { 1 } else { x % step };
            let stack = if x.is_multiple_of(11) {
                None
            } else {
                Some((x % 7) as u32)
            };
            p.samples.push(Sample {
                time_ns: t,
                thread: 0,
                cpu: 0,
                stack,
                weight: 1 + (x >> 20) % 1_000_003,
            });
        }
        p
    }

    /// The boundary walk agrees with dividing every sample's time, for odd widths and ranges.
    #[test]
    fn buckets_match_a_per_sample_division() {
        for (seed, step, width, cut) in [
            (1u64, 5000, 7usize, 0u64),
            (2, 5000, 333, 12_345),
            (3, 5000, 4096, 1),
            (4, 5000, 1, 0),
            (5, 1, 7, 0),
            (6, 1, 333, 3),
            (7, 1, 4096, 0),
        ] {
            let p = profile(5000, seed, step);
            let funcs = Arc::new(Functions::new(&p));
            let ix = Index::new(p, funcs);
            let times = ix.times();
            let (a, b) = (times[0] + cut, times[times.len() - 1] - cut / 2);
            let sel = Sel {
                from: a,
                to: b,
                tids: None,
            };
            let lane = &ix.thread_lanes[0];
            let got =
                lane_buckets(&ix, &[lane], &sel, width, &ThreadMask::all(), 1, MIN_PIECE).remove(0);
            // Cut into pieces at bucket starts, on one core or several: the same buckets.
            for (cores, min_piece) in [(1usize, 1usize), (2, 100), (3, 7), (8, 1)] {
                let split = lane_buckets(
                    &ix,
                    &[lane, lane],
                    &sel,
                    width,
                    &ThreadMask::all(),
                    cores,
                    min_piece,
                );
                for b in &split {
                    assert_eq!(
                        (&b.bucket, &b.count, &b.weight, &b.func),
                        (&got.bucket, &got.count, &got.weight, &got.func),
                        "cores {cores}"
                    );
                }
            }
            let span = (b - a) as u128;
            let mut want: std::collections::BTreeMap<usize, (u64, u64, Vec<u64>)> =
                Default::default();
            for (i, s) in ix
                .samples
                .to_vec()
                .iter()
                .enumerate()
                .filter(|(_, s)| s.time_ns >= a && s.time_ns < b)
            {
                let k = (((s.time_ns - a) as u128 * width as u128) / span).min(width as u128 - 1)
                    as usize;
                let e = want.entry(k).or_insert((0, 0, vec![0; 8]));
                e.0 += 1;
                e.1 += s.weight;
                let f = ix.func_of_node(ix.leaf_node(i));
                e.2[if f == NONE { 7 } else { f as usize }] += s.weight;
            }
            assert_eq!(
                got.bucket,
                want.keys().map(|&k| k as u32).collect::<Vec<_>>(),
                "width {width} step {step}"
            );
            assert_eq!(got.count, want.values().map(|v| v.0).collect::<Vec<_>>());
            assert_eq!(got.weight, want.values().map(|v| v.1).collect::<Vec<_>>());
            for (k, (_, _, per)) in want.values().enumerate() {
                let top = *per.iter().max().unwrap_or(&0);
                let f = got.func[k];
                let slot = if f == NONE { 7 } else { f as usize };
                assert_eq!(
                    per[slot], top,
                    "bucket {k}: the drawn function has the most weight"
                );
            }
        }
    }
}
