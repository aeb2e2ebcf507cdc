//! The old value of an address register that the instruction which just ran overwrote
//! (`mov rax, [rax]`), where another register still holds it. A timer sample gives the
//! registers *after* that instruction; its address is lost unless the value it was made of
//! still lives elsewhere. Unoptimised code keeps everything in stack slots and reloads it:
//! `mov [rbp-0x18], rdi; ... mov rax, [rbp-0x18]; mov rax, [rax]` loaded from the pointer
//! that rdi still holds.
//!
//! The function is followed from its start, along every direct branch, and each register
//! and 8-byte stack slot of its own frame gets a name for the value it holds (`terms`);
//! where paths meet, a place keeps its name only if every path agrees. The overwritten
//! register's name before the instruction is then looked for among the registers after
//! it, as a sum of registers and constants (`Linear`). Nothing is guessed: a name stands
//! for one value on every path, and what cannot be followed is refused with the reason.
//!
//! What the following assumes, as compilers do: a function's frame is written only
//! through rsp and rbp unless its address is taken (`lea rax, [rbp-0x20]`, rsp or rbp
//! copied into another register or into memory: then every store of unknown address
//! forgets the slots); a call keeps rbx, rbp, rsp and r12-r15 and forgets the slots and
//! the other registers; nothing below rsp - 128 (the red zone) survives. 64-bit code only.

use std::collections::{HashMap, HashSet, VecDeque};

use iced_x86::{Decoder, DecoderOptions, FlowControl, Instruction, InstructionInfoFactory};

use crate::regs::perf_reg_index;
use crate::step::{step, Mem, Op, Src, Step, GPRS, RBP, RSP};
use crate::terms::{Loc, Term, Terms, V};
use crate::Registers;

/// Registers a call may change (System V): rax, rcx, rdx, rsi, rdi, r8-r11.
const CALLER_SAVED: [u8; 9] = [0, 1, 2, 6, 7, 8, 9, 10, 11];
/// Bytes below rsp that signal delivery leaves alone (the System V red zone).
const RED_ZONE: i64 = 128;
/// Functions longer than this are not followed.
pub(crate) const MAX_FUNCTION_BYTES: u64 = 1 << 16;
/// Instructions followed at most (each visit counts), so any function ends in bounded time.
const MAX_STEPS: usize = 300_000;

/// A value from the sample's registers: `constant + sum(coefficient * register)`,
/// wrapping, registers by perf number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Linear {
    constant: u64,
    terms: Vec<(u32, u64)>,
}

impl Linear {
    fn reg(place: u8) -> Option<Linear> {
        let index = perf_reg_index(*GPRS.get(place as usize)?)?;
        Some(Linear {
            constant: 0,
            terms: vec![(index, 1)],
        })
    }

    fn constant(c: u64) -> Linear {
        Linear {
            constant: c,
            terms: Vec::new(),
        }
    }

    fn offset(mut self, k: u64) -> Linear {
        self.constant = self.constant.wrapping_add(k);
        self
    }

    fn plus(mut self, other: Linear) -> Linear {
        self.constant = self.constant.wrapping_add(other.constant);
        for (r, c) in other.terms {
            match self.terms.iter_mut().find(|(q, _)| *q == r) {
                Some((_, d)) => *d = d.wrapping_add(c),
                None => self.terms.push((r, c)),
            }
        }
        self
    }

    fn times(mut self, s: u64) -> Linear {
        self.constant = self.constant.wrapping_mul(s);
        for (_, c) in &mut self.terms {
            *c = c.wrapping_mul(s);
        }
        self
    }

    /// The value, or None when a register it needs was not sampled.
    pub(crate) fn eval(&self, regs: &dyn Registers) -> Option<u64> {
        self.terms.iter().try_fold(self.constant, |acc, &(r, c)| {
            Some(acc.wrapping_add(regs.perf_reg(r)?.wrapping_mul(c)))
        })
    }
}

/// What following the function found for the overwritten registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Recovered {
    /// Each register's value before the instruction, from the registers after it.
    Values(Vec<(u32, Linear)>),
    /// Followed, but no register after the instruction holds one of the old values.
    Lost,
    /// The function could not be followed, and why.
    Unfollowed(&'static str),
}

/// The names each place holds at one point; None: no name (not known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) regs: [Option<V>; 16],
    /// (offset from the entry's rsp, bytes, name), sorted; only below the entry's rsp.
    slots: Vec<(i64, u8, V)>,
}

