//! Samples as columns, each as narrow as its values allow: what a profile of tens of
//! millions of samples is held as once it is indexed (the page) or derived by a
//! time-assignment method. A row is ~15-25 bytes here instead of the 32 of [`Sample`].
//!
//! Columns are either filled in place (the page's index, which knows every width before
//! it writes) or grown row by row with [`SampleColumns::push`], which widens a column
//! the first time a value does not fit.

use crate::{Sample, StackIdx};

/// Stack id of a row without a stack.
pub const NO_STACK: u32 = u32::MAX;

/// Unsigned values stored in the fewest bytes that hold the largest (or one value for all).
#[derive(Debug, Clone, PartialEq)]
pub enum Narrow {
    Const(u64),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

/// Bytes a value needs: 1, 2, 4 or 8.
fn width(v: u64) -> u8 {
    match v {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    }
}

impl Narrow {
    /// Column of `n` zeroed rows able to hold values up to `max`; `all_equal` when all
    /// rows hold that one value.
    pub fn with(n: usize, max: u64, all_equal: Option<u64>) -> Narrow {
        match (all_equal, width(max)) {
            (Some(v), _) => Narrow::Const(v),
            (None, 1) => Narrow::U8(vec![0; n]),
            (None, 2) => Narrow::U16(vec![0; n]),
            (None, 4) => Narrow::U32(vec![0; n]),
            _ => Narrow::U64(vec![0; n]),
        }
    }

    /// Empty column for values up to `max`, with room for `cap` rows.
    pub fn empty(max: u64, cap: usize) -> Narrow {
        match width(max) {
            1 => Narrow::U8(Vec::with_capacity(cap)),
            2 => Narrow::U16(Vec::with_capacity(cap)),
            4 => Narrow::U32(Vec::with_capacity(cap)),
            _ => Narrow::U64(Vec::with_capacity(cap)),
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        match self {
            Narrow::Const(v) => *v,
            Narrow::U8(x) => x.get(i).map_or(0, |&v| v as u64),
            Narrow::U16(x) => x.get(i).map_or(0, |&v| v as u64),
            Narrow::U32(x) => x.get(i).map_or(0, |&v| v as u64),
            Narrow::U64(x) => x.get(i).copied().unwrap_or(0),
        }
    }

    /// Heap bytes of the rows held.
    pub fn bytes(&self) -> usize {
        match self {
            Narrow::Const(_) => 0,
            Narrow::U8(x) => x.len(),
            Narrow::U16(x) => x.len() * 2,
            Narrow::U32(x) => x.len() * 4,
            Narrow::U64(x) => x.len() * 8,
        }
    }

    /// Appends `v` after the `len` rows held (a `Const` holds no vector to count them),
    /// widening the column first when `v` does not fit.
    #[inline]
    pub fn push(&mut self, len: usize, v: u64) {
        match self {
            Narrow::Const(c) if *c == v => {}
            Narrow::U8(x) if v <= u8::MAX as u64 => x.push(v as u8),
            Narrow::U16(x) if v <= u16::MAX as u64 => x.push(v as u16),
            Narrow::U32(x) if v <= u32::MAX as u64 => x.push(v as u32),
            Narrow::U64(x) => x.push(v),
            _ => {
                self.widen(len, v);
                self.push(len, v);
            }
        }
    }

    /// Rewrites the `len` rows held in a width that also holds `v` (rare: at most once
    /// per width, so the copies cost at most a few passes over the column).
    #[inline(never)]
    fn widen(&mut self, len: usize, v: u64) {
        let (held, cap) = match self {
            Narrow::Const(c) => (width(*c), 0),
            Narrow::U8(x) => (1, x.capacity()),
            Narrow::U16(x) => (2, x.capacity()),
            Narrow::U32(x) => (4, x.capacity()),
            Narrow::U64(x) => (8, x.capacity()),
        };
        let max = if held >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * held as u32)) - 1
        };
        // An empty column is a vector, so these pushes fit and never widen again.
        let mut wide = Narrow::empty(max.max(v), cap.max(len + 1));
        for i in 0..len {
            wide.push(i, self.get(i));
        }
        *self = wide;
    }

    /// Pages for `n` more rows written ahead (so that a later fill finds them resident),
    /// the column itself unchanged.
    pub fn reserve_touched(&mut self, n: usize) {
        match self {
            Narrow::Const(_) => {}
            Narrow::U8(x) => touch(x, n),
            Narrow::U16(x) => touch(x, n),
            Narrow::U32(x) => touch(x, n),
            Narrow::U64(x) => touch(x, n),
        }
    }
}

/// Writes the pages of `n` more rows of `x` ahead, leaving its rows as they are.
fn touch<T: Copy + Default>(x: &mut Vec<T>, n: usize) {
    let len = x.len();
    x.resize(len + n, T::default());
    x.truncate(len);
}

