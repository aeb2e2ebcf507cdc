//! Pairing one thread's entry and exit events into calls.
//!
//! A per-thread shadow stack: an entry pushes, an exit pops down to the matching entry.
//! Frames skipped over (left by longjmp, an exception, or an exit the recorder missed)
//! are closed at that exit and counted; an exit with no matching entry (the trace started
//! inside that function) is counted and dropped; calls still open at the end are closed
//! at the thread's last time stamp and counted.

/// Entry or exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Entry,
    Exit,
}

/// One event; `function` is the caller's index into its function table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub time_ns: u64,
    pub function: u32,
    pub kind: EventKind,
}

/// One completed call of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawCall {
    pub function: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub depth: u16,
}

/// The calls of one thread and what did not pair cleanly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paired {
    /// Sorted by start time, outer calls before inner ones starting at the same time.
    pub calls: Vec<RawCall>,
    /// Exits whose function was not on the stack.
    pub unmatched_exits: u64,
    /// Calls closed by the exit of a caller (their own exit was never seen).
    pub unwound: u64,
    /// Functions of calls still open at the end, closed at the last time stamp.
    pub open_at_end: Vec<u32>,
}

/// Pairs `events`, which must be in the order they happened (sorted by time; equal times
/// keep their order).
pub fn pair_thread(events: &[Event]) -> Paired {
    let mut out = Paired::default();
    let mut stack: Vec<(u32, u64)> = Vec::new();
    let mut last = 0u64;
    let depth = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    for e in events {
        last = last.max(e.time_ns);
        match e.kind {
            EventKind::Entry => stack.push((e.function, e.time_ns)),
            EventKind::Exit => {
                let Some(pos) = stack.iter().rposition(|&(f, _)| f == e.function) else {
                    out.unmatched_exits += 1;
                    continue;
                };
                while stack.len() > pos {
                    let Some((f, start)) = stack.pop() else { break };
                    if stack.len() > pos {
                        out.unwound += 1;
                    }
                    out.calls.push(RawCall {
                        function: f,
                        start_ns: start,
                        end_ns: e.time_ns.max(start),
                        depth: depth(stack.len()),
                    });
                }
            }
        }
    }
    while let Some((f, start)) = stack.pop() {
        out.open_at_end.push(f);
        out.calls.push(RawCall {
            function: f,
            start_ns: start,
            end_ns: last.max(start),
            depth: depth(stack.len()),
        });
    }
    out.calls.sort_by_key(|c| (c.start_ns, c.depth));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: u64, f: u32, entry: bool) -> Event {
        Event {
            time_ns: t,
            function: f,
            kind: if entry {
                EventKind::Entry
            } else {
                EventKind::Exit
            },
        }
    }

    #[test]
    fn nests_and_counts_oddities() {
        // main(0) { a(1) { b(2) } a(1) { [b never exits] } } ; stray exit of 9; c(3) open.
        let evs = [
            ev(1, 9, false),
            ev(2, 0, true),
            ev(3, 1, true),
            ev(4, 2, true),
            ev(5, 2, false),
            ev(6, 1, false),
            ev(7, 1, true),
            ev(8, 2, true),
            ev(9, 1, false),
            ev(10, 3, true),
            ev(12, 0, false),
            ev(13, 4, true),
        ];
        let p = pair_thread(&evs);
        let got: Vec<_> = p
            .calls
            .iter()
            .map(|c| (c.function, c.start_ns, c.end_ns, c.depth))
            .collect();
        assert_eq!(
            got,
            [
                (0, 2, 12, 0),
                (1, 3, 6, 1),
                (2, 4, 5, 2),
                (1, 7, 9, 1),
                (2, 8, 9, 2),
                (3, 10, 12, 1),
                (4, 13, 13, 0)
            ]
        );
        assert_eq!(
            (p.unmatched_exits, p.unwound, p.open_at_end.clone()),
            (1, 2, vec![4])
        );
    }

    #[test]
    fn empty_is_empty() {
        assert_eq!(pair_thread(&[]), Paired::default());
    }
}
