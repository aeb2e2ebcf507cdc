//! Stable sort by time of records that are already almost in order.
//!
//! perf writes each CPU's ring buffer in turn, once per round, so a system-wide file is a
//! sequence of sorted runs (one per CPU per round) whose time ranges overlap only with
//! their neighbours of the same round. A general sort still merges everything log(runs)
//! times; here each run is merged into the sorted prefix only over the stretch it
//! overlaps, which is about one round: linear in practice. Input that is far from that
//! shape (many long overlaps) falls back to the standard stable sort.

/// Sorts `v` by `key`, stably (equal keys keep their order).
pub(crate) fn sort_by_time<T: Copy>(v: &mut [T], key: impl Fn(&T) -> u64) {
    // Merge work allowed before giving up on the input's shape, in elements moved.
    let budget = v.len().saturating_mul(4).max(1 << 16);
    if !merge_runs(v, &key, budget) {
        v.sort_by_key(|x| key(x));
    }
}

/// Merges each sorted run into the sorted prefix before it. Returns false (with `v` a
/// permutation of what it was) when the work would exceed `budget`.
fn merge_runs<T: Copy>(v: &mut [T], key: &impl Fn(&T) -> u64, budget: usize) -> bool {
    let mut scratch: Vec<T> = Vec::new();
    let mut spent = 0usize;
    let mut end = run_end(v, 0, key);
    while end < v.len() {
        let next = run_end(v, end, key);
        let first = key(&v[end]);
        // Elements of the prefix that sort after the run's first one (strictly after:
        // equal keys of the prefix stay first). The prefix is sorted, so search.
        let start = v[..end].partition_point(|x| key(x) <= first);
        spent += (end - start) + (next - end);
        if spent > budget {
            return false;
        }
        scratch.clear();
        scratch.extend_from_slice(&v[start..end]);
        merge_into(v, start, &scratch, end, next, key);
        end = next;
    }
    true
}

/// Where the sorted run starting at `from` ends.
fn run_end<T>(v: &[T], from: usize, key: &impl Fn(&T) -> u64) -> usize {
    let mut i = from + 1;
    while i < v.len() && key(&v[i - 1]) <= key(&v[i]) {
        i += 1;
    }
    i.min(v.len())
}

/// Merges `left` (a copy of `v[at..right_start]`) with `v[right_start..right_end]` into
/// `v[at..right_end]`, left first on ties. Writing never overtakes the right run's
/// reading position, so the right run can be merged in place.
fn merge_into<T: Copy>(
    v: &mut [T],
    at: usize,
    left: &[T],
    right_start: usize,
    right_end: usize,
    key: &impl Fn(&T) -> u64,
) {
    let (mut l, mut r, mut out) = (0, right_start, at);
    while l < left.len() && r < right_end {
        if key(&v[r]) < key(&left[l]) {
            v[out] = v[r];
            r += 1;
        } else {
            v[out] = left[l];
            l += 1;
        }
        out += 1;
    }
    // What is left of the right run is already in place.
    let rest = &left[l..];
    v[out..out + rest.len()].copy_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: Vec<(u64, u32)>) {
        let mut want = input.clone();
        want.sort_by_key(|x| x.0);
        let mut got = input.clone();
        sort_by_time(&mut got, |x| x.0);
        assert_eq!(got, want, "input {input:?}");
        // And the merge alone, whenever it finishes, gives the same.
        let mut merged = input;
        if merge_runs(&mut merged, &|x: &(u64, u32)| x.0, usize::MAX) {
            assert_eq!(merged, want);
        }
    }

    #[test]
    fn same_as_the_stable_sort() {
        let mut x: u64 = 11;
        let mut rnd = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        check(Vec::new());
        check(vec![(5, 0)]);
        for round in 0..200 {
            // Rounds of a few CPUs' runs, with equal times, as perf writes them.
            let mut v = Vec::new();
            let mut t = 0;
            for _ in 0..rnd(20) {
                let base = t;
                for cpu in 0..(1 + rnd(4)) {
                    let mut tt = base + rnd(5);
                    for _ in 0..rnd(30) {
                        tt += rnd(3);
                        v.push((tt, cpu as u32 * 1000 + v.len() as u32));
                        t = t.max(tt);
                    }
                }
            }
            if round % 10 == 0 {
                v.reverse();
            }
            check(v);
        }
    }

    #[test]
    fn gives_up_on_hostile_shapes() {
        // Descending: every element is its own run and overlaps everything before it.
        let mut v: Vec<(u64, u32)> = (0..100_000u32)
            .map(|i| (u64::from(100_000 - i), i))
            .collect();
        assert!(!merge_runs(&mut v.clone(), &|x: &(u64, u32)| x.0, 400_000));
        sort_by_time(&mut v, |x| x.0);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
