//! Decoding the records of the breakpoint events' ring buffers.

use perf_event_open_sys::bindings as b;

use super::{Access, Hit};

/// One sample as the kernel wrote it; `slot` comes from the event id. Until classified,
/// `hit.addr` is the breakpoint address the kernel recorded, `len` 0 and `access` unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RawHit {
    pub slot: usize,
    pub hit: Hit,
}

impl RawHit {
    pub fn new(
        slot: usize,
        time_ns: u64,
        pid: i32,
        tid: i32,
        cpu: u32,
        ip: u64,
        addr: u64,
    ) -> RawHit {
        RawHit {
            slot,
            hit: Hit {
                time_ns,
                pid,
                tid,
                cpu,
                ip,
                addr,
                len: 0,
                access: Access::ReadOrWrite,
            },
        }
    }
}

/// What one drain of one ring gave.
#[derive(Debug, Default)]
pub(super) struct Drained {
    pub hits: Vec<RawHit>,
    pub lost: u64,
    pub throttled: u64,
    /// The ring was found full: the kernel may have dropped hits it reports only once
    /// it can write again, which it may never do.
    pub full: bool,
}

fn u64_at(rec: &[u8], off: usize) -> Option<u64> {
    rec.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
}

fn u32_at(rec: &[u8], off: usize) -> Option<u32> {
    rec.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
}

/// Decodes one record (header included) into `d`; unknown or short records are skipped.
pub(super) fn parse(rec: &[u8], ids: &[(u64, usize)], d: &mut Drained) {
    let Some(kind) = u32_at(rec, 0) else { return };
    match kind {
        b::PERF_RECORD_SAMPLE => {
            let fields = (
                u64_at(rec, 8),
                u64_at(rec, 16),
                u32_at(rec, 24),
                u32_at(rec, 28),
                u64_at(rec, 32),
                u64_at(rec, 40),
                u32_at(rec, 48),
            );
            let (Some(id), Some(ip), Some(pid), Some(tid), Some(time_ns), Some(addr), Some(cpu)) =
                fields
            else {
                return;
            };
            let Some(&(_, slot)) = ids.iter().find(|(i, _)| *i == id) else {
                return;
            };
            d.hits.push(RawHit::new(
                slot, time_ns, pid as i32, tid as i32, cpu, ip, addr,
            ));
        }
        b::PERF_RECORD_LOST => d.lost += u64_at(rec, 16).unwrap_or(0),
        b::PERF_RECORD_THROTTLE => d.throttled += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(id: u64, tid: u32, ip: u64, addr: u64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&b::PERF_RECORD_SAMPLE.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&56u16.to_le_bytes());
        for v in [id, ip] {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r.extend_from_slice(&7u32.to_le_bytes());
        r.extend_from_slice(&tid.to_le_bytes());
        for v in [1234u64, addr] {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r.extend_from_slice(&1u32.to_le_bytes());
        r.extend_from_slice(&0u32.to_le_bytes());
        r
    }

    #[test]
    fn parses_samples_and_losses() {
        let ids = [(50, 0), (51, 3)];
        let mut d = Drained::default();
        parse(&sample(51, 9, 0x401000, 0x404040), &ids, &mut d);
        parse(&sample(99, 9, 0x401000, 0x404040), &ids, &mut d); // not ours
        parse(&sample(51, 9, 0x401000, 0x404040)[..40], &ids, &mut d); // short
        let mut lost = Vec::new();
        lost.extend_from_slice(&b::PERF_RECORD_LOST.to_le_bytes());
        lost.extend_from_slice(&[0, 0, 24, 0]);
        lost.extend_from_slice(&50u64.to_le_bytes());
        lost.extend_from_slice(&17u64.to_le_bytes());
        parse(&lost, &ids, &mut d);
        assert_eq!(
            d.hits,
            vec![RawHit::new(3, 1234, 7, 9, 1, 0x401000, 0x404040)]
        );
        assert_eq!(d.lost, 17);
    }
}
