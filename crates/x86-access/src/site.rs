//! Which instruction a timer sample's time belongs to. A timer interrupt is taken at an
//! instruction boundary, after the oldest instruction in flight retires: a thread that
//! waits on a slow load is sampled at the instruction *after* that load (measured here: a
//! loop of `mov rax,[rdi]; add rdx,1; ...` is sampled at the `add` every time). So the
//! access is taken from the instruction that just ran when it touches memory, and
//! otherwise from the instruction about to run; the sample's weight (its period) goes to
//! that one access, or is shared among the accesses of that one instruction.
//!
//! The registers are those after the instruction that just ran. They give its address
//! unless it overwrote one of its own address registers (`mov rax, [rax]`); then the old
//! value is looked for in the other registers by following the function (`flow`: in
//! unoptimised code, `mov rax, [rbp-0x18]; mov rax, [rax]` reloads a pointer that rdi
//! still holds; `push`, `pop` and `leave` move rsp by a known amount). Where no register
//! holds it, the sample gives no address, with the reason; it is never given to the
//! instruction about to run instead, whose access is not the one the time was spent on.
//!
//! The instruction that just ran is the one before the IP in its function, decoded
//! forward from the function's start (x86 cannot be decoded backwards), unless the IP is
//! the target of a branch of the function (the branch may be what ran) or the function's
//! start (a call ran): then, and where no symbol gives the function's start, the access is
//! the one of the instruction about to run.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, OpAccess, OpKind,
    Register,
};

use crate::flow::{self, Linear, Recovered};
use crate::step;
use crate::{Access, Bitness, MemInstr, Registers, SegmentBases, Unresolved};

/// Which of the two instructions gave the access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Which {
    /// The instruction before the sampled IP (it just retired).
    Previous,
    /// The instruction before the sampled IP, which overwrote a register of its own
    /// address: the register's old value came from another register that still holds it.
    PreviousRecovered,
    /// The instruction at the sampled IP (about to run).
    Current,
}

/// What is known of the instruction that ran before the sampled IP.
#[derive(Debug, Clone)]
enum Previous {
    /// Not known: the IP is a branch target or its function's start, or the function
    /// could not be walked.
    Unknown,
    /// It ran just before the IP. `before`: for each address register it overwrote (perf
    /// number), its value before it ran, from the registers after it.
    Known {
        instr: MemInstr,
        before: Vec<(u32, Linear)>,
    },
    /// It touched memory at an address that cannot be computed, and why.
    Lost(Unresolved),
}

/// The instruction at a sampled IP and the one before it in its function.
#[derive(Debug, Clone)]
pub struct Site {
    previous: Previous,
    current: MemInstr,
}

impl Site {
    /// `code`: the bytes from the function's start `start` to at least `ip` + 15 (fewer
    /// at the end of the file), and to the function's end `start + size` for the old
    /// value of an overwritten address register to be looked for (`size`: the symbol's
    /// size, 0 when not known); `ip` must lie inside them.
    pub fn decode(
        code: &[u8],
        start: u64,
        size: u64,
        ip: u64,
        bitness: Bitness,
    ) -> Result<Site, Unresolved> {
        let at = usize::try_from(ip.wrapping_sub(start))
            .ok()
            .filter(|&o| o < code.len());
        let Some(at) = at else {
            return Err(Unresolved::Undecodable);
        };
        let current = MemInstr::decode(&code[at..], ip, bitness)?;
        Ok(Site {
            previous: previous(code, start, size, ip, bitness),
            current,
        })
    }

    /// A site without its function: only the instruction at the IP is known.
    pub fn lone(bytes: &[u8], ip: u64, bitness: Bitness) -> Result<Site, Unresolved> {
        Ok(Site {
            previous: Previous::Unknown,
            current: MemInstr::decode(bytes, ip, bitness)?,
        })
    }

