//! Which instruction a timer sample's time belongs to. A timer interrupt is taken at an
//! instruction boundary, after the oldest instruction in flight retires: a thread that
//! waits on a slow load is sampled at the instruction *after* that load (measured here: a
//! loop of `mov rax,[rdi]; add rdx,1; ...` is sampled at the `add` every time). So the
//! access is taken from the instruction that just ran when it touches memory, with the
//! registers as they are now (refused when it changed its own address registers), and
//! otherwise from the instruction about to run.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory, OpAccess, OpKind,
};

use crate::{Access, Bitness, MemInstr, Registers, SegmentBases, Unresolved};

/// Which of the two instructions gave the access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Which {
    /// The instruction before the sampled IP (it just retired).
    Previous,
    /// The instruction at the sampled IP (about to run).
    Current,
}

/// The instruction at a sampled IP and the one before it in its function.
#[derive(Debug, Clone)]
pub struct Site {
    /// None when the IP is a jump target of its function (the previous instruction in
    /// address order need not be the one that ran), or its function could not be walked.
    previous: Option<(MemInstr, bool)>,
    current: MemInstr,
}

impl Site {
    /// `function`: the bytes of the function from its start `function_start` to at least
    /// `ip` + 15 (fewer at the end of the file); `ip` must lie inside them.
    pub fn decode(
        function: &[u8],
        function_start: u64,
        ip: u64,
        bitness: Bitness,
    ) -> Result<Site, Unresolved> {
        let at = usize::try_from(ip.wrapping_sub(function_start))
            .ok()
            .filter(|&o| o < function.len());
        let Some(at) = at else {
            return Err(Unresolved::Undecodable);
        };
        let current = MemInstr::decode(&function[at..], ip, bitness)?;
        Ok(Site {
            previous: previous(function, function_start, ip, bitness),
            current,
        })
    }

    /// A site without its function: only the instruction at the IP is known.
    pub fn lone(bytes: &[u8], ip: u64, bitness: Bitness) -> Result<Site, Unresolved> {
        Ok(Site {
            previous: None,
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
            Some((p, clobbered)) if !p.is_empty() => {
                if *clobbered {
                    return Err(Unresolved::AddressOverwritten);
                }
                Ok((p.resolve(regs, segments)?, Which::Previous))
            }
            _ => Ok((self.current.resolve(regs, segments)?, Which::Current)),
        }
    }
}

/// Walks the function from its start to `ip`: the instruction ending exactly at `ip`, and
/// whether it writes a register its own address is made of. None when `ip` is the target
/// of a direct branch of the function, or the walk does not land on `ip`.
fn previous(function: &[u8], start: u64, ip: u64, bitness: Bitness) -> Option<(MemInstr, bool)> {
    let bits = if bitness == Bitness::B64 { 64 } else { 32 };
    let mut d = Decoder::with_ip(bits, function, start, DecoderOptions::NONE);
    let mut last: Option<Instruction> = None;
    let mut is_target = false;
    let mut instr = Instruction::default();
    while d.can_decode() && d.ip() < ip {
        d.decode_out(&mut instr);
        if instr.is_invalid() {
            return None;
        }
        is_target |= branch_target(&instr) == Some(ip);
        last = Some(instr);
    }
    let prev = last.filter(|i| i.next_ip() == ip && !is_target)?;
    // A branch before ip means ip was reached from elsewhere, unless it is not taken.
    if !matches!(prev.flow_control(), FlowControl::Next) {
        return None;
    }
    let off = usize::try_from(prev.ip().wrapping_sub(start)).ok()?;
    let m = MemInstr::decode(function.get(off..)?, prev.ip(), bitness).ok()?;
    Some((m, writes_its_address(&prev)))
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

fn writes_its_address(i: &Instruction) -> bool {
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(i);
    let address_regs: Vec<_> = info
        .used_memory()
        .iter()
        .flat_map(|m| [m.base(), m.index()])
        .filter(|r| *r != iced_x86::Register::None)
        .map(|r| r.full_register())
        .collect();
    info.used_registers().iter().any(|u| {
        matches!(
            u.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        ) && address_regs.contains(&u.register().full_register())
    })
}
