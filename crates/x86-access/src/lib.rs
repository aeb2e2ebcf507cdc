//! The memory access an x86 instruction makes, from its bytes and the registers sampled
//! before it ran; see the README.

mod flow;
mod regs;
mod site;
#[cfg(test)]
mod site_tests;
mod step;
mod terms;
#[cfg(test)]
mod tests;

use iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, OpAccess, UsedMemory};

pub use regs::{perf_reg_index, Registers, SAMPLE_REGS_MASK};
pub use site::{Site, Which};

/// Longest x86 instruction: callers read this many bytes at the IP (fewer at a mapping's end).
pub const MAX_INSTRUCTION_BYTES: usize = 15;

/// Which way an access goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    Load,
    Store,
    /// Read and written by one instruction (`add [m], 1`, `xchg`, `lock cmpxchg`).
    LoadStore,
}

impl Direction {
    pub fn reads(self) -> bool {
        matches!(self, Direction::Load | Direction::LoadStore)
    }
    pub fn writes(self) -> bool {
        matches!(self, Direction::Store | Direction::LoadStore)
    }
    pub fn name(self) -> &'static str {
        match self {
            Direction::Load => "load",
            Direction::Store => "store",
            Direction::LoadStore => "load+store",
        }
    }
}

/// One access the instruction is about to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    /// Bytes (for `rep movs` and the like, one element).
    pub size: u32,
    pub direction: Direction,
}

/// Code size of the sampled thread (`PERF_SAMPLE_REGS_ABI_32` or `_64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bitness {
    B32,
    B64,
}

/// Why a sample gives no address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Unresolved {
    #[error("the bytes at the sampled IP are not a valid instruction")]
    Undecodable,
    #[error("register {0} was not in the sample")]
    MissingRegister(&'static str),
    #[error("{0}: relative to a segment base that is not known (thread-local storage)")]
    SegmentBase(&'static str),
    #[error("a vector gather or scatter (one address per element)")]
    VectorIndex,
    #[error("the instruction that just ran overwrote a register of its own address, and no register holds the old value")]
    AddressOverwritten,
    #[error("the instruction that just ran overwrote a register of its own address, and its function could not be followed to find the old value: {0}")]
    AddressUntraced(&'static str),
}

/// The base addresses of `fs` and `gs`, when the caller knows them (thread-local storage).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentBases {
    pub fs: Option<u64>,
    pub gs: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Operand {
    mem: UsedMemory,
    direction: Direction,
    size: u32,
}

/// The memory operands of one decoded instruction, ready to be resolved with registers.
#[derive(Debug, Clone)]
pub struct MemInstr {
    len: usize,
    ops: Vec<Operand>,
}

impl MemInstr {
    /// Decodes the instruction at `ip` from `bytes` (up to [`MAX_INSTRUCTION_BYTES`]).
    pub fn decode(bytes: &[u8], ip: u64, bitness: Bitness) -> Result<MemInstr, Unresolved> {
        let bits = match bitness {
            Bitness::B32 => 32,
            Bitness::B64 => 64,
        };
        let mut decoder = Decoder::with_ip(bits, bytes, ip, DecoderOptions::NONE);
        let instr = decoder.decode();
        if instr.is_invalid() {
            return Err(Unresolved::Undecodable);
        }
        let mut factory = InstructionInfoFactory::new();
        let info = factory.info(&instr);
        let ops = info
            .used_memory()
            .iter()
            .filter_map(|m| {
                let direction = match m.access() {
                    OpAccess::Read | OpAccess::CondRead => Direction::Load,
                    OpAccess::Write | OpAccess::CondWrite => Direction::Store,
                    OpAccess::ReadWrite | OpAccess::ReadCondWrite => Direction::LoadStore,
                    // lea, nop [m], prefetch: an address but no access.
                    _ => return None,
                };
                Some(Operand {
                    mem: *m,
                    direction,
                    size: m.memory_size().size() as u32,
                })
            })
            .collect();
        Ok(MemInstr {
            len: instr.len(),
            ops,
        })
    }

    /// Length of the instruction in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an instruction that touches no memory (`add rdx, 1`, `lea`, `jmp`).
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The accesses, computed from the registers sampled before the instruction ran.
    pub fn resolve(
        &self,
        regs: &dyn Registers,
        segments: &SegmentBases,
    ) -> Result<Vec<Access>, Unresolved> {
        self.ops
            .iter()
            .map(|op| {
                let mut why = None;
                let addr = op.mem.virtual_address(0, |reg, _, _| {
                    let v = regs::value(reg, regs, segments);
                    if let Err(e) = v {
                        why = Some(e);
                    }
                    v.ok()
                });
                match addr {
                    Some(addr) => Ok(Access {
                        addr,
                        size: op.size,
                        direction: op.direction,
                    }),
                    None => {
                        Err(why.unwrap_or(Unresolved::MissingRegister(regs::name(op.mem.base()))))
                    }
                }
            })
            .collect()
    }
}
