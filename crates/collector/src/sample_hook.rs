//! A copy of each sample of the sampling event, handed over as the rings are drained, for
//! callers that act while the collection runs (memory-access picks the cache lines to
//! watch from the sampled addresses). Samples go through a bounded channel and are
//! dropped when it is full: the recording never waits for its observer.

use std::sync::mpsc::SyncSender;

use perf_event_open_sys::bindings as b;

use crate::u64_at;

/// What the observer sees of one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleView {
    pub pid: i32,
    pub tid: i32,
    /// CLOCK_MONOTONIC, ns.
    pub time_ns: u64,
    pub cpu: u32,
    pub ip: u64,
    /// `PERF_SAMPLE_REGS_ABI_*` of the user registers: 0 none, 1 32-bit, 2 64-bit.
    pub regs_abi: u64,
    /// The register mask the event was opened with (`CollectOptions::user_regs` and more).
    pub regs_mask: u64,
    /// User register values in ascending bit order of `regs_mask` (empty when abi is 0).
    pub regs: Vec<u64>,
}

/// The sending end given in [`crate::CollectOptions::on_sample`].
pub type SampleSender = SyncSender<SampleView>;

/// Forwards the sampling event's samples to a [`SampleSender`].
pub(crate) struct Hook {
    tx: SampleSender,
    sample_type: u64,
    regs_mask: u64,
    /// Ids of the sampling event's fds: PMU and extra events share the rings.
    ids: Vec<u64>,
}

impl Hook {
    pub(crate) fn new(tx: SampleSender, attr: &b::perf_event_attr, ids: &[u64]) -> Hook {
        Hook {
            tx,
            sample_type: attr.sample_type,
            regs_mask: attr.sample_regs_user,
            ids: ids.to_vec(),
        }
    }

    /// Called with every PERF_RECORD_SAMPLE (header included).
    pub(crate) fn offer(&self, rec: &[u8]) {
        if let Some(v) = self.view(rec) {
            // Full or closed: the observer is behind or gone, and the recording goes on.
            let _ = self.tx.try_send(v);
        }
    }

    /// Reads the fields in the kernel's order (perf_output_sample); None for a sample of
    /// another event or a layout this view does not walk (READ, BRANCH_STACK).
    fn view(&self, rec: &[u8]) -> Option<SampleView> {
        let t = self.sample_type;
        let has = |bit: u32| t & u64::from(bit) != 0;
        if !has(b::PERF_SAMPLE_IDENTIFIER)
            || has(b::PERF_SAMPLE_READ)
            || has(b::PERF_SAMPLE_BRANCH_STACK)
        {
            return None;
        }
        let mut o = 8;
        let mut next = |n: usize| {
            let at = o;
            o += n;
            (o <= rec.len()).then_some(at)
        };
        if !self.ids.contains(&u64_at(rec, next(8)?)) {
            return None;
        }
        let mut v = SampleView {
            pid: 0,
            tid: 0,
            time_ns: 0,
            cpu: 0,
            ip: 0,
            regs_abi: 0,
            regs_mask: self.regs_mask,
            regs: Vec::new(),
        };
        if has(b::PERF_SAMPLE_IP) {
            v.ip = u64_at(rec, next(8)?);
        }
        if has(b::PERF_SAMPLE_TID) {
            let w = u64_at(rec, next(8)?);
            (v.pid, v.tid) = (w as u32 as i32, (w >> 32) as u32 as i32);
        }
        if has(b::PERF_SAMPLE_TIME) {
            v.time_ns = u64_at(rec, next(8)?);
        }
        for bit in [
            b::PERF_SAMPLE_ADDR,
            b::PERF_SAMPLE_ID,
            b::PERF_SAMPLE_STREAM_ID,
        ] {
            if has(bit) {
                next(8)?;
            }
        }
        if has(b::PERF_SAMPLE_CPU) {
            v.cpu = u64_at(rec, next(8)?) as u32;
        }
        if has(b::PERF_SAMPLE_PERIOD) {
            next(8)?;
        }
        if has(b::PERF_SAMPLE_CALLCHAIN) {
            let nr = usize::try_from(u64_at(rec, next(8)?)).ok()?;
            next(nr.checked_mul(8)?)?;
        }
        if has(b::PERF_SAMPLE_RAW) {
            let at = next(4)?;
            let size = u32::from_le_bytes(rec.get(at..at + 4)?.try_into().ok()?) as usize;
            next(size)?;
        }
        if has(b::PERF_SAMPLE_REGS_USER) {
            v.regs_abi = u64_at(rec, next(8)?);
            if v.regs_abi != 0 {
                let n = self.regs_mask.count_ones() as usize;
                let at = next(n * 8)?;
                v.regs = (0..n).map(|i| u64_at(rec, at + 8 * i)).collect();
            }
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_the_timer_layout() {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let mut attr = b::perf_event_attr::default();
        attr.sample_type = (b::PERF_SAMPLE_IDENTIFIER
            | b::PERF_SAMPLE_IP
            | b::PERF_SAMPLE_TID
            | b::PERF_SAMPLE_TIME
            | b::PERF_SAMPLE_CPU
            | b::PERF_SAMPLE_PERIOD
            | b::PERF_SAMPLE_CALLCHAIN
            | b::PERF_SAMPLE_REGS_USER) as u64;
        attr.sample_regs_user = 0b101;
        let hook = Hook::new(tx, &attr, &[7]);
        let words: [u64; 13] = [
            0,
            7,
            0x401000,
            (11u64 << 32) | 10,
            1234,
            3,
            250_000,
            2,
            1,
            2,
            2,
            0xaa,
            0xbb,
        ];
        let mut rec: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        rec[..4].copy_from_slice(&9u32.to_le_bytes());
        hook.offer(&rec);
        let v = rx.try_recv().unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            (v.pid, v.tid, v.time_ns, v.cpu, v.ip),
            (10, 11, 1234, 3, 0x401000)
        );
        assert_eq!((v.regs_abi, v.regs), (2, vec![0xaa, 0xbb]));
        // Another event's sample, or a truncated one, is not forwarded.
        let mut other = rec.clone();
        other[8..16].copy_from_slice(&8u64.to_le_bytes());
        hook.offer(&other);
        hook.offer(&rec[..rec.len() - 8]);
        assert!(rx.try_recv().is_err());
    }
}
