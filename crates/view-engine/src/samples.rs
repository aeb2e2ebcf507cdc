//! The samples of an indexed profile as columns, each as narrow as its values allow: a
//! 100-million-sample result is ~15-25 bytes a sample here instead of the 32 of
//! `kairos_model::Sample` plus the index's own copies. Built by consuming the profile's
//! sample vector from its end, giving its memory back as the columns fill, so loading
//! never holds both whole.

use kairos_model::columns::NO_STACK;
use kairos_model::Sample;
pub use kairos_model::{Narrow, SampleColumns};

/// A mutable window of a [`Narrow`] column.
enum NarrowMut<'a> {
    Const,
    U8(&'a mut [u8]),
    U16(&'a mut [u16]),
    U32(&'a mut [u32]),
    U64(&'a mut [u64]),
}

/// Rows `from..` of `col`, to write in place.
fn slice_mut(col: &mut Narrow, from: usize) -> NarrowMut<'_> {
    match col {
        Narrow::Const(_) => NarrowMut::Const,
        Narrow::U8(x) => NarrowMut::U8(&mut x[from..]),
        Narrow::U16(x) => NarrowMut::U16(&mut x[from..]),
        Narrow::U32(x) => NarrowMut::U32(&mut x[from..]),
        Narrow::U64(x) => NarrowMut::U64(&mut x[from..]),
    }
}

impl<'a> NarrowMut<'a> {
    fn split(self, k: usize) -> (NarrowMut<'a>, NarrowMut<'a>) {
        match self {
            NarrowMut::Const => (NarrowMut::Const, NarrowMut::Const),
            NarrowMut::U8(x) => {
                let (a, b) = x.split_at_mut(k);
                (NarrowMut::U8(a), NarrowMut::U8(b))
            }
            NarrowMut::U16(x) => {
                let (a, b) = x.split_at_mut(k);
                (NarrowMut::U16(a), NarrowMut::U16(b))
            }
            NarrowMut::U32(x) => {
                let (a, b) = x.split_at_mut(k);
                (NarrowMut::U32(a), NarrowMut::U32(b))
            }
            NarrowMut::U64(x) => {
                let (a, b) = x.split_at_mut(k);
                (NarrowMut::U64(a), NarrowMut::U64(b))
            }
        }
    }

    // The casts cannot truncate: the width was chosen from the column's maximum.
    #[inline]
    fn set(&mut self, i: usize, v: u64) {
        match self {
            NarrowMut::Const => {}
            NarrowMut::U8(x) => x[i] = v as u8,
            NarrowMut::U16(x) => x[i] = v as u16,
            NarrowMut::U32(x) => x[i] = v as u32,
            NarrowMut::U64(x) => x[i] = v,
        }
    }
}

/// One thread's window of every column.
struct Part<'a> {
    time: &'a mut [u64],
    stack: &'a mut [u32],
    thread: NarrowMut<'a>,
    cpu: NarrowMut<'a>,
    weight: NarrowMut<'a>,
}

impl Part<'_> {
    fn fill(mut self, src: &[Sample]) {
        for (i, s) in src.iter().enumerate() {
            self.time[i] = s.time_ns;
            self.stack[i] = s.stack.unwrap_or(NO_STACK);
            self.thread.set(i, s.thread as u64);
            self.cpu.set(i, s.cpu as u64);
            self.weight.set(i, s.weight);
        }
    }
}

/// Largest and smallest thread, CPU and weight: what decides each column's width.
struct Stats {
    max: [u64; 3],
    min: [u64; 3],
}

impl Stats {
    fn of(s: &[Sample]) -> Stats {
        let mut st = Stats {
            max: [0; 3],
            min: [u64::MAX; 3],
        };
        for x in s {
            let v = [x.thread as u64, x.cpu as u64, x.weight];
            for ((hi, lo), v) in st.max.iter_mut().zip(&mut st.min).zip(v) {
                *hi = (*hi).max(v);
                *lo = (*lo).min(v);
            }
        }
        st
    }

    fn merge(&mut self, o: &Stats) {
        for k in 0..3 {
            self.max[k] = self.max[k].max(o.max[k]);
            self.min[k] = self.min[k].min(o.min[k]);
        }
    }
}

/// Samples as columns, in time order as in the profile.
pub type Samples = SampleColumns;

/// Rows moved per step while the source vector shrinks behind them.
const STEP: usize = 1 << 20;