impl State {
    fn forget_overlapping(&mut self, from: i64, to: i64) {
        self.slots
            .retain(|&(d, n, _)| d.saturating_add(i64::from(n)) <= from || d >= to);
    }

    fn slot(&self, d: i64, n: u8) -> Option<V> {
        self.slots
            .iter()
            .find(|&&(e, m, _)| e == d && m == n)
            .map(|&(_, _, v)| v)
    }

    fn put_slot(&mut self, d: i64, n: u8, v: V) {
        let at = self.slots.partition_point(|&(e, m, _)| (e, m) < (d, n));
        self.slots.insert(at, (d, n, v));
    }

    /// The name of a memory operand's address here, where every part of it has one.
    fn address(&self, t: &mut Terms, m: &Mem) -> Option<V> {
        if !m.exact {
            return None;
        }
        let mut v = t.constant(m.disp)?;
        if let Some(b) = m.base {
            v = t.add(self.regs[b as usize]?, v)?;
        }
        if let Some((ix, scale)) = m.index {
            let i = t.mul(self.regs[ix as usize]?, scale)?;
            v = t.add(v, i)?;
        }
        Some(v)
    }
}

/// The function, decoded, and what following it has found so far.
struct Flow {
    /// Each instruction's address, in order.
    ips: Vec<u64>,
    steps: Vec<Step>,
    succ: Vec<Vec<usize>>,
    preds: Vec<u32>,
    terms: Terms,
    ins: Vec<Option<State>>,
    /// Places that no longer agree where paths meet (they keep their Phi name).
    phis: HashSet<(usize, Loc)>,
    /// Stores of unknown address may hit the frame (its address was taken).
    escaped_mode: bool,
    /// The frame's address was seen to be taken.
    escaped: bool,
    entry_rbp: Option<V>,
}

/// Decodes the function `code[..size]` starting at `start` and finds, for the instruction at
/// `prev_ip`, the values the registers `needed` (place numbers) held before it ran, from
/// the registers after it.
pub(crate) fn recover(
    code: &[u8],
    start: u64,
    size: u64,
    prev_ip: u64,
    needed: &[u8],
) -> Recovered {
    if size == 0 {
        return Recovered::Unfollowed("its function's size is not known");
    }
    if size > MAX_FUNCTION_BYTES {
        return Recovered::Unfollowed("its function is longer than 64 KiB");
    }
    let Some(code) = usize::try_from(size).ok().and_then(|n| code.get(..n)) else {
        return Recovered::Unfollowed("its function's code is not all readable");
    };
    let mut flow = match Flow::decode(code, start) {
        Ok(f) => f,
        Err(why) => return Recovered::Unfollowed(why),
    };
    let Some(p) = flow.index_of(prev_ip) else {
        return Recovered::Unfollowed("it is not an instruction of its function as decoded");
    };
    let mut result = flow.run(false);
    if result.is_ok() && flow.escaped {
        result = flow.run(true);
    }
    if let Err(why) = result {
        return Recovered::Unfollowed(why);
    }
    let Some(before) = flow.ins[p].clone() else {
        return Recovered::Unfollowed("it is not reached from its function's start");
    };
    let after = flow.transfer(p, before.clone());
    let mut values = Vec::new();
    for &r in needed {
        let Some(t) = before.regs.get(r as usize).copied().flatten() else {
            return Recovered::Lost;
        };
        let (Some(value), Some(index)) =
            (flow.eval(t, &after, 0), perf_reg_index(GPRS[r as usize]))
        else {
            return Recovered::Lost;
        };
        values.push((index, value));
    }
    Recovered::Values(values)
}

