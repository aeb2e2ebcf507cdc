//! The instructions of a function as `flow` follows them: each one's memory operands
//! (`Mem`), what it does to registers and stack slots where that is followed exactly (`Op`:
//! moves, loads and stores of 8 bytes, `lea`, additions of constants and registers, push,
//! pop, leave, calls), and for the others which registers and memory it writes, whether it
//! reads rsp or rbp as a value (the frame's address taken), and where it goes next.

use iced_x86::{
    Code, CodeSize, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind,
    Register, UsedMemory,
};

/// General-purpose registers in iced's order: a place's number is its index here.
pub(crate) const GPRS: [Register; 16] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RBX,
    Register::RSP,
    Register::RBP,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
    Register::R12,
    Register::R13,
    Register::R14,
    Register::R15,
];
pub(crate) const RSP: u8 = 4;
pub(crate) const RBP: u8 = 5;

/// The place number of a general-purpose register of any width.
pub(crate) fn gpr(r: Register) -> Option<u8> {
    let f = r.full_register();
    GPRS.iter().position(|&g| g == f).map(|i| i as u8)
}

/// A memory operand, as the following sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mem {
    pub(crate) base: Option<u8>,
    pub(crate) index: Option<(u8, u64)>,
    pub(crate) disp: u64,
    /// Bytes; 0 when not known.
    pub(crate) size: u32,
    /// 64-bit addressing through general-purpose registers in a flat segment: its address
    /// can be named.
    pub(crate) exact: bool,
    /// rsp or rbp takes part in the address: it may be in the frame.
    pub(crate) frame_syntax: bool,
}

impl Mem {
    fn parts(
        segment: Register,
        base: Register,
        index: Register,
        scale: u64,
        disp: u64,
        size: u32,
    ) -> Mem {
        let usable = |r: Register| r == Register::None || r.is_gpr64();
        let frame_syntax = [base, index]
            .iter()
            .any(|r| matches!(r.full_register(), Register::RSP | Register::RBP));
        Mem {
            base: if base.is_gpr64() { gpr(base) } else { None },
            index: if index.is_gpr64() {
                gpr(index).map(|i| (i, scale))
            } else {
                None
            },
            disp,
            size,
            exact: !matches!(segment, Register::FS | Register::GS) && usable(base) && usable(index),
            frame_syntax,
        }
    }

    /// The memory operand of `i` (an operand of kind Memory).
    fn operand(i: &Instruction) -> Mem {
        let size = i.memory_size().size() as u32;
        if i.is_ip_rel_memory_operand() {
            let mut m = Mem::parts(
                i.memory_segment(),
                Register::None,
                Register::None,
                1,
                i.ip_rel_memory_address(),
                size,
            );
            m.exact &= i.memory_base() == Register::RIP;
            return m;
        }
        Mem::parts(
            i.memory_segment(),
            i.memory_base(),
            i.memory_index(),
            u64::from(i.memory_index_scale()),
            i.memory_displacement64(),
            size,
        )
    }

    fn used(m: &UsedMemory) -> Mem {
        let mut mem = Mem::parts(
            m.segment(),
            m.base(),
            m.index(),
            u64::from(m.scale()),
            m.displacement(),
            m.memory_size().size() as u32,
        );
        mem.exact &= m.address_size() == CodeSize::Code64;
        mem
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Src {
    Reg(u8),
    Const(u64),
}

/// What an instruction does that is followed exactly; everything else is `Other`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    /// `mov r64, r64`
    Copy {
        dst: u8,
        src: u8,
    },
    /// `mov r, imm`, `xor r, r`
    Set {
        dst: u8,
        value: u64,
    },
    /// `mov r64, [m]` (8 bytes)
    Load {
        dst: u8,
        mem: Mem,
    },
    /// `mov [m], r64 / imm` (8 bytes)
    Store {
        mem: Mem,
        src: Src,
    },
    /// `lea r64, [m]`
    Lea {
        dst: u8,
        mem: Mem,
    },
    /// `add/sub r64, imm`, `inc/dec r64`
    AddConst {
        dst: u8,
        k: u64,
    },
    /// `add r64, r64`
    AddReg {
        dst: u8,
        src: u8,
    },
    /// `push r64 / imm`
    Push {
        src: Src,
    },
    /// `pop r64`
    Pop {
        dst: u8,
    },
    Leave,
    Call,
    /// Its written registers get new names; its stores forget the slots they may hit.
    Other,
}

/// One decoded instruction of the function.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub(crate) op: Op,
    /// Registers written, any width, also conditionally (bit = place number).
    pub(crate) writes: u16,
    pub(crate) stores: Vec<Mem>,
    /// rsp's change for a push or pop of `Other` (`push qword [rbp-8]`), else 0.
    pub(crate) sp_inc: i32,
    /// Reads rsp or rbp as a value (an explicit operand, or the address of a `lea`).
    pub(crate) reads_frame: bool,
    /// Writes a register other than rsp and rbp, or memory.
    pub(crate) writes_elsewhere: bool,
    pub(crate) push_rbp: bool,
    pub(crate) falls_through: bool,
    pub(crate) target: Option<u64>,
}

