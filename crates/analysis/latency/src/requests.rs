//! Boundaries paired into requests, per thread: a begin opens a request only when none is
//! open on its thread, and the end that closes the outermost one ends it, so nested and
//! recursive calls of the request function count once. What never pairs is kept and
//! said.

use rustc_hash::FxHashMap as HashMap;

/// One begin or end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Boundary {
    pub time_ns: u64,
    pub tid: u32,
    pub begin: bool,
    /// The request's id, when the source gives one.
    pub id: Option<u64>,
}

/// A paired request (end None: never ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub id: u64,
    pub tid: u32,
    pub start_ns: u64,
    pub end_ns: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paired {
    /// Sorted by start.
    pub spans: Vec<Span>,
    pub ends_without_begin: u64,
}

/// Pairs boundaries (in any order; sorted here by time).
pub fn pair(mut events: Vec<Boundary>) -> Paired {
    events.sort_by_key(|b| (b.time_ns, !b.begin));
    let mut open: HashMap<u32, (usize, u32)> = HashMap::default();
    let mut out = Paired::default();
    for b in events {
        match (b.begin, open.get_mut(&b.tid)) {
            (true, Some((_, depth))) => *depth += 1,
            (true, None) => {
                let n = out.spans.len();
                out.spans.push(Span {
                    id: b.id.unwrap_or(n as u64),
                    tid: b.tid,
                    start_ns: b.time_ns,
                    end_ns: None,
                });
                open.insert(b.tid, (n, 1));
            }
            (false, Some((i, depth))) => {
                *depth -= 1;
                if *depth == 0 {
                    let i = *i;
                    if let Some(s) = out.spans.get_mut(i) {
                        s.end_ns = Some(b.time_ns);
                    }
                    open.remove(&b.tid);
                }
            }
            (false, None) => out.ends_without_begin += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(t: u64, tid: u32, begin: bool) -> Boundary {
        Boundary {
            time_ns: t,
            tid,
            begin,
            id: None,
        }
    }

    #[test]
    fn nested_calls_count_once_and_threads_pair_apart() {
        let p = pair(vec![
            b(1, 1, true),
            b(2, 2, true),
            b(3, 1, true),
            b(4, 1, false),
            b(5, 2, false),
            b(6, 1, false),
            b(7, 3, false),
            b(8, 1, true),
        ]);
        assert_eq!(p.ends_without_begin, 1);
        assert_eq!(p.spans.len(), 3);
        assert_eq!(
            (p.spans[0].tid, p.spans[0].start_ns, p.spans[0].end_ns),
            (1, 1, Some(6))
        );
        assert_eq!((p.spans[1].tid, p.spans[1].end_ns), (2, Some(5)));
        assert_eq!(p.spans[2].end_ns, None);
    }

    #[test]
    fn ids_come_from_the_source_or_the_order() {
        let mut first = b(1, 1, true);
        first.id = Some(42);
        let p = pair(vec![first, b(2, 1, false), b(3, 1, true), b(4, 1, false)]);
        assert_eq!((p.spans[0].id, p.spans[1].id), (42, 1));
    }
}
