//! The sums at block edges against the plain scan: ranges starting and ending inside
//! blocks and on their edges, empty ones, one block, the tail past the last edge, every
//! block size, constant and varying weights, the module group; through the request
//! path, the CPU and thread groups too.

use std::sync::Arc;

use kairos_model::Profile;

use crate::agg::{aggregate, aggregate_in, by_blocks, pids, scan, Agg, Group, ThreadMask};
use crate::fast_path_tests::profile;
use crate::index::{Functions, Index};
use crate::query::Sel;

/// The test profile with its CPUs numbered densely (its CPU 70,000 drops the per-CPU
/// sums) and, with `weight`, every sample of that weight.
fn dense(n: usize, seed: u64, weight: Option<u64>) -> Profile {
    let mut p = profile(n, seed);
    for s in &mut p.samples {
        if s.cpu == 70_000 {
            s.cpu = 4;
        }
        if let Some(w) = weight {
            s.weight = w;
        }
    }
    p
}

fn key(a: &Agg) -> (Vec<u64>, Vec<u64>, u64, u64) {
    (a.self_w.clone(), a.self_c.clone(), a.weight, a.count)
}

/// Ranges of `n` samples around the edges of blocks of `size`.
fn ranges(n: usize, size: usize) -> Vec<std::ops::Range<usize>> {
    let mut v = vec![0..0, 0..n, 0..1, n / 2..n / 2, n.saturating_sub(1)..n];
    for k in [0, 1, 2, 3] {
        let e = (k * size).min(n);
        for (a, b) in [
            (e, e + size),
            (e, e + 2 * size),
            (e + 1, e + 2 * size - 1),
            (e + 1, e + 3 * size + 1),
            (e.saturating_sub(1), n),
            (e + size / 2, n - n / 7),
        ] {
            v.push(a.min(n)..b.min(n).max(a.min(n)));
        }
    }
    v
}

#[test]
fn block_sums_equal_the_scan() {
    for (seed, weight) in [(11u64, None), (12, Some(77u64)), (13, Some(0))] {
        let n = 3_000;
        let p = dense(n, seed, weight);
        let pids = pids(&p);
        for size in [1usize, 7, 64, 1_000, 1_500, 2_999, 3_000, 5_000] {
            let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
            ix.build_blocks_of(size);
            let all = ThreadMask::all();
            for r in ranges(n, size) {
                for only in [None, Some((Group::Module, 0)), Some((Group::Module, 1))] {
                    let want = scan(&ix, &all, only, &pids, r.clone());
                    let got = by_blocks(&ix, &all, only, &pids, &r);
                    // A range holding a whole block is answered from the sums.
                    let whole_block = r.start.div_ceil(size) < r.end / size;
                    assert_eq!(got.is_some(), whole_block, "size {size} {r:?}");
                    if let Some(got) = got {
                        assert_eq!(key(&got), key(&want), "size {size} {r:?} {only:?}");
                    }
                }
            }
            // One CPU's group reads that CPU's lane.
            let only = Some((Group::Cpu, 1));
            assert!(by_blocks(&ix, &all, only, &pids, &(0..n)).is_none());
            let some = ThreadMask::new(&ix.profile, &Some(vec![7]));
            assert!(by_blocks(&ix, &some, None, &pids, &(0..n)).is_none());
            assert!(by_blocks(&ix, &all, Some((Group::Thread, 0)), &pids, &(0..n)).is_none());
        }
    }
}

/// A CPU number too large for a dense table: no per-CPU sums, the rest as before.
#[test]
fn no_cpu_sums_past_the_dense_table() {
    let p = profile(2_000, 5);
    let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
    ix.build_blocks_of(100);
    let b = ix.blocks().expect("sums");
    assert!(b.cpus((1, 3)).is_none());
    let r = 150..1_777;
    let got = by_blocks(&ix, &ThreadMask::all(), None, &pids(&p), &r).expect("sums");
    assert_eq!(
        key(&got),
        key(&scan(&ix, &ThreadMask::all(), None, &pids(&p), r))
    );
}

/// The tree's aggregates through the request path, with the sums built, equal one pass.
#[test]
fn aggregates_with_blocks_equal_one_pass() {
    let p = dense(20_000, 21, None);
    let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
    ix.build_blocks_of(512);
    let t = ix.times();
    let (t0, t1) = (t[0], t[t.len() - 1]);
    for (from, to) in [
        (0, u64::MAX),
        (t0 + (t1 - t0) / 20, t1 - (t1 - t0) / 20),
        (t0 + (t1 - t0) / 3, t0 + (t1 - t0) / 2),
        (t[512], t[1024]),
        (t1, t1 + 1),
    ] {
        for tids in [None, Some(vec![7])] {
            let sel = Sel { from, to, tids };
            for only in [
                None,
                Some((Group::Module, 0)),
                Some((Group::Cpu, 3)),
                Some((Group::Thread, 1)),
            ] {
                let want = aggregate_in(&ix, &sel, only, Some(1));
                let got = aggregate(&ix, &sel, only);
                assert_eq!(key(&got), key(&want), "{} {only:?}", sel.key());
                assert_eq!((&got.total_w, &got.total_c), (&want.total_w, &want.total_c));
            }
        }
    }
}

/// Too few samples: no blocks, and every answer is scanned.
#[test]
fn few_samples_build_no_blocks() {
    let p = dense(1_000, 3, None);
    let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
    ix.build_blocks();
    assert!(ix.blocks().is_none());
}