/// Samples as columns, in the order given (time order for a profile's samples).
#[derive(Debug, Clone, PartialEq)]
pub struct SampleColumns {
    /// Absolute ns.
    pub time: Vec<u64>,
    /// Stack id, [`NO_STACK`] without a stack.
    pub stack: Vec<u32>,
    pub thread: Narrow,
    pub cpu: Narrow,
    pub weight: Narrow,
}

impl SampleColumns {
    /// No rows yet, room for `cap`; threads, CPUs and weights up to the maxima given are
    /// stored without widening (larger ones widen their column).
    pub fn with_capacity(cap: usize, thread_max: u64, cpu_max: u64, weight_max: u64) -> Self {
        SampleColumns {
            time: Vec::with_capacity(cap),
            stack: Vec::with_capacity(cap),
            thread: Narrow::empty(thread_max, cap),
            cpu: Narrow::empty(cpu_max, cap),
            weight: Narrow::empty(weight_max, cap),
        }
    }

    /// Writes the pages of the next `n` rows ahead of time, as [`Narrow::reserve_touched`].
    pub fn reserve_touched(&mut self, n: usize) {
        touch(&mut self.time, n);
        touch(&mut self.stack, n);
        self.thread.reserve_touched(n);
        self.cpu.reserve_touched(n);
        self.weight.reserve_touched(n);
    }

    #[inline]
    pub fn push(&mut self, s: Sample) {
        let len = self.time.len();
        self.time.push(s.time_ns);
        self.stack.push(s.stack.unwrap_or(NO_STACK));
        self.thread.push(len, s.thread as u64);
        self.cpu.push(len, s.cpu as u64);
        self.weight.push(len, s.weight);
    }

    pub fn len(&self) -> usize {
        self.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    #[inline]
    pub fn thread(&self, i: usize) -> u32 {
        self.thread.get(i) as u32
    }

    #[inline]
    pub fn cpu(&self, i: usize) -> u32 {
        self.cpu.get(i) as u32
    }

    #[inline]
    pub fn weight(&self, i: usize) -> u64 {
        self.weight.get(i)
    }

    #[inline]
    pub fn stack(&self, i: usize) -> Option<StackIdx> {
        self.stack.get(i).copied().filter(|&s| s != NO_STACK)
    }

    /// Row `i` as a [`Sample`] (`None` past the end).
    pub fn get(&self, i: usize) -> Option<Sample> {
        let time_ns = *self.time.get(i)?;
        Some(Sample {
            time_ns,
            thread: self.thread(i),
            cpu: self.cpu(i),
            stack: self.stack(i),
            weight: self.weight(i),
        })
    }

    /// Every row as a [`Sample`], for code that needs the model's vector.
    pub fn to_vec(&self) -> Vec<Sample> {
        (0..self.len()).filter_map(|i| self.get(i)).collect()
    }

    /// Heap bytes of the rows held.
    pub fn bytes(&self) -> usize {
        self.time.len() * 8
            + self.stack.len() * 4
            + self.thread.bytes()
            + self.cpu.bytes()
            + self.weight.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u64, thread: u32, cpu: u32, weight: u64) -> Sample {
        Sample {
            time_ns: 1000 + i,
            thread,
            cpu,
            stack: (!i.is_multiple_of(3)).then_some(i as u32),
            weight,
        }
    }

    /// Rows pushed come back as pushed, whatever widening they caused on the way, and
    /// each column ends as narrow as its largest value.
    #[test]
    fn pushed_rows_round_trip_through_every_widening() {
        let weights = [0u64, 7, 300, 70_000, 5_000_000_000, 1, 255];
        let want: Vec<Sample> = weights
            .iter()
            .enumerate()
            .map(|(i, &w)| sample(i as u64, (i as u32) * 100, 3, w))
            .collect();
        let mut c = SampleColumns::with_capacity(2, 0, 0, 0);
        want.iter().for_each(|&s| c.push(s));
        assert_eq!(c.to_vec(), want);
        assert!(matches!(c.weight, Narrow::U64(_)));
        assert!(matches!(c.thread, Narrow::U16(_)));
        assert!(matches!(c.cpu, Narrow::U8(_)));
        assert_eq!(c.get(want.len()), None);
        assert_eq!(c.bytes(), 7 * (8 + 4 + 2 + 1 + 8));
    }

    #[test]
    fn a_constant_widens_into_a_vector_of_its_value() {
        let mut n = Narrow::Const(9);
        n.push(0, 9);
        n.push(1, 9);
        n.push(2, 70_000);
        assert_eq!(n, Narrow::U32(vec![9, 9, 70_000]));
    }

    #[test]
    fn widths_follow_the_largest_value() {
        assert!(matches!(Narrow::with(3, 255, None), Narrow::U8(_)));
        assert!(matches!(Narrow::with(3, 256, None), Narrow::U16(_)));
        assert!(matches!(Narrow::with(3, 1 << 32, None), Narrow::U64(_)));
        assert_eq!(Narrow::with(3, 5, Some(5)), Narrow::Const(5));
        let mut e = Narrow::empty(70_000, 4);
        e.reserve_touched(4);
        assert_eq!(e, Narrow::U32(Vec::new()));
    }
}
