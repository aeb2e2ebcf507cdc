//! Narrow columns read in pieces, each as narrow as its own values, joined at the end.

use crate::samples::Narrow;

/// A narrow column read in pieces, each as narrow as its own values allow, joined at the
/// end at the width the largest value of all needs.
#[derive(Default)]
pub(super) struct Pieces {
    /// Each piece and its rows.
    parts: Vec<(Narrow, usize)>,
    pub(super) max: u64,
    pub(super) min: Option<u64>,
}

impl Pieces {
    pub(super) fn push(&mut self, v: impl Iterator<Item = u64> + Clone, n: usize) {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for x in v.clone() {
            lo = lo.min(x);
            hi = hi.max(x);
        }
        if n == 0 {
            return;
        }
        self.max = self.max.max(hi);
        self.min = Some(self.min.map_or(lo, |m| m.min(lo)));
        let mut part = Narrow::with(n, hi, (lo == hi).then_some(hi));
        fill(&mut part, v);
        self.parts.push((part, n));
    }

    /// The pieces of every thread, in row order, as one column of `n` rows.
    pub(super) fn join(all: Vec<Pieces>, n: usize) -> Narrow {
        let max = all.iter().map(|p| p.max).max().unwrap_or(0);
        let min = all.iter().filter_map(|p| p.min).min();
        let mut col = Narrow::with(
            n,
            max,
            min.filter(|&m| m == max).or(min.is_none().then_some(0)),
        );
        let mut at = 0;
        for (part, k) in all.iter().flat_map(|p| &p.parts) {
            let k = *k;
            copy_into(&mut col, at, part, k);
            at += k;
        }
        col
    }
}

/// Sets the first values of `col` to `v`'s (which must fit its width).
fn fill(col: &mut Narrow, v: impl Iterator<Item = u64>) {
    // The casts cannot truncate: the width was chosen from the values' maximum.
    match col {
        Narrow::Const(_) => {}
        Narrow::U8(x) => x.iter_mut().zip(v).for_each(|(d, v)| *d = v as u8),
        Narrow::U16(x) => x.iter_mut().zip(v).for_each(|(d, v)| *d = v as u16),
        Narrow::U32(x) => x.iter_mut().zip(v).for_each(|(d, v)| *d = v as u32),
        Narrow::U64(x) => x.iter_mut().zip(v).for_each(|(d, v)| *d = v),
    }
}

/// Copies the `k` values of `part` to rows `at..at + k` of `col` (at least as wide):
/// a slice copy when the widths agree.
fn copy_into(col: &mut Narrow, at: usize, part: &Narrow, k: usize) {
    let end = at + k;
    let values = (0..k).map(|i| part.get(i));
    match (col, part) {
        (Narrow::Const(_), _) => {}
        (Narrow::U8(d), Narrow::U8(s)) if d.len() >= end && s.len() == k => {
            d[at..end].copy_from_slice(s)
        }
        (Narrow::U16(d), Narrow::U16(s)) if d.len() >= end && s.len() == k => {
            d[at..end].copy_from_slice(s)
        }
        (Narrow::U32(d), Narrow::U32(s)) if d.len() >= end && s.len() == k => {
            d[at..end].copy_from_slice(s)
        }
        (Narrow::U64(d), Narrow::U64(s)) if d.len() >= end && s.len() == k => {
            d[at..end].copy_from_slice(s)
        }
        (Narrow::U8(d), _) => d
            .iter_mut()
            .skip(at)
            .zip(values)
            .for_each(|(d, v)| *d = v as u8),
        (Narrow::U16(d), _) => d
            .iter_mut()
            .skip(at)
            .zip(values)
            .for_each(|(d, v)| *d = v as u16),
        (Narrow::U32(d), _) => d
            .iter_mut()
            .skip(at)
            .zip(values)
            .for_each(|(d, v)| *d = v as u32),
        (Narrow::U64(d), _) => d.iter_mut().skip(at).zip(values).for_each(|(d, v)| *d = v),
    }
}
