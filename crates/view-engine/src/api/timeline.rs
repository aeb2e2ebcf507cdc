//! `api/timeline`: per lane and pixel bucket, the samples' count, weight and the function
//! with most weight (its colour). Only non-empty buckets are sent.

use serde_json::{json, Value};

use super::common::{data, derived};
use crate::buckets::{lane_buckets, MIN_PIECE};
use crate::error::Error;
use crate::ids::NONE;
use crate::index::Lane;
use crate::query::Query;
#[cfg(test)]
use crate::query::Sel;
use crate::site::State;
use crate::sums::ThreadMask;

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
    // By CPU with a TID filter, the chosen threads' lanes are walked instead of every
    // CPU sample tested, when they hold at most a quarter of the selection's samples.
    let most = ix.range(sel.from, sel.to).len() / 4;
    let out = match by_cpu
        .then(|| crate::cpu_buckets::of_threads(ix, &lanes, &sel, width as usize, cores, most))
        .flatten()
    {
        Some(out) => out,
        None => lane_buckets(ix, &lanes, &sel, width as usize, &mask, cores, MIN_PIECE),
    };
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::index::{Functions, Index};

    /// By-CPU buckets of the chosen thread's lane walked once equal the CPU lanes'
    /// buckets with each sample tested, for one thread (two sharing a TID too) and none,
    /// constant and varying weights, CPU numbers in a table and past it, on one core and
    /// several; several threads' lanes are left to the tested walk.
    #[test]
    fn cpu_buckets_of_threads_equal_the_tested_walk() {
        let cases = [(1u64, None, true), (2, Some(9u64), false), (3, None, false)];
        for (seed, weight, big_cpu) in cases {
            let mut p = crate::fast_path_tests::profile(12_000, seed);
            for s in &mut p.samples {
                if let Some(w) = weight {
                    s.weight = w;
                }
                if !big_cpu && s.cpu == 70_000 {
                    s.cpu = 4;
                }
            }
            let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
            let t = ix.times();
            let (a, b) = (t[0], t[t.len() - 1]);
            let lanes: Vec<&Lane> = ix.cpu_lanes().iter().collect();
            for (from, to) in [(a, b + 1), (a + (b - a) / 3, b - (b - a) / 5), (b, b + 1)] {
                for tids in [vec![3], vec![9], vec![7], vec![3, 1], vec![1, 3, 9], vec![]] {
                    let sel = Sel {
                        from,
                        to,
                        tids: Some(tids.clone()),
                    };
                    let mask = ThreadMask::new(&ix.profile, &sel.tids);
                    let one = ix
                        .thread_lanes
                        .iter()
                        .filter(|l| l.tid.is_some_and(|t| tids.contains(&t)))
                        .count()
                        <= 1;
                    if !one {
                        let got =
                            crate::cpu_buckets::of_threads(&ix, &lanes, &sel, 9, 1, usize::MAX);
                        assert!(got.is_none(), "several lanes are tested sample by sample");
                        continue;
                    }
                    for width in [1usize, 17, 500] {
                        let want = lane_buckets(&ix, &lanes, &sel, width, &mask, 1, MIN_PIECE);
                        for cores in [1, 3] {
                            let got = crate::cpu_buckets::of_threads(
                                &ix,
                                &lanes,
                                &sel,
                                width,
                                cores,
                                usize::MAX,
                            )
                            .expect("buckets");
                            assert_eq!(got.len(), want.len());
                            for (g, w) in got.iter().zip(&want) {
                                assert_eq!(
                                    (&g.bucket, &g.count, &g.weight, &g.func),
                                    (&w.bucket, &w.count, &w.weight, &w.func),
                                    "{tids:?} width {width} cores {cores}"
                                );
                            }
                        }
                    }
                    let few = crate::cpu_buckets::of_threads(&ix, &lanes, &sel, 9, 1, 0);
                    assert!(few.is_none() || tids.is_empty() || from == b);
                }
            }
            // A TID < 0 and no filter go the tested way.
            for tids in [None, Some(vec![-1])] {
                let sel = Sel {
                    from: a,
                    to: b,
                    tids,
                };
                assert!(
                    crate::cpu_buckets::of_threads(&ix, &lanes, &sel, 9, 1, usize::MAX).is_none()
                );
            }
        }
    }
}
