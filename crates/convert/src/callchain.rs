//! Splitting a kernel call chain into addresses with the mode they ran in.
//!
//! The kernel interleaves context markers (PERF_CONTEXT_*) with addresses; everything after
//! a marker belongs to that context until the next one.

use kairos_model::Mode;

const PERF_CONTEXT_HV: u64 = (-32i64) as u64;
const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
const PERF_CONTEXT_USER: u64 = (-512i64) as u64;
const PERF_CONTEXT_GUEST: u64 = (-2048i64) as u64;
const PERF_CONTEXT_GUEST_KERNEL: u64 = (-2176i64) as u64;
const PERF_CONTEXT_GUEST_USER: u64 = (-2560i64) as u64;
const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// One address of a stack, leaf first. `is_return_address` is true for every frame but
/// the sampled one: those point after a call, so symbolisation looks up `address - 1`
/// to land inside the calling line, as perf does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainEntry {
    pub address: u64,
    pub mode: Mode,
    pub is_return_address: bool,
}

/// Turns a raw call chain (leaf first) into entries. When the chain is empty the sampled
/// IP alone is used, with `ip_mode` taken from the record's misc bits.
#[cfg(test)]
pub fn split(callchain: &[u64], ip: u64, ip_mode: Mode) -> Vec<ChainEntry> {
    let mut out = Vec::new();
    split_into(&mut out, callchain.iter().copied(), ip, ip_mode);
    out
}

/// [`split`] into a buffer the caller reuses (cleared first).
pub fn split_into(
    out: &mut Vec<ChainEntry>,
    callchain: impl Iterator<Item = u64>,
    ip: u64,
    ip_mode: Mode,
) {
    out.clear();
    let mut mode = ip_mode;
    for addr in callchain {
        if addr >= PERF_CONTEXT_MAX {
            mode = match addr {
                PERF_CONTEXT_HV => Mode::Hypervisor,
                PERF_CONTEXT_KERNEL | PERF_CONTEXT_GUEST_KERNEL => Mode::Kernel,
                PERF_CONTEXT_USER | PERF_CONTEXT_GUEST_USER => Mode::User,
                PERF_CONTEXT_GUEST => Mode::Unknown,
                _ => Mode::Unknown,
            };
            continue;
        }
        if addr == 0 {
            // A zero return address ends a frame-pointer walk; it names no code.
            continue;
        }
        let is_return_address = !out.is_empty();
        out.push(ChainEntry {
            address: addr,
            mode,
            is_return_address,
        });
    }
    if out.is_empty() && ip != 0 {
        out.push(ChainEntry {
            address: ip,
            mode: ip_mode,
            is_return_address: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_set_the_mode_of_what_follows() {
        let chain = [
            PERF_CONTEXT_KERNEL,
            0xffff_0001,
            0xffff_0002,
            PERF_CONTEXT_USER,
            0x401000,
            0x402000,
            0,
        ];
        let e = split(&chain, 0xffff_0001, Mode::Kernel);
        assert_eq!(e.len(), 4);
        assert_eq!(
            e[0],
            ChainEntry {
                address: 0xffff_0001,
                mode: Mode::Kernel,
                is_return_address: false
            }
        );
        assert_eq!(e[2].mode, Mode::User);
        assert!(e[3].is_return_address);
    }

    #[test]
    fn empty_chain_falls_back_to_ip() {
        assert_eq!(split(&[], 0x1234, Mode::User).len(), 1);
        assert!(split(&[], 0, Mode::User).is_empty());
    }
}
