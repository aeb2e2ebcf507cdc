//! Sums at block edges of the time-sorted samples: at every `size`-th sample, the
//! counts (and weights, unless constant) per stack slot, per thread slot and per CPU of
//! all the samples before it. A selection of most of the run is then the difference of
//! two edges' sums plus a scan of the two partial blocks at its ends, in time
//! proportional to the stacks plus two blocks, not to the selected samples. The column
//! reader takes the edges from its totals as the rows go by ([`Blocks::from_edges`]);
//! other indexes get them from a pass on a thread of its own ([`Blocks::of`]), requests
//! scanning until it is done. Integer sums, so the answers are the same as a pass over
//! the samples.

use std::ops::Range;

use crate::samples::Samples;

#[path = "blocks_pass.rs"]
mod pass;

/// About this many blocks: a selection's edges scan at most two of them.
const BLOCKS: usize = 64;
/// Fewer samples than this per block are not worth their sums.
const MIN_SIZE: usize = 1 << 16;
/// The edges' sums take at most this many bytes (fewer blocks when the stacks are many).
const MAX_BYTES: usize = 96 << 20;

/// Sums at block edges; see the module's comment.
#[derive(Debug, PartialEq)]
pub struct Blocks {
    /// Samples per block.
    size: usize,
    /// Edges kept: edge k (1..=edges) is at sample `k * size`; edge 0 (all zero) is not
    /// stored.
    edges: usize,
    /// Stack slots as in the totals: one per stack, one for an id out of range, one for
    /// samples without a stack.
    slots: usize,
    /// Thread slots: one per thread and a last for indices out of range.
    threads: usize,
    /// The weight of every sample, when it is one value: weights are then not stored.
    const_w: Option<u64>,
    /// Counts per stack slot before each edge, at `(k - 1) * slots + s`.
    count: Vec<u32>,
    /// Weights (wrapping sums) likewise; empty with `const_w`.
    weight: Vec<u64>,
    /// Count, weight and count of samples with a stack, per thread slot before each edge,
    /// at `(k - 1) * threads + t`.
    thread: Vec<[u64; 3]>,
    /// CPUs (dense numbers below `cpus`; 0: no per-CPU sums, a CPU number was too large).
    cpus: usize,
    /// Count, weight and count with a stack per CPU before each edge, at
    /// `(k - 1) * cpus + cpu`.
    cpu_edges: Vec<[u64; 3]>,
}

/// The sums of the samples before one edge, as the whole-run totals' `edge` makes
/// them while the samples are read: count and weight per stack slot; count, weight and
/// count with a stack per thread slot and per CPU (None: a CPU number too large).
#[derive(Debug, Clone, Default)]
pub struct Edge {
    pub count: Vec<u32>,
    /// Weights per stack slot; empty when every sample so far weighed `one_w`.
    pub weight: Vec<u64>,
    pub one_w: Option<u64>,
    pub thread: Vec<[u64; 3]>,
    pub cpu: Option<Vec<[u64; 3]>>,
}

impl Edge {
    /// `self` plus `base` (the sums of the samples before those `self` counted).
    pub fn plus(mut self, base: &Edge) -> Edge {
        let empty = |e: &Edge| e.count.iter().all(|&c| c == 0);
        let one_w = match (self.one_w, base.one_w) {
            (Some(a), Some(b)) if a == b || empty(base) => Some(a),
            (Some(_), Some(b)) if empty(&self) => Some(b),
            _ => None,
        };
        if one_w.is_none() {
            self.weight = self.weights();
            for (x, y) in self.weight.iter_mut().zip(base.weights()) {
                *x = x.wrapping_add(y);
            }
        }
        self.one_w = one_w;
        for (x, y) in self.count.iter_mut().zip(&base.count) {
            *x = x.wrapping_add(*y);
        }
        let add = |a: &mut Vec<[u64; 3]>, b: &[[u64; 3]]| {
            if a.len() < b.len() {
                a.resize(b.len(), [0; 3]);
            }
            for (x, y) in a.iter_mut().zip(b) {
                *x = [x[0] + y[0], x[1].wrapping_add(y[1]), x[2] + y[2]];
            }
        };
        add(&mut self.thread, &base.thread);
        self.cpu = match (self.cpu, &base.cpu) {
            (Some(mut a), Some(b)) => {
                add(&mut a, b);
                Some(a)
            }
            _ => None,
        };
        self
    }

    /// The weights per stack slot.
    fn weights(&self) -> Vec<u64> {
        match self.one_w {
            Some(v) => self
                .count
                .iter()
                .map(|&c| v.wrapping_mul(c as u64))
                .collect(),
            None => self.weight.clone(),
        }
    }
}

/// Sums of the samples between two edges.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sums {
    /// Weight and count per stack slot.
    pub w: Vec<u64>,
    pub c: Vec<u64>,
}

/// A selection cut at block edges: the samples between edges `mid` and the two partial
/// blocks' samples at its ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    pub mid: (usize, usize),
    pub edges: [Range<usize>; 2],
}

