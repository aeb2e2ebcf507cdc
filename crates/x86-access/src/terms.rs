//! Names for the values registers and stack slots hold while a function is followed
//! (`flow`): two places holding the same name hold the same value, whatever it is. A name
//! is a register's value at the function's entry, a constant, the result of an instruction
//! that is not followed exactly, the value a place held where paths meet, or a sum,
//! offset or multiple of names. Names are interned, so equal names are equal numbers.

use std::collections::HashMap;

/// A name's number.
pub(crate) type V = u32;

/// A place that holds a value: a general-purpose register (iced order, 0 = rax .. 15 =
/// r15) or a stack slot (offset from the stack pointer at the function's entry, bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Loc {
    Reg(u8),
    Slot(i64, u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Term {
    /// The register's value when the function was entered.
    Entry(u8),
    Const(u64),
    /// Output `.1` of the latest run of the instruction numbered `.0`.
    Def(u32, u8),
    /// What the place held at the latest arrival at instruction `.0` (where paths meet).
    Phi(u32, Loc),
    /// Sum of two names (ordered by number).
    Add(V, V),
    /// A name plus a constant (wrapping).
    Off(V, u64),
    /// A name times a constant (wrapping).
    Mul(V, u64),
}

/// Names larger than this many nodes are not made (their place becomes unknown), so a
/// long run of arithmetic cannot build deep names.
const MAX_NODES: u16 = 24;

/// The interned names of one run.
#[derive(Debug, Default)]
pub(crate) struct Terms {
    list: Vec<(Term, u16)>,
    index: HashMap<Term, V>,
}

impl Terms {
    pub(crate) fn term(&self, v: V) -> Option<Term> {
        self.list.get(v as usize).map(|&(t, _)| t)
    }

    fn nodes(&self, v: V) -> u16 {
        self.list.get(v as usize).map_or(MAX_NODES, |&(_, n)| n)
    }

    /// The name of `t`, or None when it would be too large.
    pub(crate) fn get(&mut self, t: Term) -> Option<V> {
        if let Some(&v) = self.index.get(&t) {
            return Some(v);
        }
        let nodes = match t {
            Term::Add(a, b) => 1 + self.nodes(a).saturating_add(self.nodes(b)),
            Term::Off(a, _) | Term::Mul(a, _) => 1 + self.nodes(a),
            _ => 1,
        };
        if nodes > MAX_NODES {
            return None;
        }
        let v = V::try_from(self.list.len()).ok()?;
        self.list.push((t, nodes));
        self.index.insert(t, v);
        Some(v)
    }

    pub(crate) fn constant(&mut self, c: u64) -> Option<V> {
        self.get(Term::Const(c))
    }

    /// `a + k`, folded: constants add up, offsets of offsets merge, `+ 0` is `a`.
    pub(crate) fn off(&mut self, a: V, k: u64) -> Option<V> {
        if k == 0 {
            return Some(a);
        }
        match self.term(a)? {
            Term::Const(c) => self.constant(c.wrapping_add(k)),
            Term::Off(b, j) => self.off(b, j.wrapping_add(k)),
            _ => self.get(Term::Off(a, k)),
        }
    }

    /// `a + b`, with constants and offsets pulled out so that equal sums get one name.
    pub(crate) fn add(&mut self, a: V, b: V) -> Option<V> {
        match (self.term(a)?, self.term(b)?) {
            (Term::Const(c), _) => self.off(b, c),
            (_, Term::Const(c)) => self.off(a, c),
            (Term::Off(x, k), _) => {
                let s = self.add(x, b)?;
                self.off(s, k)
            }
            (_, Term::Off(y, k)) => {
                let s = self.add(a, y)?;
                self.off(s, k)
            }
            _ => self.get(Term::Add(a.min(b), a.max(b))),
        }
    }

    /// `a * s`.
    pub(crate) fn mul(&mut self, a: V, s: u64) -> Option<V> {
        match (s, self.term(a)?) {
            (1, _) => Some(a),
            (_, Term::Const(c)) => self.constant(c.wrapping_mul(s)),
            (_, Term::Off(x, k)) => {
                let m = self.mul(x, s)?;
                self.off(m, k.wrapping_mul(s))
            }
            _ => self.get(Term::Mul(a, s)),
        }
    }

    /// Whether `v` is or contains a name for which `atom` says yes.
    pub(crate) fn mentions(&self, v: V, atom: &dyn Fn(Term) -> bool) -> bool {
        match self.term(v) {
            None => false,
            Some(t) if atom(t) => true,
            Some(Term::Add(a, b)) => self.mentions(a, atom) || self.mentions(b, atom),
            Some(Term::Off(a, _) | Term::Mul(a, _)) => self.mentions(a, atom),
            Some(_) => false,
        }
    }

    /// For a name `entry(rsp) + d`: d (an address in the function's own stack frame).
    pub(crate) fn frame_offset(&self, v: V, rsp: u8) -> Option<i64> {
        match self.term(v)? {
            Term::Entry(r) if r == rsp => Some(0),
            Term::Off(a, k) if self.term(a) == Some(Term::Entry(rsp)) => Some(k as i64),
            _ => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_get_one_name() {
        let mut t = Terms::default();
        let a = t.get(Term::Entry(7)).unwrap();
        let b = t.get(Term::Entry(2)).unwrap();
        // (a + 8) + (b - 8) == b + a
        let a8 = t.off(a, 8).unwrap();
        let bm8 = t.off(b, 8u64.wrapping_neg()).unwrap();
        let s1 = t.add(a8, bm8).unwrap();
        let s2 = t.add(b, a).unwrap();
        assert_eq!(s1, s2);
        // (a + 1) * 8 == a * 8 + 8
        let a1 = t.off(a, 1).unwrap();
        let m1 = t.mul(a1, 8).unwrap();
        let a_8 = t.mul(a, 8).unwrap();
        let m2 = t.off(a_8, 8).unwrap();
        assert_eq!(m1, m2);
        // a + 0 is a; constants fold
        assert_eq!(t.off(a, 0), Some(a));
        let c = t.constant(5).unwrap();
        assert_eq!(t.off(c, 3), t.constant(8));
        assert_ne!(a, b);
    }

    #[test]
    fn frame_offsets_and_mentions() {
        let mut t = Terms::default();
        let sp = t.get(Term::Entry(4)).unwrap();
        let fp = t.off(sp, 8u64.wrapping_neg()).unwrap();
        let slot = t.off(fp, 0x18u64.wrapping_neg()).unwrap();
        assert_eq!(t.frame_offset(sp, 4), Some(0));
        assert_eq!(t.frame_offset(slot, 4), Some(-0x20));
        let d = t.get(Term::Def(3, 0)).unwrap();
        let sum = t.add(d, slot).unwrap();
        assert_eq!(t.frame_offset(sum, 4), None);
        assert!(t.mentions(sum, &|x| matches!(x, Term::Def(3, _))));
        assert!(!t.mentions(slot, &|x| matches!(x, Term::Def(3, _))));
    }

    #[test]
    fn names_do_not_grow_without_bound() {
        let mut t = Terms::default();
        let mut v = t.get(Term::Entry(0)).unwrap();
        let b = t.get(Term::Entry(1)).unwrap();
        let mut made = 0;
        for _ in 0..100 {
            match t.add(v, b) {
                Some(n) => {
                    v = n;
                    made += 1;
                }
                None => break,
            }
        }
        assert!(made < 100, "a sum of 100 terms is refused");
    }
}
