//! `api/timeline`: per lane and pixel bucket, the samples' count, weight and the function
//! with most weight (its colour). Only non-empty buckets are sent.

use serde_json::{json, Value};

use super::{data, derived};
use crate::agg::thread_mask;
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
        return Err(Error::BadParam(format!("width={width} must be 1 to 4096 pixels")));
    }
    let by_cpu = q.choice("lanes", &["thread", "cpu"], "thread")? == "cpu";
    let lanes: Vec<&Lane> = ix
        .lanes(by_cpu)
        .iter()
        .filter(|l| by_cpu || sel.tids.as_ref().is_none_or(|t| l.tid.is_some_and(|x| t.contains(&x))))
        .collect();
    let mask = if by_cpu { thread_mask(&ix.profile, &sel.tids) } else { None };
    // Lanes are independent: split them over the cores when there is much to do.
    let work: usize = lanes.iter().map(|l| l.samples.len()).sum();
    let threads = if work > 1_000_000 { std::thread::available_parallelism().map_or(1, |n| n.get()).min(lanes.len()) } else { 1 };
    let mut out: Vec<Buckets> = Vec::with_capacity(lanes.len());
    if threads <= 1 {
        out.extend(lanes.iter().map(|l| buckets(ix, l, &sel, width as usize, mask.as_deref())));
    } else {
        let chunk = lanes.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = lanes
                .chunks(chunk)
                .map(|part| {
                    let (sel, mask) = (&sel, mask.as_deref());
                    s.spawn(move || part.iter().map(|l| buckets(ix, l, sel, width as usize, mask)).collect::<Vec<_>>())
                })
                .collect();
            for h in handles {
                out.extend(h.join().unwrap_or_default());
            }
        });
    }
    let mut used: Vec<u32> = out.iter().flat_map(|b| b.func.iter().copied()).filter(|&f| f != NONE).collect();
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
    let names: Vec<&str> = used.iter().map(|&f| ix.funcs.name[f as usize].as_str()).collect();
    let modules: Vec<&str> = used.iter().map(|&f| ix.funcs.module[f as usize].as_str()).collect();
    let (from, to) = (sel.from - d.start_ns, sel.to - d.start_ns);
    Ok(json!({
        "from": from, "to": to, "width": width, "bucket_ns": (to - from) as f64 / width as f64,
        "functions": { "id": used, "name": names, "module": modules },
        "lanes": lanes_json,
    }))
}

fn buckets(ix: &Index, lane: &Lane, sel: &Sel, width: usize, mask: Option<&[bool]>) -> Buckets {
    let p = &ix.profile;
    let a = lane.samples.partition_point(|&i| ix.times[i as usize] < sel.from);
    let b = lane.samples.partition_point(|&i| ix.times[i as usize] < sel.to);
    let span = (sel.to - sel.from).max(1) as u128;
    let mut out = Buckets::default();
    // Dense per-function weights of the current bucket, reset through `touched`.
    let mut acc = vec![0u64; ix.funcs.len() + 1];
    let mut touched: Vec<usize> = Vec::new();
    let (mut cur, mut count, mut weight, mut best, mut best_w) = (usize::MAX, 0u64, 0u64, NONE, 0u64);
    let flush = |out: &mut Buckets, cur: usize, count: u64, weight: u64, best: u32, touched: &mut Vec<usize>, acc: &mut [u64]| {
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
    for &i in &lane.samples[a..b.max(a)] {
        let s = &p.samples[i as usize];
        if mask.is_some_and(|m| !m.get(s.thread as usize).copied().unwrap_or(false)) {
            continue;
        }
        if cur == usize::MAX || s.time_ns >= next_start {
            let k = (((s.time_ns - sel.from) as u128 * width as u128) / span).min(width as u128 - 1) as usize;
            flush(&mut out, cur, count, weight, best, &mut touched, &mut acc);
            (cur, count, weight, best, best_w) = (k, 0, 0, NONE, 0);
            next_start = if k + 1 >= width { u64::MAX } else { start_of(k + 1) };
        }
        let f = ix.func_of_node(ix.leaf_node(i as usize));
        let slot = if f == NONE { acc.len() - 1 } else { f as usize };
        if acc[slot] == 0 {
            touched.push(slot);
        }
        // Weightless samples (pure counts) still vote.
        acc[slot] += s.weight.max(1);
        if acc[slot] > best_w {
            (best, best_w) = (f, acc[slot]);
        }
        count += 1;
        weight += s.weight;
    }
    flush(&mut out, cur, count, weight, best, &mut touched, &mut acc);
    out
}
