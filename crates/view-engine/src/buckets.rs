//! The timeline's per-pixel buckets of a lane: count, weight and the function with most
//! weight (its colour), computed for `api/timeline`.

use std::ops::Range;

use crate::ids::NONE;
use crate::index::{Index, Lane};
use crate::lanes::Funcs;
use crate::query::Sel;
use crate::samples::Narrow;
use crate::sums::ThreadMask;

/// Buckets of one lane, columnar.
#[derive(Default)]
pub struct Buckets {
    pub bucket: Vec<u32>,
    pub count: Vec<u64>,
    pub weight: Vec<u64>,
    pub func: Vec<u32>,
}

/// Samples of a lane below which it is not cut into pieces: a thread costs more.
pub const MIN_PIECE: usize = 1 << 18;

/// Every lane's buckets. Lanes with many samples in the selection are cut at bucket starts
/// into pieces (a bucket is never in two, so the pieces' buckets concatenate exactly), and
/// the pieces are spread over `cores`: a single lane or two CPU lanes use every core too.
pub fn lane_buckets(
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
    // Pieces: a lane and a range of its samples.
    let mut jobs: Vec<(usize, Range<usize>)> = Vec::new();
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
            jobs.push((l, a + from..a + cut));
            from = cut;
        }
        jobs.push((l, a + from..b));
    }
    let total: usize = jobs.iter().map(|j| j.1.len()).sum();
    let workers = if total >= min_piece {
        cores.min(jobs.len())
    } else {
        1
    };
    let run = |(l, r): &(usize, Range<usize>)| buckets(ix, lanes[*l], r.clone(), sel, width, mask);
    let mut results: Vec<Option<Buckets>> = (0..jobs.len()).map(|_| None).collect();
    if workers <= 1 {
        for (r, job) in results.iter_mut().zip(&jobs) {
            *r = Some(run(job));
        }
    } else {
        // Workers take the next job as they finish one, so unequal pieces even out.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: Vec<Vec<(usize, Buckets)>> = std::thread::scope(|s| {
            let work = || {
                let mut mine = Vec::new();
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(job) = jobs.get(k) else { break };
                    mine.push((k, run(job)));
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
    for (job, r) in jobs.iter().zip(results) {
        // A piece whose thread failed is done again here rather than lost.
        let b = r.unwrap_or_else(|| run(job));
        let o = &mut out[job.0];
        o.bucket.extend(b.bucket);
        o.count.extend(b.count);
        o.weight.extend(b.weight);
        o.func.extend(b.func);
    }
    out
}

/// Buckets of the samples `r` of `lane` (within the selection, in time order).
fn buckets(
    ix: &Index,
    lane: &Lane,
    r: Range<usize>,
    sel: &Sel,
    width: usize,
    mask: &ThreadMask,
) -> Buckets {
    let idx = lane.samples.get(r.clone()).unwrap_or(&[]);
    match &lane.funcs {
        Funcs::U16(f) => walk(ix, idx, f.get(r).unwrap_or(&[]), sel, width, mask),
        Funcs::U32(f) => walk(ix, idx, f.get(r).unwrap_or(&[]), sel, width, mask),
    }
}

/// First position of `idx` whose sample is not `below`, searching from the start by
/// doubling steps: a bucket's end is near its start.
fn gallop(idx: &[u32], below: impl Fn(u32) -> bool) -> usize {
    let mut hi = 1;
    while hi < idx.len() && below(idx[hi]) {
        hi *= 2;
    }
    let (lo, hi) = (hi / 2, hi.min(idx.len()));
    lo + idx[lo..hi].partition_point(|&i| below(i))
}

/// Buckets of the samples `idx` and their leaf functions `funcs` (the function count for
/// none). Each bucket's end is found by searching the times at its end only; its samples'
/// functions are then read in order, with their weights (one for all when constant).
fn walk<T: Copy + Into<u32>>(
    ix: &Index,
    idx: &[u32],
    funcs: &[T],
    sel: &Sel,
    width: usize,
    mask: &ThreadMask,
) -> Buckets {
    let (cols, times) = (&ix.samples, ix.times());
    let nf = ix.funcs.len();
    let span = (sel.to - sel.from).max(1) as u128;
    let start_of = |k: usize| sel.from + ((k as u128 * span).div_ceil(width as u128)) as u64;
    let const_w = match cols.weight {
        Narrow::Const(v) => Some(v),
        _ => None,
    };
    let all = mask.is_all();
    let mut out = Buckets::default();
    // Per-function weights (counts when the weight is constant: the same order, and four
    // bytes that stay in L1) of the current bucket; zeroed again by a second look at the
    // bucket's functions rather than a list of the touched ones (a branch per sample).
    let mut acc = vec![0u64; nf + 1];
    let mut cnt = vec![0u32; nf + 1];
    let n = idx.len().min(funcs.len());
    let mut pos = 0;
    while pos < n {
        let time_ns = times[idx[pos] as usize];
        let k = (((time_ns.saturating_sub(sel.from)) as u128 * width as u128) / span)
            .min(width as u128 - 1) as usize;
        let end = if k + 1 >= width {
            n
        } else {
            let next = start_of(k + 1);
            pos + gallop(&idx[pos..n], |i| times[i as usize] < next).max(1)
        };
        let fs = &funcs[pos..end];
        let (mut count, mut weight, mut best) = (0u64, 0u64, nf);
        match const_w {
            Some(w) if all && end - pos < u32::MAX as usize => {
                let mut best_c = 0u32;
                for &f in fs {
                    let slot = (f.into() as usize).min(nf);
                    let c = cnt[slot] + 1;
                    cnt[slot] = c;
                    if c > best_c {
                        (best, best_c) = (slot, c);
                    }
                }
                for &f in fs {
                    cnt[(f.into() as usize).min(nf)] = 0;
                }
                count = fs.len() as u64;
                weight = w.wrapping_mul(count);
            }
            _ => {
                let mut best_w = 0u64;
                for (j, &f) in (pos..end).zip(fs) {
                    let i = idx[j] as usize;
                    if !all && !mask.admits(cols.thread(i)) {
                        continue;
                    }
                    let w = const_w.unwrap_or_else(|| cols.weight(i));
                    let slot = (f.into() as usize).min(nf);
                    // Weightless samples (pure counts) still vote.
                    acc[slot] += w.max(1);
                    if acc[slot] > best_w {
                        (best, best_w) = (slot, acc[slot]);
                    }
                    count += 1;
                    weight = weight.wrapping_add(w);
                }
                for &f in fs {
                    acc[(f.into() as usize).min(nf)] = 0;
                }
            }
        }
        if count > 0 {
            out.bucket.push(k as u32);
            out.count.push(count);
            out.weight.push(weight);
            out.func.push(if best == nf { NONE } else { best as u32 });
        }
        pos = end;
    }
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
