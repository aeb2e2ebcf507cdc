//! Where methods put their points: the method runs on the calling thread while the
//! merge into time order and the sink (writing the derived samples) run on a second
//! one, fed in batches. At scale both halves are about as long, so the two overlap
//! instead of adding up. Should no thread start, the merge runs inline.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use crate::out::{Merge, Sink};
use crate::prepare::Prepared;
use crate::Point;

/// Points per batch handed to the merging thread: large enough that the hand-over
/// costs nothing per point, small enough to stay in cache.
const BATCH: usize = 4096;
/// Batches in flight (the method waits when the merge is this far behind).
const IN_FLIGHT: usize = 4;

/// What a method emits its points into, interval after interval, each interval's in
/// time order (see [`crate::out`]).
pub(crate) struct Out<'a> {
    to: To<'a>,
}

enum To<'a> {
    Inline(Box<Merge<'a>>),
    Piped {
        batch: Vec<Point>,
        full: SyncSender<Vec<Point>>,
        /// Emptied batches coming back, reused.
        empty: Receiver<Vec<Point>>,
        /// True once the merging thread is gone: later points are dropped and the run
        /// fails.
        broken: bool,
    },
}

impl Out<'_> {
    #[inline]
    pub fn push(&mut self, pt: Point) {
        match &mut self.to {
            To::Inline(m) => m.push(pt),
            To::Piped { batch, .. } => {
                batch.push(pt);
                if batch.len() >= BATCH {
                    self.send();
                }
            }
        }
    }

    #[inline(never)]
    fn send(&mut self) {
        if let To::Piped {
            batch,
            full,
            empty,
            broken,
        } = &mut self.to
        {
            let next = empty
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            let b = std::mem::replace(batch, next);
            if !b.is_empty() && full.send(b).is_err() {
                *broken = true;
            }
        }
    }
}

/// How the points reached the sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Merged {
    /// All of them, in order; this many are records.
    Records(u64),
    /// Some thread's points came out of time order.
    OutOfOrder,
    /// The merging thread ended before the points did (it panicked).
    Lost,
}

/// Runs `method` with an [`Out`] whose points reach `sink` in time order, or gives the
/// method's error.
pub(crate) fn run<E>(
    p: &Prepared,
    sink: &mut dyn Sink,
    method: impl FnOnce(&mut Out) -> Result<(), E>,
) -> Result<Merged, E> {
    let outcome = |(records, out_of_order): (u64, bool)| {
        if out_of_order {
            Merged::OutOfOrder
        } else {
            Merged::Records(records)
        }
    };
    let merge = Merge::new(p, sink);
    std::thread::scope(|sc| {
        let (full, batches) = sync_channel::<Vec<Point>>(IN_FLIGHT);
        let (give_back, empty) = sync_channel::<Vec<Point>>(IN_FLIGHT + 2);
        // The merge is sent to the thread once it runs, so that it stays here otherwise.
        let (hand, merge_in) = sync_channel::<Merge>(1);
        let merging = std::thread::Builder::new()
            .name("kairos-merge".into())
            .spawn_scoped(sc, move || {
                let mut m = merge_in.recv().ok()?;
                for mut b in batches {
                    b.drain(..).for_each(|pt| m.push(pt));
                    let _ = give_back.try_send(b);
                }
                Some(m.finish())
            });
        let Ok(merging) = merging else {
            let mut out = Out {
                to: To::Inline(Box::new(merge)),
            };
            method(&mut out)?;
            return Ok(match out.to {
                To::Inline(m) => outcome(m.finish()),
                To::Piped { .. } => Merged::Lost,
            });
        };
        let sent = hand.send(merge).is_ok();
        let mut out = Out {
            to: To::Piped {
                batch: Vec::with_capacity(BATCH),
                full,
                empty,
                broken: !sent,
            },
        };
        let ran = method(&mut out);
        out.send();
        let broken = matches!(out.to, To::Piped { broken: true, .. });
        // Closing the channel ends the merge's loop.
        drop(out);
        let merged = merging.join().ok().flatten();
        ran?;
        Ok(match merged {
            Some(m) if !broken => outcome(m),
            _ => Merged::Lost,
        })
    })
}
