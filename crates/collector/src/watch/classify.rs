//! Telling writes from reads: an RW slot traps on both; its W companion on the same bytes
//! traps on writes only, in the same debug exception, so the kernel writes the two samples
//! back to back into the ring of the CPU that trapped.

use super::records::RawHit;
use super::slots::SlotUse;
use super::{Access, Hit};

/// Turns the samples of one ring, in ring order, into hits. An RW sample with a
/// companion is a write when the companion's sample of the same trap (same thread, IP and
/// address) sits next to it, else a read. With `hold_last`, a last sample whose partner may
/// still be on its way is returned for the next batch.
pub(super) fn classify(
    batch: &[(RawHit, SlotUse)],
    hold_last: bool,
) -> (Vec<Hit>, Option<(RawHit, SlotUse)>) {
    let mut out = Vec::with_capacity(batch.len());
    let mut used = vec![false; batch.len()];
    let paired = |i: usize, j: usize| {
        let (a, ua) = &batch[i];
        let (b, ub) = &batch[j];
        ua.companion != ub.companion
            && ua.watch == ub.watch
            && a.hit.tid == b.hit.tid
            && a.hit.ip == b.hit.ip
            && a.hit.addr == b.hit.addr
    };
    let mut held = None;
    for i in 0..batch.len() {
        if used[i] {
            continue;
        }
        let (h, u) = batch[i];
        let access = if !u.paired {
            if u.write_only {
                Access::Write
            } else {
                Access::ReadOrWrite
            }
        } else {
            let partner = [i.wrapping_sub(1), i + 1]
                .into_iter()
                .find(|&j| j < batch.len() && !used[j] && paired(i, j));
            match partner {
                Some(j) => {
                    used[j] = true;
                    Access::Write
                }
                None if hold_last && i + 1 == batch.len() => {
                    held = Some(batch[i]);
                    continue;
                }
                // A lone companion sample is still a write (its RW half was lost).
                None if u.companion => Access::Write,
                None => Access::Read,
            }
        };
        used[i] = true;
        out.push(Hit {
            addr: u.watch.addr(),
            len: u.watch.len(),
            access,
            ..h.hit
        });
    }
    (out, held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::{Watch, WatchKind};

    fn use_of(addr: u64, write_only: bool, companion: bool, paired: bool) -> SlotUse {
        let kind = if write_only && !companion {
            WatchKind::Write
        } else {
            WatchKind::ReadWrite
        };
        let watch = Watch::new(addr, 8, kind).unwrap_or_else(|e| unreachable!("{e}"));
        SlotUse {
            watch,
            write_only,
            companion,
            paired,
        }
    }

    fn raw(slot: usize, tid: i32, ip: u64, addr: u64) -> RawHit {
        RawHit::new(slot, 1, 1, tid, 0, ip, addr)
    }

    #[test]
    fn pairs_make_writes_and_lone_rw_samples_reads() {
        let rw = use_of(0x1000, false, false, true);
        let comp = use_of(0x1000, true, true, true);
        let batch = [
            (raw(0, 5, 0x10, 0x1000), rw),
            (raw(2, 5, 0x10, 0x1000), comp), // same trap: a write
            (raw(0, 6, 0x20, 0x1000), rw),   // alone: a read
            (raw(2, 7, 0x30, 0x1000), comp), // companion first, then RW
            (raw(0, 7, 0x30, 0x1000), rw),
        ];
        let (hits, held) = classify(&batch, false);
        let got: Vec<(i32, Access)> = hits.iter().map(|h| (h.tid, h.access)).collect();
        assert_eq!(
            got,
            vec![(5, Access::Write), (6, Access::Read), (7, Access::Write)]
        );
        assert!(held.is_none());
    }

    #[test]
    fn last_unpaired_sample_waits_for_the_next_batch() {
        let rw = use_of(0x1000, false, false, true);
        let comp = use_of(0x1000, true, true, true);
        let (hits, held) = classify(&[(raw(0, 5, 0x10, 0x1000), rw)], true);
        assert!(hits.is_empty());
        let held = held.unwrap_or_else(|| unreachable!());
        let (hits, held) = classify(&[held, (raw(2, 5, 0x10, 0x1000), comp)], true);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].access, Access::Write);
        assert!(held.is_none());
        // Flushing: a lone companion is a write, a lone RW a read.
        let (hits, _) = classify(&[(raw(0, 5, 0x10, 0x1000), rw)], false);
        assert_eq!(hits[0].access, Access::Read);
    }

    #[test]
    fn unpaired_slots_say_what_they_can() {
        let w = use_of(0x1000, true, false, false);
        let rw = use_of(0x1008, false, false, false);
        let (hits, _) = classify(
            &[(raw(0, 5, 0x10, 0x1000), w), (raw(1, 5, 0x10, 0x1008), rw)],
            true,
        );
        assert_eq!(
            hits.iter().map(|h| h.access).collect::<Vec<_>>(),
            vec![Access::Write, Access::ReadOrWrite]
        );
        assert_eq!((hits[1].addr, hits[1].len), (0x1008, 8));
    }
}
