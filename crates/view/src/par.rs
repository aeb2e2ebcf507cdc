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
