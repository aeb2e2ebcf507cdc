//! The sums at block edges from a pass over the samples' columns, in parts on the cores
//! (for indexes whose samples were not read by the column reader).

use std::ops::Range;

use super::Blocks;
use crate::ids::NONE;
use crate::samples::{Narrow, Samples};

impl Blocks {
    /// [`Blocks::of`] with blocks of `size` samples (tests use small ones).
    pub fn with_size(
        samples: &Samples,
        stacks: usize,
        threads: usize,
        cpus: Option<usize>,
        size: usize,
    ) -> Blocks {
        let (slots, threads) = (stacks + 2, threads + 1);
        let size = size.max(1);
        let n = samples.len().min(u32::MAX as usize);
        let const_w = match samples.weight {
            Narrow::Const(v) => Some(v),
            _ => None,
        };
        let cpus = cpus.unwrap_or(0);
        let mut b = Blocks {
            size,
            edges: n / size,
            slots,
            threads,
            const_w,
            count: Vec::new(),
            weight: Vec::new(),
            thread: Vec::new(),
            cpus,
            cpu_edges: Vec::new(),
        };
        let blocks = n.div_ceil(size);
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let part = crate::par::split(
            0..blocks,
            cores.min(blocks.max(1)),
            |r| b.part(samples, r),
            |a, z| a.append(z, slots, threads, cpus),
        );
        b.cpus = if part.cpu_bad { 0 } else { cpus };
        b.count = part.count;
        b.weight = part.weight;
        b.thread = part.thread;
        if b.cpus > 0 {
            b.cpu_edges = part.cpu_edges;
        }
        b
    }

    /// The sums of blocks `r` (the last may be partial): edges relative to the part's start.
    fn part(&self, samples: &Samples, r: Range<usize>) -> Part {
        let (slots, threads, size) = (self.slots, self.threads, self.size);
        let n = samples.len().min(u32::MAX as usize);
        let varying = self.const_w.is_none();
        let mut cur_c = vec![0u32; slots];
        let mut cur_w = vec![0u64; if varying { slots } else { 0 }];
        let mut cur_t = vec![[0u64; 3]; threads];
        let mut cur_cpu = vec![[0u64; 3]; self.cpus];
        let mut p = Part::default();
        for k in r {
            let (a, b) = (k * size, ((k + 1) * size).min(n));
            for i in a..b {
                let st = samples.stack.get(i).copied().unwrap_or(NONE);
                let s = if st == NONE {
                    slots - 1
                } else {
                    (st as usize).min(slots - 2)
                };
                let t = (samples.thread(i) as usize).min(threads - 1);
                let w = match self.const_w {
                    Some(v) => v,
                    None => samples.weight(i),
                };
                cur_c[s] += 1;
                let x = &mut cur_t[t];
                x[0] += 1;
                x[1] = x[1].wrapping_add(w);
                x[2] += (st != NONE) as u64;
                if varying {
                    cur_w[s] = cur_w[s].wrapping_add(w);
                }
                if self.cpus > 0 {
                    let cpu = (samples.cpu(i) as usize).min(self.cpus);
                    p.cpu_bad |= cpu == self.cpus;
                    let cpu = cpu.min(self.cpus - 1);
                    let x = &mut cur_cpu[cpu];
                    x[0] += 1;
                    x[1] = x[1].wrapping_add(w);
                    x[2] += (st != NONE) as u64;
                }
            }
            if b - a == size {
                p.count.extend_from_slice(&cur_c);
                p.weight.extend_from_slice(&cur_w);
                p.thread.extend_from_slice(&cur_t);
                p.cpu_edges.extend_from_slice(&cur_cpu);
            }
        }
        p
    }
}

/// One part's sums: its edges (relative to its first sample) and its per-CPU cells.
#[derive(Default)]
struct Part {
    count: Vec<u32>,
    weight: Vec<u64>,
    thread: Vec<[u64; 3]>,
    cpu_edges: Vec<[u64; 3]>,
    /// A CPU number at or past the dense numbers was seen: no per-CPU sums.
    cpu_bad: bool,
}

impl Part {
    /// Appends the next part: its edges plus everything before it. Only the last part
    /// can end with a partial block, so every part before `z` ends at an edge and this
    /// part's last edge holds all its samples.
    fn append(&mut self, z: Part, slots: usize, threads: usize, cpus: usize) {
        let base_c: Vec<u32> = self
            .count
            .get(self.count.len().saturating_sub(slots)..)
            .map_or_else(Vec::new, |s| s.to_vec());
        let base_w: Vec<u64> = self
            .weight
            .get(self.weight.len().saturating_sub(slots)..)
            .map_or_else(Vec::new, |s| s.to_vec());
        for chunk in z.count.chunks(slots) {
            self.count.extend(
                chunk
                    .iter()
                    .zip(base_c.iter().chain(std::iter::repeat(&0)))
                    .map(|(x, b)| x + b),
            );
        }
        for chunk in z.weight.chunks(slots) {
            self.weight.extend(
                chunk
                    .iter()
                    .zip(base_w.iter().chain(std::iter::repeat(&0)))
                    .map(|(x, b)| x.wrapping_add(*b)),
            );
        }
        let thread = std::mem::take(&mut self.thread);
        self.thread = append3(thread, &z.thread, threads);
        let cpu = std::mem::take(&mut self.cpu_edges);
        self.cpu_edges = append3(cpu, &z.cpu_edges, cpus);
        self.cpu_bad |= z.cpu_bad;
    }
}

/// `a`'s edges (of `width` sums each) followed by `z`'s plus `a`'s last.
fn append3(mut a: Vec<[u64; 3]>, z: &[[u64; 3]], width: usize) -> Vec<[u64; 3]> {
    if width == 0 {
        return a;
    }
    let base: Vec<[u64; 3]> = a
        .get(a.len().saturating_sub(width)..)
        .map_or_else(Vec::new, |s| s.to_vec());
    for chunk in z.chunks(width) {
        for (k, x) in chunk.iter().enumerate() {
            let b = base.get(k).copied().unwrap_or([0; 3]);
            a.push([x[0] + b[0], x[1].wrapping_add(b[1]), x[2] + b[2]]);
        }
    }
    a
}
