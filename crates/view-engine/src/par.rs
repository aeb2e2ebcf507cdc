//! Scans over many samples split across the cores: each part folds its own contiguous
//! range and the parts are merged in order. Every merge in this crate adds integers or
//! ORs flags, so the answer is the same as one pass, whatever the split.

use std::ops::Range;

/// Fewer samples than this are scanned on the calling thread: a thread costs more.
const MIN_PART: usize = 1 << 20;

/// `body` over `range`, in up to as many parts as there are cores, merged by `merge`.
pub fn fold<T: Send>(
    range: Range<usize>,
    body: impl Fn(Range<usize>) -> T + Sync,
    merge: impl Fn(&mut T, T),
) -> T {
    let n = range.len();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let parts = (n / MIN_PART).clamp(1, cores.max(1));
    split(range, parts, body, merge)
}

/// `fold` with a given number of parts (tests split small ranges with it).
pub fn split<T: Send>(
    range: Range<usize>,
    parts: usize,
    body: impl Fn(Range<usize>) -> T + Sync,
    merge: impl Fn(&mut T, T),
) -> T {
    let n = range.len();
    let parts = parts.clamp(1, n.max(1));
    if parts == 1 {
        return body(range);
    }
    let size = n.div_ceil(parts);
    let pieces: Vec<Range<usize>> = (0..parts)
        .map(|k| {
            (range.start + k * size).min(range.end)..(range.start + (k + 1) * size).min(range.end)
        })
        .collect();
    let body = &body;
    let mut results: Vec<T> = std::thread::scope(|s| {
        let handles: Vec<_> = pieces[1..]
            .iter()
            .map(|r| s.spawn(move || body(r.clone())))
            .collect();
        let mut out = vec![body(pieces[0].clone())];
        // A part whose thread failed is done again here rather than lost.
        for (h, r) in handles.into_iter().zip(&pieces[1..]) {
            out.push(h.join().unwrap_or_else(|_| body(r.clone())));
        }
        out
    });
    let mut acc = results.remove(0);
    for r in results {
        merge(&mut acc, r);
    }
    acc
}

/// Adds `b` into `a` element by element.
pub fn add(a: &mut [u64], b: &[u64]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// `body` over the elements of `parts` (slices one after another), in up to as many
/// pieces as there are cores, merged by `merge`: a piece is a run of sub-slices.
pub fn fold_slices<'a, T: Send>(
    parts: &[&'a [u32]],
    body: impl Fn(&[&'a [u32]]) -> T + Sync,
    merge: impl Fn(&mut T, T),
) -> T {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let pieces = (total / MIN_PART).clamp(1, cores.max(1));
    let size = total.div_ceil(pieces).max(1);
    // Cut the concatenation every `size` elements.
    let mut runs: Vec<Vec<&'a [u32]>> = vec![Vec::new()];
    let mut room = size;
    for &p in parts {
        let mut rest = p;
        while !rest.is_empty() {
            if room == 0 {
                runs.push(Vec::new());
                room = size;
            }
            let (a, b) = rest.split_at(rest.len().min(room));
            if let Some(r) = runs.last_mut() {
                r.push(a);
            }
            room -= a.len();
            rest = b;
        }
    }
    // One run per core: each part of the split is one run.
    split(
        0..runs.len(),
        runs.len(),
        |r| match runs.get(r.start) {
            Some(run) => body(run),
            None => body(&[]),
        },
        merge,
    )
}

#[cfg(test)]
mod tests {
    /// Every element of the slices is visited once, whatever the cut.
    #[test]
    fn slices_are_cut_without_loss() {
        let big: Vec<u32> = (0..(super::MIN_PART as u32 * 5 / 2)).collect();
        let parts: Vec<&[u32]> = vec![
            &big[..7],
            &[],
            &big[7..super::MIN_PART + 3],
            &big[super::MIN_PART + 3..],
        ];
        let (n, sum) = super::fold_slices(
            &parts,
            |run| {
                run.iter()
                    .flat_map(|s| s.iter())
                    .fold((0u64, 0u64), |(n, s), &x| (n + 1, s + x as u64))
            },
            |a, b| {
                a.0 += b.0;
                a.1 += b.1;
            },
        );
        assert_eq!(
            (n, sum),
            (big.len() as u64, big.iter().map(|&x| x as u64).sum())
        );
        let none: Vec<&[u32]> = Vec::new();
        assert_eq!(
            super::fold_slices(&none, |run| run.len(), |a, b| *a += b),
            0
        );
    }
}
