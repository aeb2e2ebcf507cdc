//! Branch stacks (LBR, AMD LbrExtV2, Arch LBR, ARM BRBE) as the kernel writes them into a
//! sample: `u64 nr`, `u64 hw_idx` only when the attr asked for PERF_SAMPLE_BRANCH_HW_INDEX,
//! `nr` x `{from, to, flags}`, and `nr` u64 counters only with PERF_SAMPLE_BRANCH_COUNTERS.
//! Bit layout of `flags` is `struct perf_branch_entry` in include/uapi/linux/perf_event.h.

use crate::consts::{PERF_SAMPLE_BRANCH_COUNTERS, PERF_SAMPLE_BRANCH_HW_INDEX};
use crate::reader::{le_u64, Cursor, Short};

/// The branch stack of one sample. Entry 0 is the most recent branch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchStack {
    /// Hardware index of the newest entry, when the attr requested it.
    pub hw_idx: Option<u64>,
    /// The branches, newest first. May be empty.
    pub entries: Vec<BranchEntry>,
    /// One counter word per entry, when the attr requested PERF_SAMPLE_BRANCH_COUNTERS.
    pub counters: Option<Vec<u64>>,
}

/// One taken branch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BranchEntry {
    /// Address of the branch instruction.
    pub from: u64,
    /// Branch target.
    pub to: u64,
    /// Prediction, timing and type bits.
    pub flags: BranchFlags,
}

/// The flags word of a branch entry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct BranchFlags(pub u64);

impl BranchFlags {
    fn bits(&self, shift: u32, width: u32) -> u64 {
        (self.0 >> shift) & ((1u64 << width) - 1)
    }
    /// Target was mispredicted.
    pub fn mispred(&self) -> bool {
        self.bits(0, 1) != 0
    }
    /// Target was predicted.
    pub fn predicted(&self) -> bool {
        self.bits(1, 1) != 0
    }
    /// Branch was inside a transaction (TSX).
    pub fn in_tx(&self) -> bool {
        self.bits(2, 1) != 0
    }
    /// Branch is a transaction abort.
    pub fn abort(&self) -> bool {
        self.bits(3, 1) != 0
    }
    /// Cycles since the previous branch (0 when the CPU does not report it).
    pub fn cycles(&self) -> u16 {
        self.bits(4, 16) as u16
    }
    /// Raw 4-bit branch type (`PERF_BR_*`); see [`BranchFlags::branch_type`].
    pub fn type_bits(&self) -> u8 {
        self.bits(20, 4) as u8
    }
    /// Speculation info (`PERF_BR_SPEC_*`, 2 bits).
    pub fn spec(&self) -> u8 {
        self.bits(24, 2) as u8
    }
    /// Extended branch type (`PERF_BR_NEW_*`, 4 bits), meaningful when type is EXTEND_ABI.
    pub fn new_type(&self) -> u8 {
        self.bits(26, 4) as u8
    }
    /// Privilege level (`PERF_BR_PRIV_*`, 3 bits).
    pub fn privilege(&self) -> u8 {
        self.bits(30, 3) as u8
    }
    /// The 31 bits above `priv`, reserved today; kept so newer kernels' bits are visible.
    pub fn reserved(&self) -> u32 {
        self.bits(33, 31) as u32
    }
    /// The decoded branch type.
    pub fn branch_type(&self) -> BranchType {
        BranchType::from_bits(self.type_bits(), self.new_type())
    }
}

/// Branch type (`PERF_BR_*`, with `PERF_BR_EXTEND_ABI` resolved through `new_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BranchType {
    /// Unknown (also: the CPU does not report types).
    Unknown,
    /// Conditional.
    Cond,
    /// Unconditional.
    Uncond,
    /// Indirect jump.
    Ind,
    /// Direct call.
    Call,
    /// Indirect call.
    IndCall,
    /// Return.
    Ret,
    /// System call.
    Syscall,
    /// System call return.
    Sysret,
    /// Conditional call.
    CondCall,
    /// Conditional return.
    CondRet,
    /// Exception return.
    Eret,
    /// Interrupt.
    Irq,
    /// System error.
    Serror,
    /// Not in transaction.
    NoTx,
    /// Alignment fault.
    FaultAlign,
    /// Data fault.
    FaultData,
    /// Instruction fault.
    FaultInst,
    /// Architecture-specific type 1..=5 (ARM64: FIQ, debug halt/exit/inst/data).
    Arch(u8),
    /// An extended type this reader does not know (raw `new_type`).
    OtherExtended(u8),
}