/// An instruction's operands, as registers (by place number) and immediates.
struct Operands<'a>(&'a Instruction);

impl Operands<'_> {
    fn reg(&self, op: u32) -> Option<Register> {
        let i = self.0;
        (op < i.op_count() && i.op_kind(op) == OpKind::Register).then(|| i.op_register(op))
    }
    fn reg64(&self, op: u32) -> Option<u8> {
        self.reg(op).filter(|r| r.is_gpr64()).and_then(gpr)
    }
    fn reg32(&self, op: u32) -> Option<u8> {
        self.reg(op).filter(|r| r.is_gpr32()).and_then(gpr)
    }
    fn imm(&self, op: u32) -> Option<u64> {
        let i = self.0;
        if op >= i.op_count() {
            return None;
        }
        match i.op_kind(op) {
            OpKind::Immediate8to64 | OpKind::Immediate32to64 | OpKind::Immediate64 => {
                i.try_immediate(op).ok()
            }
            _ => None,
        }
    }
    fn is_mem(&self, op: u32) -> bool {
        op < self.0.op_count() && self.0.op_kind(op) == OpKind::Memory
    }
}

/// A two-operand `mov`: a copy, a constant, an 8-byte load or store, or other.
fn classify_mov(o: &Operands) -> Op {
    let i = o.0;
    let size8 = i.memory_size().size() == 8;
    if let (Some(dst), Some(src)) = (o.reg64(0), o.reg64(1)) {
        return Op::Copy { dst, src };
    }
    if let (Some(dst), Some(value)) = (o.reg64(0), o.imm(1)) {
        return Op::Set { dst, value };
    }
    if let (Some(dst), OpKind::Immediate32) = (o.reg32(0), i.op_kind(1)) {
        return Op::Set {
            dst,
            value: u64::from(i.immediate32()),
        };
    }
    if let (Some(dst), true, true) = (o.reg64(0), o.is_mem(1), size8) {
        return Op::Load {
            dst,
            mem: Mem::operand(i),
        };
    }
    if o.is_mem(0) && size8 {
        if let Some(r) = o.reg64(1) {
            return Op::Store {
                mem: Mem::operand(i),
                src: Src::Reg(r),
            };
        }
        if let Some(c) = o.imm(1) {
            return Op::Store {
                mem: Mem::operand(i),
                src: Src::Const(c),
            };
        }
    }
    Op::Other
}

