//! `PERF_SAMPLE_DATA_SRC`: the kernel's `union perf_mem_data_src` (include/uapi/linux/perf_event.h)
//! split into its bit fields. Every u64 decodes; bits the kernel does not define yet are
//! kept in `reserved` so nothing is silently lost.

use serde::Serialize;

/// `mem_op` bits.
pub mod op {
    pub const NA: u8 = 0x01;
    pub const LOAD: u8 = 0x02;
    pub const STORE: u8 = 0x04;
    pub const PFETCH: u8 = 0x08;
    pub const EXEC: u8 = 0x10;
}

/// `mem_lvl` bits (the older, one-bit-per-level namespace).
pub mod lvl {
    pub const NA: u16 = 0x01;
    pub const HIT: u16 = 0x02;
    pub const MISS: u16 = 0x04;
    pub const L1: u16 = 0x08;
    pub const LFB: u16 = 0x10;
    pub const L2: u16 = 0x20;
    pub const L3: u16 = 0x40;
    pub const LOC_RAM: u16 = 0x80;
    pub const REM_RAM1: u16 = 0x100;
    pub const REM_RAM2: u16 = 0x200;
    pub const REM_CCE1: u16 = 0x400;
    pub const REM_CCE2: u16 = 0x800;
    pub const IO: u16 = 0x1000;
    pub const UNC: u16 = 0x2000;
}

/// `mem_lvl_num` values (the newer namespace, combined with `mem_remote` and `mem_hops`).
pub mod lvl_num {
    pub const L1: u8 = 0x01;
    pub const L2: u8 = 0x02;
    pub const L3: u8 = 0x03;
    pub const L4: u8 = 0x04;
    /// 0x05-0x07 are given names only by kernels newer than 6.1 (L2 miss handling
    /// buffer, memory-side cache, L0); 0x08 uncached.
    pub const UNC: u8 = 0x08;
    pub const CXL: u8 = 0x09;
    pub const IO: u8 = 0x0a;
    pub const ANY_CACHE: u8 = 0x0b;
    pub const LFB: u8 = 0x0c;
    pub const RAM: u8 = 0x0d;
    pub const PMEM: u8 = 0x0e;
    pub const NA: u8 = 0x0f;
}

/// `mem_snoop` bits.
pub mod snoop {
    pub const NA: u8 = 0x01;
    pub const NONE: u8 = 0x02;
    pub const HIT: u8 = 0x04;
    pub const MISS: u8 = 0x08;
    pub const HITM: u8 = 0x10;
}

/// `mem_snoopx` bits.
pub mod snoopx {
    pub const FWD: u8 = 0x01;
    pub const PEER: u8 = 0x02;
}

/// `mem_lock` bits.
pub mod lock {
    pub const NA: u8 = 0x01;
    pub const LOCKED: u8 = 0x02;
}

/// `mem_dtlb` bits.
pub mod tlb {
    pub const NA: u8 = 0x01;
    pub const HIT: u8 = 0x02;
    pub const MISS: u8 = 0x04;
    pub const L1: u8 = 0x08;
    pub const L2: u8 = 0x10;
    pub const WK: u8 = 0x20;
    pub const OS: u8 = 0x40;
}

/// `mem_blk` bits.
pub mod blk {
    pub const NA: u8 = 0x01;
    pub const DATA: u8 = 0x02;
    pub const ADDR: u8 = 0x04;
}

/// `mem_hops` values: how far the remote source is.
pub mod hops {
    /// Another core of the same node.
    pub const HOPS_0: u8 = 0x01;
    /// Another node of the same socket.
    pub const HOPS_1: u8 = 0x02;
    /// Another socket of the same board.
    pub const HOPS_2: u8 = 0x03;
    /// Another board.
    pub const HOPS_3: u8 = 0x04;
}

/// Bit positions (x86 and every little-endian host: the first field is the lowest).
const OP: (u32, u32) = (0, 5);
const LVL: (u32, u32) = (5, 14);
const SNOOP: (u32, u32) = (19, 5);
const LOCK: (u32, u32) = (24, 2);
const DTLB: (u32, u32) = (26, 7);
const LVL_NUM: (u32, u32) = (33, 4);
const REMOTE: (u32, u32) = (37, 1);
const SNOOPX: (u32, u32) = (38, 2);
const BLK: (u32, u32) = (40, 3);
const HOPS: (u32, u32) = (43, 3);
const RSVD: (u32, u32) = (46, 18);

fn bits(v: u64, (shift, width): (u32, u32)) -> u64 {
    (v >> shift) & ((1u64 << width) - 1)
}

fn put(value: u64, (shift, width): (u32, u32)) -> u64 {
    (value & ((1u64 << width) - 1)) << shift
}

/// The fields of one `data_src` word, each as the kernel stores it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub struct DataSrc {
    pub op: u8,
    pub lvl: u16,
    pub snoop: u8,
    pub lock: u8,
    pub dtlb: u8,
    pub lvl_num: u8,
    pub remote: bool,
    pub snoopx: u8,
    pub blk: u8,
    pub hops: u8,
    /// The 18 bits above `mem_hops`, 0 on every kernel so far.
    pub reserved: u32,
}

impl DataSrc {
    /// Splits a raw `PERF_SAMPLE_DATA_SRC` value. Total: every u64 is accepted.
    pub fn from_raw(v: u64) -> DataSrc {
        DataSrc {
            op: bits(v, OP) as u8,
            lvl: bits(v, LVL) as u16,
            snoop: bits(v, SNOOP) as u8,
            lock: bits(v, LOCK) as u8,
            dtlb: bits(v, DTLB) as u8,
            lvl_num: bits(v, LVL_NUM) as u8,
            remote: bits(v, REMOTE) != 0,
            snoopx: bits(v, SNOOPX) as u8,
            blk: bits(v, BLK) as u8,
            hops: bits(v, HOPS) as u8,
            reserved: bits(v, RSVD) as u32,
        }
    }

    /// The raw word back (fields wider than their slot are cut to it).
    pub fn to_raw(&self) -> u64 {
        put(self.op.into(), OP)
            | put(self.lvl.into(), LVL)
            | put(self.snoop.into(), SNOOP)
            | put(self.lock.into(), LOCK)
            | put(self.dtlb.into(), DTLB)
            | put(self.lvl_num.into(), LVL_NUM)
            | put(self.remote.into(), REMOTE)
            | put(self.snoopx.into(), SNOOPX)
            | put(self.blk.into(), BLK)
            | put(self.hops.into(), HOPS)
            | put(self.reserved.into(), RSVD)
    }
}

impl From<u64> for DataSrc {
    fn from(v: u64) -> Self {
        DataSrc::from_raw(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_fixture_word() {
        for v in [
            0u64,
            u64::MAX,
            0x0118_6810_0242,
            0x0001_0265_0010_0842,
            0xdead_beef_cafe_f00d,
        ] {
            assert_eq!(DataSrc::from_raw(v).to_raw(), v);
        }
        // From the Skylake-SP fixture: LOAD, LVL L3|HIT, SNP None, lock 0, TLB L1|L2|HIT,
        // lvl_num L3, BLK N/A.
        let d = DataSrc::from_raw(0x106_6810_0842);
        assert_eq!(
            (d.op, d.lvl, d.snoop, d.lock, d.dtlb, d.lvl_num, d.blk),
            (
                op::LOAD,
                lvl::L3 | lvl::HIT,
                snoop::NONE,
                0,
                tlb::HIT | tlb::L1 | tlb::L2,
                lvl_num::L3,
                blk::NA
            )
        );
    }
}