impl Blocks {
    /// The sums of `samples` with `stacks` stacks and `threads` threads, and per CPU when
    /// every CPU number is below `cpus`; None when the samples are too few for blocks.
    pub fn of(
        samples: &Samples,
        stacks: usize,
        threads: usize,
        cpus: Option<usize>,
    ) -> Option<Blocks> {
        let size = Blocks::size_for(samples.len(), stacks, threads, cpus.unwrap_or(0))?;
        Some(Blocks::with_size(samples, stacks, threads, cpus, size))
    }

    /// Samples per block for `n` samples with `stacks` stacks and `threads` threads: None
    /// when they are too few for blocks.
    pub fn size_for(n: usize, stacks: usize, threads: usize, cpus: usize) -> Option<usize> {
        let per_edge = (stacks + 2) * 12 + (threads + 1 + cpus) * 24;
        let most = (MAX_BYTES / per_edge.max(1)).min(BLOCKS);
        let size = n.div_ceil(most.max(1)).max(MIN_SIZE);
        (n / size >= 4).then_some(size)
    }

    /// The blocks of `n` samples of `size` from the sums before each edge (edge k at
    /// sample k * size, k = 1, 2, ...), made while reading them; `const_w`: the weight of
    /// every sample when it is one. None when an edge is missing or of another shape.
    pub fn from_edges(
        n: usize,
        size: usize,
        const_w: Option<u64>,
        edges: Vec<Edge>,
    ) -> Option<Blocks> {
        let first = edges.first()?;
        let (slots, threads) = (first.count.len(), first.thread.len());
        let cpus = match edges
            .iter()
            .map(|e| e.cpu.as_ref().map(|c| c.len()))
            .collect::<Option<Vec<_>>>()
        {
            Some(v) => v.into_iter().max().unwrap_or(0),
            None => 0,
        };
        let bad = |e: &Edge| {
            e.count.len() != slots
                || e.thread.len() != threads
                || (e.one_w.is_none() && e.weight.len() != slots)
        };
        if size == 0 || edges.len() != n / size || edges.iter().any(bad) {
            return None;
        }
        let mut b = Blocks {
            size,
            edges: edges.len(),
            slots,
            threads,
            const_w,
            count: Vec::with_capacity(edges.len() * slots),
            weight: Vec::new(),
            thread: Vec::with_capacity(edges.len() * threads),
            cpus,
            cpu_edges: Vec::with_capacity(edges.len() * cpus),
        };
        for e in edges {
            b.count.extend_from_slice(&e.count);
            if const_w.is_none() {
                b.weight.extend(e.weights());
            }
            b.thread.extend_from_slice(&e.thread);
            if cpus > 0 {
                let c = e.cpu.unwrap_or_default();
                b.cpu_edges
                    .extend((0..cpus).map(|k| c.get(k).copied().unwrap_or([0; 3])));
            }
        }
        Some(b)
    }

    /// Samples per block.
    pub fn size(&self) -> usize {
        self.size
    }

    /// `r` cut at the block edges inside it; None when it holds no whole block.
    pub fn cut(&self, r: &Range<usize>) -> Option<Cut> {
        let ka = r.start.div_ceil(self.size);
        let kb = (r.end / self.size).min(self.edges);
        (ka < kb).then(|| Cut {
            mid: (ka, kb),
            edges: [r.start..ka * self.size, kb * self.size..r.end],
        })
    }

    /// Weight and count per stack slot between edges `ka` and `kb`.
    pub fn stacks(&self, (ka, kb): (usize, usize)) -> Sums {
        let at = |k: usize, s: usize| match k {
            0 => 0,
            k => self
                .count
                .get((k - 1) * self.slots + s)
                .copied()
                .unwrap_or(0) as u64,
        };
        let wat = |k: usize, s: usize| match k {
            0 => 0,
            k => self
                .weight
                .get((k - 1) * self.slots + s)
                .copied()
                .unwrap_or(0),
        };
        let c: Vec<u64> = (0..self.slots).map(|s| at(kb, s) - at(ka, s)).collect();
        let w = match self.const_w {
            Some(v) => c.iter().map(|&c| v.wrapping_mul(c)).collect(),
            None => (0..self.slots)
                .map(|s| wat(kb, s).wrapping_sub(wat(ka, s)))
                .collect(),
        };
        Sums { w, c }
    }

    /// Count, weight and count with a stack per thread slot between edges `ka` and `kb`.
    pub fn threads(&self, mid: (usize, usize)) -> Vec<[u64; 3]> {
        between(&self.thread, self.threads, mid)
    }

    /// Count, weight and count with a stack per CPU between edges `ka` and `kb`; None
    /// without per-CPU sums.
    pub fn cpus(&self, mid: (usize, usize)) -> Option<Vec<[u64; 3]>> {
        (self.cpus > 0).then(|| between(&self.cpu_edges, self.cpus, mid))
    }
}

/// The difference of edges `kb` and `ka` of `edges` (`width` sums each; edge 0 is zero).
fn between(edges: &[[u64; 3]], width: usize, (ka, kb): (usize, usize)) -> Vec<[u64; 3]> {
    let at = |k: usize, t: usize| match k {
        0 => [0; 3],
        k => edges.get((k - 1) * width + t).copied().unwrap_or([0; 3]),
    };
    (0..width)
        .map(|t| {
            let (a, b) = (at(ka, t), at(kb, t));
            [b[0] - a[0], b[1].wrapping_sub(a[1]), b[2] - a[2]]
        })
        .collect()
}