/// Takes the samples over; `src` is left empty.
pub fn take(src: &mut Vec<Sample>) -> Samples {
    let n = src.len();
    let st = crate::par::fold(0..n, |r| Stats::of(&src[r]), |a, b| a.merge(&b));
    let equal = |max: u64, min: u64| (max == min).then_some(max);
    // Zeroed vectors: pages are only committed as the fill below reaches them.
    let mut out = Samples {
        time: vec![0; n],
        stack: vec![NO_STACK; n],
        thread: Narrow::with(n, st.max[0], equal(st.max[0], st.min[0])),
        cpu: Narrow::with(n, st.max[1], equal(st.max[1], st.min[1])),
        weight: Narrow::with(n, st.max[2], equal(st.max[2], st.min[2])),
    };
    let mut end = n;
    while end > 0 {
        let start = end.saturating_sub(STEP);
        // Two halves of the step on two threads when the step is whole.
        let mid = start + (end - start) / 2;
        #[allow(
            clippy::single_range_in_vec_init,
            reason = "one range of the list, not a list of its numbers"
        )]
        let ranges = if end - start == STEP {
            vec![start..mid, mid..end]
        } else {
            vec![start..end]
        };
        let parts = parts_mut(&mut out, &ranges);
        std::thread::scope(|sc| {
            for (r, part) in ranges.iter().zip(parts) {
                let s = &src[r.clone()];
                sc.spawn(move || part.fill(s));
            }
        });
        src.truncate(start);
        // Large vectors live in their own mappings, so shrinking returns the tail
        // without a copy.
        src.shrink_to_fit();
        end = start;
    }
    out
}

/// Disjoint mutable views of `ranges` (ascending, adjacent) of every column.
fn parts_mut<'a>(cols: &'a mut Samples, ranges: &[std::ops::Range<usize>]) -> Vec<Part<'a>> {
    let Some(first) = ranges.first() else {
        return Vec::new();
    };
    let from = first.start;
    let (mut time, mut stack) = (&mut cols.time[from..], &mut cols.stack[from..]);
    let (mut thread, mut cpu, mut weight) = (
        slice_mut(&mut cols.thread, from),
        slice_mut(&mut cols.cpu, from),
        slice_mut(&mut cols.weight, from),
    );
    let mut out = Vec::new();
    for r in ranges {
        let k = r.len();
        let (t, t_rest) = std::mem::take(&mut time).split_at_mut(k);
        let (s, s_rest) = std::mem::take(&mut stack).split_at_mut(k);
        let (th, th_rest) = thread.split(k);
        let (c, c_rest) = cpu.split(k);
        let (w, w_rest) = weight.split(k);
        out.push(Part {
            time: t,
            stack: s,
            thread: th,
            cpu: c,
            weight: w,
        });
        (time, stack, thread, cpu, weight) = (t_rest, s_rest, th_rest, c_rest, w_rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(n: usize, seed: u64, weight_bits: u32, threads: u32) -> Vec<Sample> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let mask = if weight_bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << weight_bits) - 1
                };
                Sample {
                    time_ns: 1_000 + i as u64 * 3 + x % 3,
                    thread: (x % threads as u64) as u32,
                    cpu: ((x >> 8) % 300) as u32,
                    stack: (!x.is_multiple_of(9)).then_some((x >> 16) as u32 % 70_000),
                    weight: if weight_bits == 0 {
                        250_000
                    } else {
                        (x >> 3) & mask
                    },
                }
            })
            .collect()
    }

    /// The columns give back exactly the samples they were made of, at every width, across
    /// the steps of the move (more than one STEP of rows).
    #[test]
    fn columns_round_trip_every_width() {
        for (n, bits, threads) in [
            (0usize, 8u32, 1u32),
            (1, 0, 1),
            (5000, 8, 3),
            (5000, 16, 300),
            (STEP + 777, 32, 70_000),
            (3000, 64, 5),
        ] {
            let want = samples(n, 7 + n as u64, bits, threads);
            let mut src = want.clone();
            let cols = take(&mut src);
            assert!(src.is_empty());
            assert_eq!(cols.len(), n);
            assert_eq!(cols.to_vec(), want, "n {n} bits {bits}");
            assert_eq!(cols.get(n), None);
        }
    }

    #[test]
    fn widths_follow_the_largest_value() {
        let mut v = samples(1000, 3, 0, 1);
        let cols = take(&mut v);
        assert!(matches!(cols.weight, Narrow::Const(250_000)));
        assert!(matches!(cols.thread, Narrow::Const(0)));
        assert!(matches!(cols.cpu, Narrow::U16(_)));
        let mut v = samples(1000, 3, 64, 200);
        let cols = take(&mut v);
        assert!(matches!(cols.weight, Narrow::U64(_)));
        assert!(matches!(cols.thread, Narrow::U8(_)));
    }
}