fn classify(i: &Instruction) -> Op {
    let o = Operands(i);
    let same_reg = o.reg(0).is_some() && o.reg(0) == o.reg(1);
    match i.mnemonic() {
        Mnemonic::Mov if i.op_count() == 2 => classify_mov(&o),
        Mnemonic::Lea => match (o.reg64(0), o.is_mem(1)) {
            (Some(dst), true) => Op::Lea {
                dst,
                mem: Mem::operand(i),
            },
            _ => Op::Other,
        },
        Mnemonic::Xor | Mnemonic::Sub
            if same_reg && (o.reg64(0).is_some() || o.reg32(0).is_some()) =>
        {
            match o.reg64(0).or(o.reg32(0)) {
                Some(dst) => Op::Set { dst, value: 0 },
                None => Op::Other,
            }
        }
        Mnemonic::Add | Mnemonic::Sub => match (o.reg64(0), o.imm(1), o.reg64(1)) {
            (Some(dst), Some(k), _) => Op::AddConst {
                dst,
                k: if i.mnemonic() == Mnemonic::Sub {
                    k.wrapping_neg()
                } else {
                    k
                },
            },
            (Some(dst), None, Some(src)) if i.mnemonic() == Mnemonic::Add => {
                Op::AddReg { dst, src }
            }
            _ => Op::Other,
        },
        Mnemonic::Inc | Mnemonic::Dec => match o.reg64(0) {
            Some(dst) => Op::AddConst {
                dst,
                k: if i.mnemonic() == Mnemonic::Dec {
                    u64::MAX
                } else {
                    1
                },
            },
            None => Op::Other,
        },
        Mnemonic::Push if i.code() == Code::Push_r64 => match o.reg64(0) {
            Some(r) => Op::Push { src: Src::Reg(r) },
            None => Op::Other,
        },
        Mnemonic::Push if matches!(i.code(), Code::Pushq_imm8 | Code::Pushq_imm32) => {
            match i.try_immediate(0) {
                Ok(c) => Op::Push { src: Src::Const(c) },
                Err(_) => Op::Other,
            }
        }
        Mnemonic::Pop if i.code() == Code::Pop_r64 => match o.reg64(0) {
            Some(dst) => Op::Pop { dst },
            None => Op::Other,
        },
        Mnemonic::Leave if i.code() == Code::Leaveq => Op::Leave,
        _ if matches!(
            i.flow_control(),
            FlowControl::Call | FlowControl::IndirectCall
        ) =>
        {
            Op::Call
        }
        _ => Op::Other,
    }
}

pub(crate) fn step(i: &Instruction, factory: &mut InstructionInfoFactory) -> Step {
    let info = factory.info(i);
    let written = |a: OpAccess| {
        matches!(
            a,
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        )
    };
    let read = |a: OpAccess| {
        matches!(
            a,
            OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        )
    };
    let mut writes = 0u16;
    for u in info.used_registers() {
        if written(u.access()) {
            if let Some(g) = gpr(u.register()) {
                writes |= 1 << g;
            }
        }
    }
    let stores: Vec<Mem> = info
        .used_memory()
        .iter()
        .filter(|m| written(m.access()))
        .map(Mem::used)
        .collect();
    let is_frame = |r: Register| matches!(r.full_register(), Register::RSP | Register::RBP);
    let explicit = (0..i.op_count()).any(|op| {
        i.op_kind(op) == OpKind::Register && is_frame(i.op_register(op)) && read(info.op_access(op))
    });
    let lea_of_frame = i.mnemonic() == Mnemonic::Lea
        && i.op_count() == 2
        && i.op_kind(1) == OpKind::Memory
        && (is_frame(i.memory_base()) || is_frame(i.memory_index()));
    let frame_regs = (1 << RSP) | (1 << RBP);
    let fc = i.flow_control();
    let target = match (fc, i.op_count() > 0) {
        (
            FlowControl::ConditionalBranch
            | FlowControl::UnconditionalBranch
            | FlowControl::XbeginXabortXend,
            true,
        ) if matches!(
            i.op0_kind(),
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
        ) =>
        {
            Some(i.near_branch_target())
        }
        _ => None,
    };
    let op = classify(i);
    Step {
        op,
        writes,
        sp_inc: match op {
            Op::Other if writes & (1 << RSP) != 0 && i.mnemonic() != Mnemonic::Enter => {
                i.stack_pointer_increment()
            }
            _ => 0,
        },
        writes_elsewhere: writes & !frame_regs != 0 || !stores.is_empty(),
        stores,
        reads_frame: explicit || lea_of_frame,
        push_rbp: i.mnemonic() == Mnemonic::Push && reg_is(i, 0, Register::RBP),
        falls_through: matches!(
            fc,
            FlowControl::Next
                | FlowControl::ConditionalBranch
                | FlowControl::Call
                | FlowControl::IndirectCall
                | FlowControl::Interrupt
                | FlowControl::XbeginXabortXend
        ),
        target,
    }
}

fn reg_is(i: &Instruction, op: u32, r: Register) -> bool {
    op < i.op_count() && i.op_kind(op) == OpKind::Register && i.op_register(op) == r
}
