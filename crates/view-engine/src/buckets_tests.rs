//! The timeline's buckets against a plain per-sample walk: bucket ends found by search,
//! functions read from the lanes' copies, pieces on several cores, constant weights
//! counted.

use std::sync::Arc;

use crate::agg::ThreadMask;
use crate::buckets::{lane_buckets, Buckets, MIN_PIECE};
use crate::ids::NONE;
use crate::index::{Functions, Index, Lane};
use crate::query::Sel;

/// The buckets as the plain walk makes them: each sample's bucket by division, weights
/// per function in a map, the drawn function the first to reach the bucket's largest
/// weight.
fn plain(ix: &Index, lane: &Lane, sel: &Sel, width: usize, mask: &ThreadMask) -> Buckets {
    let span = (sel.to - sel.from).max(1) as u128;
    let mut out = Buckets::default();
    let mut cur: Option<usize> = None;
    let mut acc: std::collections::HashMap<u32, u64> = Default::default();
    let (mut count, mut weight, mut best, mut best_w) = (0u64, 0u64, NONE, 0u64);
    let flush = |out: &mut Buckets, k: usize, count: u64, weight: u64, best: u32| {
        if count > 0 {
            out.bucket.push(k as u32);
            out.count.push(count);
            out.weight.push(weight);
            out.func.push(best);
        }
    };
    for &i in &lane.samples {
        let i = i as usize;
        let t = ix.times()[i];
        if t < sel.from || t >= sel.to || !mask.admits(ix.samples.thread(i)) {
            continue;
        }
        let k = ((t - sel.from) as u128 * width as u128 / span).min(width as u128 - 1) as usize;
        if cur != Some(k) {
            if let Some(c) = cur {
                flush(&mut out, c, count, weight, best);
            }
            (cur, count, weight, best, best_w) = (Some(k), 0, 0, NONE, 0);
            acc.clear();
        }
        let (f, w) = (ix.leaf_func(i), ix.samples.weight(i));
        let e = acc.entry(f).or_default();
        *e += w.max(1);
        if *e > best_w {
            (best, best_w) = (f, *e);
        }
        count += 1;
        weight += w;
    }
    if let Some(c) = cur {
        flush(&mut out, c, count, weight, best);
    }
    out
}

/// Bucket ends found by search and functions read from the lanes' copies, pieces on
/// several cores, constant weights counted: the same buckets and colours as the plain
/// walk, ties included (constant weights tie often), with and without a thread filter.
#[test]
fn lane_copies_give_the_plain_walks_buckets() {
    for (seed, weight) in [(3u64, None), (5, Some(250u64)), (8, Some(0))] {
        let mut p = crate::fast_path_tests::profile(20_000, seed);
        if let Some(w) = weight {
            p.samples.iter_mut().for_each(|s| s.weight = w);
        }
        let funcs = Arc::new(Functions::new(&p));
        let ix = Index::new(p, funcs);
        let times = ix.times();
        let (first, last) = (times[0], times[times.len() - 1]);
        for (from, to) in [(first, last + 1), (first + (last - first) / 3, last - 1000)] {
            let sel = Sel {
                from,
                to,
                tids: None,
            };
            for tids in [None, Some(vec![7]), Some(vec![3, 9])] {
                let mask = ThreadMask::new(&ix.profile, &tids);
                for width in [1usize, 7, 333, 4096] {
                    for by_cpu in [false, true] {
                        let lanes: Vec<&Lane> = ix.lanes(by_cpu).iter().collect();
                        for (cores, min_piece) in [(1usize, MIN_PIECE), (2, 50), (3, 7)] {
                            let got =
                                lane_buckets(&ix, &lanes, &sel, width, &mask, cores, min_piece);
                            for (l, g) in lanes.iter().zip(&got) {
                                let want = plain(&ix, l, &sel, width, &mask);
                                assert_eq!(
                                    (&g.bucket, &g.count, &g.weight, &g.func),
                                    (&want.bucket, &want.count, &want.weight, &want.func),
                                    "seed {seed} width {width} cpu {by_cpu} cores {cores} {tids:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
