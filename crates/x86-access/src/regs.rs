//! perf's x86 register numbers (`arch/x86/include/uapi/asm/perf_regs.h`) and their values.

use iced_x86::Register;

use crate::{SegmentBases, Unresolved};

/// The registers an address can be made of: ax..ip (0-8) and r8..r15 (16-23). Flags and
/// segment selectors are not needed (segment *bases* are not in the sample anyway), and a
/// 64-bit kernel refuses ds/es/fs/gs (12-15) in the mask.
pub const SAMPLE_REGS_MASK: u64 = 0x1ff | (0xff << 16);

/// A sample's register dump, by perf register number.
pub trait Registers {
    fn perf_reg(&self, index: u32) -> Option<u64>;
}

impl<F: Fn(u32) -> Option<u64>> Registers for F {
    fn perf_reg(&self, index: u32) -> Option<u64> {
        self(index)
    }
}

/// perf's number for a general-purpose register (any width) or rip.
pub fn perf_reg_index(r: Register) -> Option<u32> {
    Some(match r.full_register() {
        Register::RAX => 0,
        Register::RBX => 1,
        Register::RCX => 2,
        Register::RDX => 3,
        Register::RSI => 4,
        Register::RDI => 5,
        Register::RBP => 6,
        Register::RSP => 7,
        Register::RIP => 8,
        Register::R8 => 16,
        Register::R9 => 17,
        Register::R10 => 18,
        Register::R11 => 19,
        Register::R12 => 20,
        Register::R13 => 21,
        Register::R14 => 22,
        Register::R15 => 23,
        _ => return None,
    })
}

/// The value iced-x86 asks for while computing an address: a register (cut to its width)
/// or, for a segment register, the segment's base.
pub(crate) fn value(
    r: Register,
    regs: &dyn Registers,
    segments: &SegmentBases,
) -> Result<u64, Unresolved> {
    match r {
        // Flat segments on Linux, in 32- and 64-bit code alike.
        Register::ES | Register::CS | Register::SS | Register::DS => return Ok(0),
        Register::FS => return segments.fs.ok_or(Unresolved::SegmentBase("fs")),
        Register::GS => return segments.gs.ok_or(Unresolved::SegmentBase("gs")),
        _ => {}
    }
    if r.is_vector_register() {
        return Err(Unresolved::VectorIndex);
    }
    let index = perf_reg_index(r).ok_or(Unresolved::MissingRegister(name(r)))?;
    let full = regs
        .perf_reg(index)
        .ok_or(Unresolved::MissingRegister(name(r)))?;
    Ok(match r.size() {
        1 => full & 0xff,
        2 => full & 0xffff,
        4 => full & 0xffff_ffff,
        _ => full,
    })
}

/// Lower-case register name for sentences ("rdi").
pub(crate) fn name(r: Register) -> &'static str {
    match r.full_register() {
        Register::RAX => "rax",
        Register::RBX => "rbx",
        Register::RCX => "rcx",
        Register::RDX => "rdx",
        Register::RSI => "rsi",
        Register::RDI => "rdi",
        Register::RBP => "rbp",
        Register::RSP => "rsp",
        Register::RIP => "rip",
        Register::R8 => "r8",
        Register::R9 => "r9",
        Register::R10 => "r10",
        Register::R11 => "r11",
        Register::R12 => "r12",
        Register::R13 => "r13",
        Register::R14 => "r14",
        Register::R15 => "r15",
        _ => "a register",
    }
}
