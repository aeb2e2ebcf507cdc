//! The by-CPU timeline of a few threads (a TID filter): the chosen threads' lanes are
//! walked once, bucket by bucket, each sample counted in its CPU's row, instead of every
//! sample of the CPUs' lanes being tested against the filter. Each CPU's buckets are
//! those of its lane with the other threads' samples left out: the same samples in the
//! same order, so the same counts, weights and drawn functions.

use std::ops::Range;

use crate::buckets::{Buckets, MIN_PIECE};
use crate::ids::NONE;
use crate::index::{Index, Lane};
use crate::lanes::Funcs;
use crate::query::Sel;
use crate::samples::Narrow;

/// Per-CPU function tables are kept up to this many cells.
const MAX_CELLS: usize = 1 << 24;

/// The buckets of `cpu_lanes` (in CPU order) of the samples of the selection's TIDs.
/// None without a TID filter, with a TID < 0 (its lane holds thread indices out of range
/// too), with more than one chosen lane or more than `most` chosen samples, or with too
/// many CPUs times functions.
pub fn of_threads(
    ix: &Index,
    cpu_lanes: &[&Lane],
    sel: &Sel,
    width: usize,
    cores: usize,
    most: usize,
) -> Option<Vec<Buckets>> {
    let tids = sel.tids.as_ref()?;
    let nf = ix.funcs.len();
    if tids.iter().any(|&t| t < 0) || cpu_lanes.len().saturating_mul(nf + 1) > MAX_CELLS {
        return None;
    }
    let times = ix.times();
    let at = |i: u32| times.get(i as usize).copied().unwrap_or(u64::MAX);
    let parts: Vec<(&Lane, Range<usize>)> = ix
        .thread_lanes
        .iter()
        .filter(|l| l.tid.is_some_and(|t| tids.contains(&t)))
        .map(|l| {
            let a = l.samples.partition_point(|&i| at(i) < sel.from);
            (l, a..l.samples.partition_point(|&i| at(i) < sel.to).max(a))
        })
        .collect();
    let chosen: usize = parts.iter().map(|(_, r)| r.len()).sum();
    // Several lanes would have to be merged in sample order first (each CPU's drawn
    // function is the first to reach the most weight): measured slower than testing
    // every CPU sample, so one lane only.
    if parts.len() > 1 || chosen > most {
        return None;
    }
    let rows = CpuRows::new(cpu_lanes);
    let lane_of = |i: u32| rows.of(ix.samples.cpu(i as usize));
    let (idx, funcs, r): (&[u32], &Funcs, Range<usize>) = match &parts[..] {
        [(l, r)] => (&l.samples, &l.funcs, r.clone()),
        _ => return Some(cpu_lanes.iter().map(|_| Buckets::default()).collect()),
    };
    let idx = idx.get(r.clone()).unwrap_or(&[]);
    let cuts = cuts(idx, sel, width, cores, &at);
    let run = |p: usize| {
        let piece = cuts[p]..cuts[p + 1];
        let (a, b) = (r.start + piece.start, r.start + piece.end);
        let idx = &idx[piece];
        let n = cpu_lanes.len();
        match funcs {
            Funcs::U16(f) => walk(ix, idx, f.get(a..b).unwrap_or(&[]), &lane_of, n, sel, width),
            Funcs::U32(f) => walk(ix, idx, f.get(a..b).unwrap_or(&[]), &lane_of, n, sel, width),
        }
    };
    Some(concat(cpu_lanes.len(), in_parallel(cuts.len() - 1, &run)))
}

/// The row of each CPU number among the CPU lanes: a table when the numbers are small.
struct CpuRows {
    cpus: Vec<u32>,
    table: Option<Vec<u32>>,
}

impl CpuRows {
    fn new(cpu_lanes: &[&Lane]) -> CpuRows {
        let cpus: Vec<u32> = cpu_lanes
            .iter()
            .map(|l| l.cpu.unwrap_or(u32::MAX))
            .collect();
        let top = cpus
            .iter()
            .filter(|&&c| c != u32::MAX)
            .max()
            .map_or(0, |&c| c as usize + 1);
        let table = (top <= 1 << 16).then(|| {
            let mut t = vec![u32::MAX; top];
            for (k, &c) in cpus.iter().enumerate().filter(|(_, &c)| c != u32::MAX) {
                t[c as usize] = k as u32;
            }
            t
        });
        CpuRows { cpus, table }
    }

    /// The row of CPU `c`; usize::MAX for a CPU without a lane.
    fn of(&self, c: u32) -> usize {
        match &self.table {
            Some(t) => t.get(c as usize).map_or(usize::MAX, |&k| k as usize),
            None => self.cpus.binary_search(&c).unwrap_or(usize::MAX),
        }
    }
}