impl BranchType {
    /// From the 4-bit `type` and the 4-bit `new_type` fields.
    pub fn from_bits(type_bits: u8, new_type: u8) -> BranchType {
        use BranchType::*;
        match type_bits {
            1 => Cond,
            2 => Uncond,
            3 => Ind,
            4 => Call,
            5 => IndCall,
            6 => Ret,
            7 => Syscall,
            8 => Sysret,
            9 => CondCall,
            10 => CondRet,
            11 => Eret,
            12 => Irq,
            13 => Serror,
            14 => NoTx,
            // PERF_BR_EXTEND_ABI: the real type is in new_type.
            15 => match new_type {
                0 => FaultAlign,
                1 => FaultData,
                2 => FaultInst,
                3..=7 => Arch(new_type - 2),
                n => OtherExtended(n),
            },
            _ => Unknown,
        }
    }
}

/// Size of one `{from, to, flags}` entry.
const ENTRY_SIZE: u64 = 24;

/// Decodes a branch stack; `branch_sample_type` decides the optional words.
pub(crate) fn decode(
    c: &mut Cursor<'_>,
    branch_sample_type: u64,
) -> Result<BranchStack, (Short, &'static str)> {
    let nr = c.u64().map_err(|s| (s, "branch_stack.nr"))?;
    let hw_idx = if branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX != 0 {
        Some(c.u64().map_err(|s| (s, "branch_stack.hw_idx"))?)
    } else {
        None
    };
    // Check the whole byte count before allocating: nr comes from the file.
    let at = c.pos();
    let bytes = nr
        .checked_mul(ENTRY_SIZE)
        .ok_or((Short { at }, "branch_stack.entries"))?;
    let raw = c
        .bytes_u64(bytes)
        .map_err(|s| (s, "branch_stack.entries"))?;
    let entries = raw
        .chunks_exact(ENTRY_SIZE as usize)
        .map(|e| BranchEntry {
            from: le_u64(e),
            to: e.get(8..).map(le_u64).unwrap_or(0),
            flags: BranchFlags(e.get(16..).map(le_u64).unwrap_or(0)),
        })
        .collect();
    let counters = if branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS != 0 {
        Some(c.u64s(nr).map_err(|s| (s, "branch_stack.counters"))?)
    } else {
        None
    };
    Ok(BranchStack {
        hw_idx,
        entries,
        counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_bits_follow_the_kernel_layout() {
        // mispred=1, predicted=0, in_tx=1, abort=0, cycles=0xabcd, type=15, spec=2, new_type=4, priv=3, reserved=1
        let v = 1
            | (1 << 2)
            | (0xabcd << 4)
            | (15 << 20)
            | (2 << 24)
            | (4 << 26)
            | (3 << 30)
            | (1 << 33);
        let f = BranchFlags(v);
        assert!(f.mispred() && !f.predicted() && f.in_tx() && !f.abort());
        assert_eq!(
            (
                f.cycles(),
                f.type_bits(),
                f.spec(),
                f.new_type(),
                f.privilege(),
                f.reserved()
            ),
            (0xabcd, 15, 2, 4, 3, 1)
        );
        assert_eq!(f.branch_type(), BranchType::Arch(2));
        assert_eq!(BranchFlags(6 << 20).branch_type(), BranchType::Ret);
        assert_eq!(BranchFlags(2).branch_type(), BranchType::Unknown);
        assert!(BranchFlags(2).predicted());
    }

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn optional_words_follow_branch_sample_type() {
        let buf = words(&[2, 77, 1, 2, 3, 4, 5, 6, 10, 20]);
        let bs = decode(
            &mut Cursor::new(&buf),
            PERF_SAMPLE_BRANCH_HW_INDEX | PERF_SAMPLE_BRANCH_COUNTERS,
        )
        .expect("decodes");
        assert_eq!(bs.hw_idx, Some(77));
        assert_eq!(
            bs.entries[1],
            BranchEntry {
                from: 4,
                to: 5,
                flags: BranchFlags(6)
            }
        );
        assert_eq!(bs.counters, Some(vec![10, 20]));
        let plain = decode(&mut Cursor::new(&buf), 0).expect("decodes");
        assert_eq!(
            (plain.hw_idx, plain.entries[0].from, plain.counters),
            (None, 77, None)
        );
        let empty = decode(&mut Cursor::new(&words(&[0])), 0).expect("nr=0");
        assert!(empty.entries.is_empty());
        assert!(decode(&mut Cursor::new(&words(&[u64::MAX, 1])), 0).is_err());
    }
}