    /// The accesses and which instruction made them.
    pub fn resolve(
        &self,
        regs: &dyn Registers,
        segments: &SegmentBases,
    ) -> Result<(Vec<Access>, Which), Unresolved> {
        match &self.previous {
            Previous::Known { instr, before } if !instr.is_empty() => {
                if before.is_empty() {
                    return Ok((instr.resolve(regs, segments)?, Which::Previous));
                }
                let regs = Before { now: regs, before };
                Ok((instr.resolve(&regs, segments)?, Which::PreviousRecovered))
            }
            Previous::Lost(why) => Err(*why),
            _ => Ok((self.current.resolve(regs, segments)?, Which::Current)),
        }
    }
}

/// The registers as they were before the instruction that just ran: the sample's, but
/// for those it overwrote.
struct Before<'a> {
    now: &'a dyn Registers,
    before: &'a [(u32, Linear)],
}

impl Registers for Before<'_> {
    fn perf_reg(&self, index: u32) -> Option<u64> {
        match self.before.iter().find(|(r, _)| *r == index) {
            Some((_, value)) => value.eval(self.now),
            None => self.now.perf_reg(index),
        }
    }
}

/// Walks the function from its start to `ip`: the instruction ending exactly at `ip`,
/// unless `ip` is the target of a direct branch of the function or the walk does not land
/// on `ip`; where it overwrote its own address registers, their old values.
fn previous(code: &[u8], start: u64, size: u64, ip: u64, bitness: Bitness) -> Previous {
    let bits = if bitness == Bitness::B64 { 64 } else { 32 };
    let mut d = Decoder::with_ip(bits, code, start, DecoderOptions::NONE);
    let mut last: Option<Instruction> = None;
    let mut is_target = false;
    let mut instr = Instruction::default();
    while d.can_decode() && d.ip() < ip {
        d.decode_out(&mut instr);
        if instr.is_invalid() {
            return Previous::Unknown;
        }
        is_target |= branch_target(&instr) == Some(ip);
        last = Some(instr);
    }
    let Some(prev) = last.filter(|i| i.next_ip() == ip && !is_target) else {
        return Previous::Unknown;
    };
    // A branch before ip means ip was reached from elsewhere, unless it is not taken.
    if !matches!(prev.flow_control(), FlowControl::Next) {
        return Previous::Unknown;
    }
    let Some(m) = usize::try_from(prev.ip().wrapping_sub(start))
        .ok()
        .and_then(|off| code.get(off..))
        .and_then(|b| MemInstr::decode(b, prev.ip(), bitness).ok())
    else {
        return Previous::Unknown;
    };
    let overwritten = overwritten_address_registers(&prev);
    if m.is_empty() || overwritten.is_empty() {
        return Previous::Known {
            instr: m,
            before: Vec::new(),
        };
    }
    if bitness == Bitness::B32 {
        return Previous::Lost(Unresolved::AddressUntraced("32-bit code is not followed"));
    }
    match flow::recover(code, start, size, prev.ip(), &overwritten) {
        Recovered::Values(before) => Previous::Known { instr: m, before },
        Recovered::Lost => Previous::Lost(Unresolved::AddressOverwritten),
        Recovered::Unfollowed(why) => Previous::Lost(Unresolved::AddressUntraced(why)),
    }
}

/// The target of a direct jump or call, if the instruction is one.
fn branch_target(i: &Instruction) -> Option<u64> {
    match i.op0_kind() {
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
            Some(i.near_branch_target())
        }
        _ => None,
    }
}

/// The registers (place numbers of `flow`) that make up the instruction's memory
/// addresses and that it also writes.
fn overwritten_address_registers(i: &Instruction) -> Vec<u8> {
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(i);
    let address_regs: Vec<Register> = info
        .used_memory()
        .iter()
        .flat_map(|m| [m.base(), m.index()])
        .filter(|r| *r != Register::None)
        .map(|r| r.full_register())
        .collect();
    let mut out: Vec<u8> = info
        .used_registers()
        .iter()
        .filter(|u| {
            matches!(
                u.access(),
                OpAccess::Write
                    | OpAccess::CondWrite
                    | OpAccess::ReadWrite
                    | OpAccess::ReadCondWrite
            ) && address_regs.contains(&u.register().full_register())
        })
        .filter_map(|u| step::gpr(u.register()))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
