//! A thread's exact call/return sequence, rebuilt from the traced calls.
//!
//! Both the emulation (what the LBR would have seen) and the score (the truth to compare
//! with) read the trace through this one walk, so they can never disagree about what ran
//! when.

use kairos_model::{BranchKind, Call, FrameIdx, Profile, ThreadIdx};

use crate::error::{Error, Result};

/// One user call or return, as an LBR filtered to calls and returns records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub time_ns: u64,
    pub kind: BranchKind,
    /// The function executing when the branch was taken (None: outside traced code).
    pub from: Option<FrameIdx>,
    /// The function the branch went to.
    pub to: Option<FrameIdx>,
}

/// The events of one thread, in time order.
#[derive(Debug, Clone, Default)]
pub struct ThreadEvents {
    pub thread: ThreadIdx,
    pub events: Vec<Event>,
    /// Calls whose end was moved to their caller's end because they outlived it (a trace
    /// that lost an exit); counted so the result can say so.
    pub clamped_calls: u64,
}

impl ThreadEvents {
    /// First and last event time.
    pub fn span(&self) -> Option<(u64, u64)> {
        Some((self.events.first()?.time_ns, self.events.last()?.time_ns))
    }

    /// Self-time segments `(start, end, function executing)` between consecutive events:
    /// after event i the function running is its TO side until event i+1.
    pub fn segments(&self) -> impl Iterator<Item = (u64, u64, Option<FrameIdx>)> + '_ {
        self.events
            .windows(2)
            .filter(|w| w[1].time_ns > w[0].time_ns)
            .map(|w| (w[0].time_ns, w[1].time_ns, w[0].to))
    }
}

/// Checks every call's thread and frame index and its times.
pub fn validate(profile: &Profile) -> Result<()> {
    if profile.calls.is_empty() {
        return Err(Error::NoCalls);
    }
    for (index, c) in profile.calls.iter().enumerate() {
        if c.thread as usize >= profile.threads.len() {
            return Err(Error::BadCall {
                index,
                what: "thread",
                value: c.thread,
            });
        }
        if c.frame as usize >= profile.frames.len() {
            return Err(Error::BadCall {
                index,
                what: "frame",
                value: c.frame,
            });
        }
        if c.end_ns < c.start_ns {
            return Err(Error::CallEndsBeforeStart {
                index,
                start_ns: c.start_ns,
                end_ns: c.end_ns,
            });
        }
    }
    Ok(())
}

/// The call/return events of every thread that has calls, threads in index order.
///
/// A call into `f` at its start is FROM the caller (the innermost call still open, None
/// at the outermost level: the code that called it was not traced) TO `f`; its return at
/// its end is FROM `f` TO the caller. Calls are nested with a stack, not with their
/// `depth` field, so a trace whose depths are off still gives a consistent sequence.
pub fn thread_events(profile: &Profile) -> Result<Vec<ThreadEvents>> {
    validate(profile)?;
    let mut by_thread: Vec<Vec<&Call>> = vec![Vec::new(); profile.threads.len()];
    for c in &profile.calls {
        if let Some(v) = by_thread.get_mut(c.thread as usize) {
            v.push(c);
        }
    }
    let mut out = Vec::new();
    for (t, mut calls) in by_thread.into_iter().enumerate() {
        if calls.is_empty() {
            continue;
        }
        // Outer calls first when two start at the same instant: the longer one encloses.
        calls.sort_by_key(|c| (c.start_ns, std::cmp::Reverse(c.end_ns), c.depth));
        out.push(walk(t as ThreadIdx, &calls));
    }
    Ok(out)
}

fn walk(thread: ThreadIdx, calls: &[&Call]) -> ThreadEvents {
    let mut te = ThreadEvents {
        thread,
        events: Vec::with_capacity(calls.len() * 2),
        clamped_calls: 0,
    };
    // Open calls: (frame, end).
    let mut stack: Vec<(FrameIdx, u64)> = Vec::new();
    let pop_until = |stack: &mut Vec<(FrameIdx, u64)>, events: &mut Vec<Event>, t: Option<u64>| {
        while let Some(&(frame, end)) = stack.last() {
            if t.is_some_and(|t| end > t) {
                break;
            }
            stack.pop();
            let to = stack.last().map(|&(f, _)| f);
            events.push(Event {
                time_ns: end,
                kind: BranchKind::Return,
                from: Some(frame),
                to,
            });
        }
    };
    for c in calls {
        pop_until(&mut stack, &mut te.events, Some(c.start_ns));
        let mut end = c.end_ns;
        if let Some(&(_, parent_end)) = stack.last() {
            if end > parent_end {
                end = parent_end;
                te.clamped_calls += 1;
            }
        }
        let from = stack.last().map(|&(f, _)| f);
        te.events.push(Event {
            time_ns: c.start_ns,
            kind: BranchKind::Call,
            from,
            to: Some(c.frame),
        });
        stack.push((c.frame, end));
    }
    pop_until(&mut stack, &mut te.events, None);
    te
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::trace;

    #[test]
    fn nested_calls_give_calls_and_returns_in_order() {
        // main [0,100) calls a [10,20) and b [30,60), b calls a [40,50).
        let p = trace(
            &["main", "a", "b"],
            &[
                (0, 0, 100, 0),
                (1, 10, 20, 1),
                (2, 30, 60, 1),
                (1, 40, 50, 2),
            ],
        );
        let te = thread_events(&p).expect("valid");
        let seq: Vec<_> = te[0]
            .events
            .iter()
            .map(|e| (e.time_ns, e.kind, e.from, e.to))
            .collect();
        use BranchKind::{Call as C, Return as R};
        assert_eq!(
            seq,
            [
                (0, C, None, Some(0)),
                (10, C, Some(0), Some(1)),
                (20, R, Some(1), Some(0)),
                (30, C, Some(0), Some(2)),
                (40, C, Some(2), Some(1)),
                (50, R, Some(1), Some(2)),
                (60, R, Some(2), Some(0)),
                (100, R, Some(0), None),
            ]
        );
        let segs: Vec<_> = te[0].segments().collect();
        assert_eq!(segs[0], (0, 10, Some(0)));
        assert_eq!(segs[4], (40, 50, Some(1)));
        assert_eq!(segs.iter().map(|s| s.1 - s.0).sum::<u64>(), 100);
    }

    #[test]
    fn bad_calls_are_errors() {
        let mut p = trace(&["main"], &[(0, 0, 10, 0)]);
        p.calls[0].frame = 7;
        assert!(matches!(
            thread_events(&p),
            Err(Error::BadCall { what: "frame", .. })
        ));
        p.calls[0].frame = 0;
        p.calls[0].end_ns = 0;
        p.calls[0].start_ns = 5;
        assert!(matches!(
            thread_events(&p),
            Err(Error::CallEndsBeforeStart { .. })
        ));
        p.calls.clear();
        assert!(matches!(thread_events(&p), Err(Error::NoCalls)));
    }

    #[test]
    fn a_call_outliving_its_caller_is_clamped() {
        let p = trace(&["main", "a"], &[(0, 0, 10, 0), (1, 5, 20, 1)]);
        let te = thread_events(&p).expect("valid");
        assert_eq!(te[0].clamped_calls, 1);
        assert!(te[0]
            .events
            .windows(2)
            .all(|w| w[0].time_ns <= w[1].time_ns));
    }
}
