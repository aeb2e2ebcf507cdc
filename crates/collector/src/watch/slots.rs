//! Which watch each slot holds, and the plan that assigns watches (and their W companions)
//! to slots: the watcher arms the plan and the classifier reads it to tell writes from
//! reads, so what a slot holds lives here, one layer below both.

use super::{Watch, WatchError, WatchKind};

/// What one slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotUse {
    pub watch: Watch,
    /// Traps on writes only (a Write watch, or a companion).
    pub write_only: bool,
    /// A W slot doubling an RW slot on the same bytes, to tell its writes from its reads.
    pub companion: bool,
    /// An RW slot that has such a companion, or the companion itself.
    pub paired: bool,
}

/// Assigns watches to `slots` slots: one each, then a W companion for every ReadWrite
/// watch while slots remain and `classify` asks for it.
pub fn plan_slots(
    watches: &[Watch],
    slots: usize,
    classify: bool,
) -> Result<Vec<SlotUse>, WatchError> {
    if watches.len() > slots {
        return Err(WatchError::TooManyWatches {
            wanted: watches.len(),
            needed: watches.len(),
            slots,
        });
    }
    let mut plan: Vec<SlotUse> = watches
        .iter()
        .map(|&watch| SlotUse {
            watch,
            write_only: watch.kind() == WatchKind::Write,
            companion: false,
            paired: false,
        })
        .collect();
    if classify {
        for i in 0..watches.len() {
            if plan.len() < slots && !plan[i].write_only {
                plan[i].paired = true;
                plan.push(SlotUse {
                    watch: watches[i],
                    write_only: true,
                    companion: true,
                    paired: true,
                });
            }
        }
    }
    Ok(plan)
}