impl Flow {
    fn decode(code: &[u8], start: u64) -> Result<Flow, &'static str> {
        let mut decoder = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
        let mut factory = InstructionInfoFactory::new();
        let mut ips = Vec::new();
        let mut steps = Vec::new();
        let mut instr = Instruction::default();
        while decoder.can_decode() {
            decoder.decode_out(&mut instr);
            if instr.is_invalid() {
                return Err("bytes in its function do not decode");
            }
            if instr.flow_control() == FlowControl::IndirectBranch {
                return Err("its function has an indirect jump (its targets are not known)");
            }
            ips.push(instr.ip());
            steps.push(step(&instr, &mut factory));
        }
        let index: HashMap<u64, usize> = ips.iter().enumerate().map(|(n, &ip)| (ip, n)).collect();
        let end = start.wrapping_add(code.len() as u64);
        let mut succ = vec![Vec::new(); steps.len()];
        let mut preds = vec![0u32; steps.len()];
        if let Some(p) = preds.first_mut() {
            *p = 1; // the call
        }
        for (n, s) in steps.iter().enumerate() {
            if s.falls_through && n + 1 < steps.len() {
                succ[n].push(n + 1);
            }
            if let Some(t) = s.target {
                if t >= start && t < end {
                    let &to = index
                        .get(&t)
                        .ok_or("a jump in its function lands inside an instruction")?;
                    if !succ[n].contains(&to) {
                        succ[n].push(to);
                    }
                }
            }
            for &to in &succ[n] {
                preds[to] = preds[to].saturating_add(1);
            }
        }
        Ok(Flow {
            ips,
            ins: vec![None; steps.len()],
            steps,
            succ,
            preds,
            terms: Terms::default(),
            phis: HashSet::new(),
            escaped_mode: false,
            escaped: false,
            entry_rbp: None,
        })
    }

    fn index_of(&self, ip: u64) -> Option<usize> {
        self.ips.binary_search(&ip).ok()
    }

    /// Follows the function from its start until nothing changes.
    fn run(&mut self, escaped_mode: bool) -> Result<(), &'static str> {
        self.escaped_mode = escaped_mode;
        self.terms = Terms::default();
        self.phis.clear();
        self.ins.iter_mut().for_each(|s| *s = None);
        let mut entry = State {
            regs: [None; 16],
            slots: Vec::new(),
        };
        for (n, r) in entry.regs.iter_mut().enumerate() {
            *r = self.terms.get(Term::Entry(n as u8));
        }
        self.entry_rbp = entry.regs[RBP as usize];
        let Some(first) = self.ins.first_mut() else {
            return Err("its function is empty");
        };
        *first = Some(entry);
        let mut queue = VecDeque::from([0usize]);
        let mut queued = vec![false; self.steps.len()];
        queued[0] = true;
        let mut steps = 0usize;
        while let Some(n) = queue.pop_front() {
            queued[n] = false;
            steps += 1;
            if steps > MAX_STEPS {
                return Err("its function is too long to follow");
            }
            let Some(state) = self.ins[n].clone() else {
                continue;
            };
            let out = self.transfer(n, state);
            for k in 0..self.succ[n].len() {
                let to = self.succ[n][k];
                if self.merge(to, &out) && !queued[to] {
                    queued[to] = true;
                    queue.push_back(to);
                }
            }
        }
        Ok(())
    }

    /// Joins `incoming` into the state before instruction `h`; true when it changed.
    ///
    /// A place keeps the name of the first arrival while every later arrival agrees, and
    /// otherwise takes, for good, the name `Phi(h, place)`. This keeps every name standing
    /// for one value: the first arrival cannot hold a name made at or after `h` (nothing
    /// after `h` has run yet), so a kept name never stands for an older run of an
    /// instruction than the one that made it, and the `Def` or `Phi` names an instruction
    /// makes are never found, older, before it.
    fn merge(&mut self, h: usize, incoming: &State) -> bool {
        let Some(cur) = self.ins[h].as_ref() else {
            self.ins[h] = Some(incoming.clone());
            return true;
        };
        if self.preds[h] <= 1 {
            if cur == incoming {
                return false;
            }
            self.ins[h] = Some(incoming.clone());
            return true;
        }
        let h32 = h as u32;
        let mut regs = cur.regs;
        let mut to_phi = Vec::new();
        for (r, slot) in regs.iter().enumerate() {
            let loc = Loc::Reg(r as u8);
            let keep =
                !self.phis.contains(&(h, loc)) && slot.is_some() && *slot == incoming.regs[r];
            if !keep {
                to_phi.push(loc);
            }
        }
        let mut slots = Vec::new();
        for &(d, n, v) in &cur.slots {
            let loc = Loc::Slot(d, n);
            match incoming.slot(d, n) {
                None => {}
                Some(w) if w == v && !self.phis.contains(&(h, loc)) => slots.push((d, n, v)),
                Some(_) => to_phi.push(loc),
            }
        }
        for loc in to_phi {
            self.phis.insert((h, loc));
            let phi = self.terms.get(Term::Phi(h32, loc));
            match loc {
                Loc::Reg(r) => regs[r as usize] = phi,
                Loc::Slot(d, n) => {
                    if let Some(p) = phi {
                        slots.push((d, n, p));
                    }
                }
            }
        }
        slots.sort_unstable_by_key(|&(d, n, _)| (d, n));
        let new = State { regs, slots };
        if Some(&new) == self.ins[h].as_ref() {
            return false;
        }
        self.ins[h] = Some(new);
        true
    }

    /// A new name for output `out` of instruction `n`.
    fn def(&mut self, n: usize, out: u8) -> Option<V> {
        self.terms.get(Term::Def(n as u32, out))
    }

    fn set(&mut self, s: &mut State, r: u8, v: Option<V>) {
        if r != RSP && r != RBP {
            if let Some(v) = v {
                if self
                    .terms
                    .mentions(v, &|t| matches!(t, Term::Entry(e) if e == RSP))
                {
                    self.escaped = true;
                }
            }
        }
        if let Some(slot) = s.regs.get_mut(r as usize) {
            *slot = v;
        }
    }

    /// rsp changed: slots that are now below the red zone may be overwritten at any time.
    fn set_rsp(&mut self, s: &mut State, v: Option<V>) {
        s.regs[RSP as usize] = v;
        match v.and_then(|v| self.terms.frame_offset(v, RSP)) {
            Some(sp) => {
                let low = sp.saturating_sub(RED_ZONE);
                s.slots.retain(|&(d, _, _)| d >= low);
            }
            None => s.slots.clear(),
        }
    }

    /// A store of `size` bytes at `addr` of the name `value`.
    fn store_at(
        &mut self,
        s: &mut State,
        addr: Option<V>,
        size: u32,
        frame_syntax: bool,
        value: Option<V>,
    ) {
        let frame = addr.and_then(|a| self.terms.frame_offset(a, RSP));
        match frame {
            Some(d) if (1..=64).contains(&size) && d.saturating_add(i64::from(size)) <= 0 => {
                s.forget_overlapping(d, d + i64::from(size));
                if let (8, Some(v)) = (size, value) {
                    s.put_slot(d, 8, v);
                }
            }
            _ => {
                if frame.is_some() || frame_syntax || self.escaped_mode {
                    s.slots.clear();
                }
            }
        }
    }

    /// An 8-byte load into place `dst` from `addr`.
    fn load_at(&mut self, s: &mut State, n: usize, addr: Option<V>, dst: u8) -> Option<V> {
        let frame = addr.and_then(|a| self.terms.frame_offset(a, RSP));
        match frame {
            Some(d) if d <= -8 => match s.slot(d, 8) {
                Some(v) => Some(v),
                None => {
                    let v = self.def(n, dst)?;
                    s.put_slot(d, 8, v);
                    Some(v)
                }
            },
            _ => self.def(n, dst),
        }
    }

    fn transfer(&mut self, n: usize, mut s: State) -> State {
        let Some(step) = self.steps.get(n).cloned() else {
            return s;
        };
        if step.reads_frame
            && step.writes_elsewhere
            && !(step.push_rbp && s.regs[RBP as usize] == self.entry_rbp)
        {
            self.escaped = true;
        }
        let reg = |s: &State, r: u8| s.regs.get(r as usize).copied().flatten();
        match step.op {
            Op::Copy { dst, src } => {
                let v = reg(&s, src);
                self.set_place(&mut s, dst, v);
            }
            Op::Set { dst, value } => {
                let v = self.terms.constant(value);
                self.set_place(&mut s, dst, v);
            }
            Op::Load { dst, mem } => {
                let addr = s.address(&mut self.terms, &mem);
                let v = self.load_at(&mut s, n, addr, dst);
                self.set_place(&mut s, dst, v);
            }
            Op::Store { mem, src } => {
                let addr = s.address(&mut self.terms, &mem);
                let v = match src {
                    Src::Reg(r) => reg(&s, r),
                    Src::Const(c) => self.terms.constant(c),
                };
                self.store_at(&mut s, addr, mem.size, mem.frame_syntax, v);
            }
            Op::Lea { dst, mem } => {
                let v = match s.address(&mut self.terms, &mem) {
                    Some(v) => Some(v),
                    None => self.def(n, dst),
                };
                self.set_place(&mut s, dst, v);
            }
            Op::AddConst { dst, k } => {
                let v = match reg(&s, dst).and_then(|a| self.terms.off(a, k)) {
                    Some(v) => Some(v),
                    None => self.def(n, dst),
                };
                self.set_place(&mut s, dst, v);
            }
            Op::AddReg { dst, src } => {
                let sum = match (reg(&s, dst), reg(&s, src)) {
                    (Some(a), Some(b)) => self.terms.add(a, b),
                    _ => None,
                };
                let v = match sum {
                    Some(v) => Some(v),
                    None => self.def(n, dst),
                };
                self.set_place(&mut s, dst, v);
            }
            Op::Push { src } => self.push(&mut s, n, src),
            Op::Pop { dst } => self.pop(&mut s, n, dst),
            Op::Leave => {
                let fp = reg(&s, RBP);
                let v = self.load_at(&mut s, n, fp, RBP);
                let up = match fp.and_then(|a| self.terms.off(a, 8)) {
                    Some(v) => Some(v),
                    None => self.def(n, RSP),
                };
                self.set_rsp(&mut s, up);
                s.regs[RBP as usize] = v;
            }
            Op::Call => {
                s.slots.clear();
                for r in CALLER_SAVED {
                    let v = self.def(n, r);
                    self.set_place(&mut s, r, v);
                }
            }
            Op::Other => self.other(&mut s, n, &step),
        }
        s
    }

    /// `push src`: the value stored below rsp, rsp 8 lower.
    fn push(&mut self, s: &mut State, n: usize, src: Src) {
        let value = match src {
            Src::Reg(r) => s.regs.get(r as usize).copied().flatten(),
            Src::Const(c) => self.terms.constant(c),
        };
        let sp = s.regs[RSP as usize].and_then(|a| self.terms.off(a, 8u64.wrapping_neg()));
        self.store_at(s, sp, 8, true, value);
        let sp = match sp {
            Some(v) => Some(v),
            None => self.def(n, RSP),
        };
        self.set_rsp(s, sp);
    }

    /// `pop dst`: the value loaded from rsp, rsp 8 higher (unless rsp is `dst`).
    fn pop(&mut self, s: &mut State, n: usize, dst: u8) {
        let sp = s.regs[RSP as usize];
        let v = self.load_at(s, n, sp, dst);
        if dst == RSP {
            self.set_rsp(s, v);
        } else {
            let up = match sp.and_then(|a| self.terms.off(a, 8)) {
                Some(v) => Some(v),
                None => self.def(n, RSP),
            };
            self.set_rsp(s, up);
            self.set_place(s, dst, v);
        }
    }

    /// Any other instruction: its stores forget what they overwrite, and each register it
    /// writes gets a new name (rsp moved by its known increment).
    fn other(&mut self, s: &mut State, n: usize, step: &Step) {
        for m in &step.stores {
            let addr = s.address(&mut self.terms, m);
            self.store_at(s, addr, m.size, m.frame_syntax, None);
        }
        for r in 0..16u8 {
            if step.writes & (1 << r) == 0 {
                continue;
            }
            if r == RSP && step.sp_inc != 0 {
                let sp = s.regs[RSP as usize]
                    .and_then(|a| self.terms.off(a, i64::from(step.sp_inc) as u64));
                let sp = match sp {
                    Some(v) => Some(v),
                    None => self.def(n, RSP),
                };
                self.set_rsp(s, sp);
                continue;
            }
            let v = self.def(n, r);
            if r == RSP {
                self.set_rsp(s, v);
            } else {
                self.set_place(s, r, v);
            }
        }
    }

    /// Writes a register, rsp through `set_rsp`.
    fn set_place(&mut self, s: &mut State, r: u8, v: Option<V>) {
        if r == RSP {
            self.set_rsp(s, v);
        } else {
            self.set(s, r, v);
        }
    }

    /// `t` from the registers in `after`: a register holding it (or it plus a constant),
    /// else its parts.
    fn eval(&self, t: V, after: &State, depth: u8) -> Option<Linear> {
        if depth > 8 {
            return None;
        }
        for (r, v) in after.regs.iter().enumerate() {
            if *v == Some(t) {
                return Linear::reg(r as u8);
            }
        }
        for (r, v) in after.regs.iter().enumerate() {
            if let Some(Term::Off(a, k)) = v.and_then(|v| self.terms.term(v)) {
                if a == t {
                    return Some(Linear::reg(r as u8)?.offset(k.wrapping_neg()));
                }
            }
        }
        match self.terms.term(t)? {
            Term::Const(c) => Some(Linear::constant(c)),
            Term::Off(a, k) => Some(self.eval(a, after, depth + 1)?.offset(k)),
            Term::Add(a, b) => Some(self.eval(a, after, depth + 1)?.plus(self.eval(
                b,
                after,
                depth + 1,
            )?)),
            Term::Mul(a, s) => Some(self.eval(a, after, depth + 1)?.times(s)),
            _ => None,
        }
    }
}
