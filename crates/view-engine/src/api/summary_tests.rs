//! The summary's tallies (one pass split, whole run, lanes, block edges) against the
//! plain scan.

use std::sync::Arc;

use super::*;
use crate::fast_path_tests::profile;
use crate::index::Functions;

/// The top functions' tally is the same split over parts as sample by sample.
#[test]
fn split_tally_equals_one_pass_over_the_model() {
    let p = profile(25_000, 9);
    let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
    let nf = ix.funcs.len();
    for tids in [None, Some(vec![7]), Some(vec![1, 3])] {
        let mask = ThreadMask::new(&ix.profile, &tids);
        let (mut w, mut c, mut seen) = (
            vec![0u64; nf + 1],
            vec![0u64; nf + 1],
            vec![false; p.threads.len()],
        );
        for s in &p.samples {
            let tid = p.threads.get(s.thread as usize).map(|t| t.tid);
            if tids
                .as_ref()
                .is_some_and(|t| !tid.is_some_and(|x| t.contains(&x)))
            {
                continue;
            }
            let f = s.stack.map_or(nf, |st| {
                ix.func_of_node(ix.stack_node[st as usize]) as usize
            });
            w[f] += s.weight;
            c[f] += 1;
            if let Some(x) = seen.get_mut(s.thread as usize) {
                *x = true;
            }
        }
        for parts in [1, 2, 5] {
            let t = tally(&ix, &mask, 0..ix.samples.len(), Some(parts));
            assert_eq!(
                (&t.self_w, &t.self_c, &t.threads),
                (&w, &c, &seen),
                "{tids:?} parts {parts}"
            );
            assert_eq!((t.weight, t.count), (w.iter().sum(), c.iter().sum()));
        }
    }
}

/// The tally from the whole-run totals and from the chosen threads' lanes equals the
/// scan's, with every filter, on the whole run and a part of it.
#[test]
fn whole_and_lane_tallies_equal_the_scan() {
    for (seed, weight) in [(2u64, None), (3, Some(77u64))] {
        let mut p = profile(20_000, seed);
        if let Some(w) = weight {
            p.samples.iter_mut().for_each(|s| s.weight = w);
        }
        let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
        let t = ix.times();
        let (a, b) = (t[0], t[t.len() - 1]);
        for (from, to) in [(a, b + 1), (a + (b - a) / 5, b - (b - a) / 4)] {
            for tids in [
                None,
                Some(vec![7]),
                Some(vec![3, 9]),
                Some(vec![-1]),
                Some(vec![1, 3, 7, 9]),
            ] {
                let sel = crate::query::Sel {
                    from,
                    to,
                    tids: tids.clone(),
                };
                let mask = ThreadMask::new(&ix.profile, &tids);
                let range = ix.range(from, to);
                let want = tally(&ix, &mask, range.clone(), Some(1));
                let key = |t: &Tally| {
                    (
                        t.self_w.clone(),
                        t.self_c.clone(),
                        t.weight,
                        t.count,
                        t.threads.clone(),
                    )
                };
                if crate::whole::is_whole(&ix, &range) {
                    if let Some(got) = whole_tally(&ix, &mask) {
                        assert_eq!(key(&got), key(&want), "whole {tids:?}");
                    }
                }
                match lane_tally(&ix, &sel) {
                    Some(got) => {
                        assert_eq!(key(&got), key(&want), "lanes {tids:?} {from}-{to}")
                    }
                    None => assert!(tids.as_ref().is_none_or(|t| t.contains(&-1))),
                }
            }
        }
    }
}
/// The tally from the sums at block edges equals the scan's, on ranges starting and
/// ending inside blocks and on their edges, with constant and varying weights.
#[test]
fn block_tally_equals_the_scan() {
    for weight in [None, Some(5u64)] {
        let mut p = profile(4_000, 8);
        if let Some(w) = weight {
            p.samples.iter_mut().for_each(|s| s.weight = w);
        }
        let n = p.samples.len();
        for size in [1usize, 100, 999, 4_000] {
            let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
            ix.build_blocks_of(size);
            let all = ThreadMask::all();
            for r in [
                0..n,
                0..0,
                0..size,
                size..2 * size,
                1..n - 1,
                37..3_333,
                size - 1..size + 1,
            ] {
                let r = r.start.min(n)..r.end.min(n).max(r.start.min(n));
                let want = tally(&ix, &all, r.clone(), Some(1));
                let key = |t: &Tally| {
                    (
                        t.self_w.clone(),
                        t.self_c.clone(),
                        t.weight,
                        t.count,
                        t.threads.clone(),
                    )
                };
                match block_tally(&ix, &all, &r) {
                    Some(got) => assert_eq!(key(&got), key(&want), "size {size} {r:?}"),
                    None => {
                        assert!(r.start.div_ceil(size) >= r.end / size, "size {size} {r:?}")
                    }
                }
            }
            let one = ThreadMask::new(&ix.profile, &Some(vec![3]));
            assert!(
                block_tally(&ix, &one, &(0..n)).is_none(),
                "a TID filter reads lanes"
            );
        }
    }
}