/// Where the samples `idx` are cut into pieces, one per core, at bucket starts.
fn cuts(idx: &[u32], sel: &Sel, width: usize, cores: usize, at: &dyn Fn(u32) -> u64) -> Vec<usize> {
    let span = (sel.to - sel.from).max(1) as u128;
    let start_of = |k: usize| sel.from + ((k as u128 * span).div_ceil(width as u128)) as u64;
    let pieces = (idx.len() / MIN_PIECE).clamp(1, cores.max(1)).min(width);
    let mut cuts = vec![0];
    for j in 1..pieces {
        let t = start_of(width * j / pieces);
        let c = idx.partition_point(|&i| at(i) < t).max(cuts[j - 1]);
        cuts.push(c);
    }
    cuts.push(idx.len());
    cuts
}

/// `run` of each piece, the first on this thread and the others on threads of their own.
fn in_parallel(pieces: usize, run: &(dyn Fn(usize) -> Vec<Buckets> + Sync)) -> Vec<Vec<Buckets>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..pieces).map(|p| s.spawn(move || run(p))).collect();
        let mut all = vec![run(0)];
        // A piece whose thread failed is done again here rather than lost.
        for (p, h) in handles.into_iter().enumerate() {
            all.push(h.join().unwrap_or_else(|_| run(p + 1)));
        }
        all
    })
}

/// The pieces' buckets, concatenated in order, per CPU lane.
fn concat(lanes: usize, done: Vec<Vec<Buckets>>) -> Vec<Buckets> {
    let mut out: Vec<Buckets> = (0..lanes).map(|_| Buckets::default()).collect();
    for piece in done {
        for (o, b) in out.iter_mut().zip(piece) {
            o.bucket.extend(b.bucket);
            o.count.extend(b.count);
            o.weight.extend(b.weight);
            o.func.extend(b.func);
        }
    }
    out
}

/// Buckets per CPU lane (`lanes` of them; `lane_of` a sample's) of the samples `idx`
/// with leaf functions `funcs`, in time order: as [`crate::buckets`] walks one lane, with
/// a function table per CPU.
fn walk<T: Copy + Into<u32>>(
    ix: &Index,
    idx: &[u32],
    funcs: &[T],
    lane_of: &impl Fn(u32) -> usize,
    lanes: usize,
    sel: &Sel,
    width: usize,
) -> Vec<Buckets> {
    let times = ix.times();
    let nf = ix.funcs.len();
    let stride = nf + 1;
    let span = (sel.to - sel.from).max(1) as u128;
    let start_of = |k: usize| sel.from + ((k as u128 * span).div_ceil(width as u128)) as u64;
    let const_w = match ix.samples.weight {
        Narrow::Const(v) => Some(v),
        _ => None,
    };
    let mut out: Vec<Buckets> = (0..lanes).map(|_| Buckets::default()).collect();
    // Per CPU and function: weights (each at least 1, so weightless samples vote) of
    // the current bucket; per CPU its count, weight and best function so far.
    let mut acc = vec![0u64; lanes * stride];
    let (mut count, mut weight) = (vec![0u64; lanes], vec![0u64; lanes]);
    let (mut best, mut best_w) = (vec![nf; lanes], vec![0u64; lanes]);
    let mut lane = Vec::new();
    let n = idx.len().min(funcs.len());
    let mut pos = 0;
    while pos < n {
        let t = times.get(idx[pos] as usize).copied().unwrap_or(u64::MAX);
        let k = (((t.saturating_sub(sel.from)) as u128 * width as u128) / span)
            .min(width as u128 - 1) as usize;
        let end = if k + 1 >= width {
            n
        } else {
            let next = start_of(k + 1);
            let below = |i: u32| times.get(i as usize).is_some_and(|&x| x < next);
            pos + idx[pos..n].partition_point(|&i| below(i)).max(1)
        };
        lane.clear();
        lane.extend(idx[pos..end].iter().map(|&i| lane_of(i)));
        for (j, &c) in (pos..end).zip(&lane) {
            if c >= lanes {
                continue;
            }
            let w = const_w.unwrap_or_else(|| ix.samples.weight(idx[j] as usize));
            let f = (funcs[j].into() as usize).min(nf);
            let cell = &mut acc[c * stride + f];
            *cell += w.max(1);
            if *cell > best_w[c] {
                (best[c], best_w[c]) = (f, *cell);
            }
            count[c] += 1;
            weight[c] = weight[c].wrapping_add(w);
        }
        for (c, o) in out.iter_mut().enumerate() {
            if count[c] > 0 {
                o.bucket.push(k as u32);
                o.count.push(count[c]);
                o.weight.push(weight[c]);
                o.func
                    .push(if best[c] == nf { NONE } else { best[c] as u32 });
            }
            (count[c], weight[c], best[c], best_w[c]) = (0, 0, nf, 0);
        }
        for (j, &c) in (pos..end).zip(&lane) {
            if c < lanes {
                acc[c * stride + (funcs[j].into() as usize).min(nf)] = 0;
            }
        }
        pos = end;
    }
    out
}
