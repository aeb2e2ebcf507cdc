//! The samples that gave no address, for the summary: without a PMU, the samples whose
//! instruction touches no memory (the thread was not at a memory access) are told apart
//! from those dropped because the address could not be computed, each drop cause with its
//! count, and the dropped share of all samples. The causes are the converter's and
//! kairos-x86-access's sentences, as the manifest keeps them (`memory_access.unresolved`).

use kairos_report::{Cell, Section};

use crate::notes::share;
use crate::{AccessData, Source};

/// The converter's words for a sample whose instruction touches no memory.
pub(crate) const NO_ACCESS: &str = "the sampled instruction accesses no memory";

/// What a cause says of the sampled thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Not at a memory access: not a drop.
    NoAccess,
    /// At a memory access whose address could not be computed.
    AtMemory,
    /// Not known whether at a memory access (no code, no registers).
    Unknown,
}

/// kairos-x86-access's causes for an instruction that touches memory at an address that
/// cannot be computed: the overwritten address register (in earlier results "changed"), a
/// register not sampled, thread-local storage, a gather.
pub(crate) fn kind(cause: &str) -> Kind {
    if cause == NO_ACCESS {
        Kind::NoAccess
    } else if cause.starts_with("the instruction that just ran ")
        || (cause.starts_with("register ") && cause.ends_with(" was not in the sample"))
        || cause.contains(": relative to a segment base")
        || cause.starts_with("a vector gather or scatter")
    {
        Kind::AtMemory
    } else {
        Kind::Unknown
    }
}

/// Samples dropped: every cause but [`NO_ACCESS`].
pub(crate) fn dropped(d: &AccessData) -> u64 {
    d.unresolved
        .iter()
        .filter(|(c, _)| kind(c) != Kind::NoAccess)
        .map(|(_, n)| n)
        .sum()
}

/// The rows after "Samples without one". With a PMU, each cause; without one, the samples
/// at no memory access, the dropped ones by cause (most first) and their share, and the
/// share of time at memory accesses among the samples where that is known.
pub(crate) fn push_rows(d: &AccessData, s: &mut Section) {
    if d.source != Source::Registers {
        for (why, n) in &d.unresolved {
            s.push(format!("  {why}"), Cell::UInt(*n));
        }
        return;
    }
    let with_address = d.sampled();
    let total = with_address + d.unresolved.values().sum::<u64>();
    let count = |k: Kind| -> u64 {
        d.unresolved
            .iter()
            .filter(|(c, _)| kind(c) == k)
            .map(|(_, n)| n)
            .sum()
    };
    let no_access = count(Kind::NoAccess);
    if no_access > 0 {
        s.push(format!("  {NO_ACCESS}"), Cell::UInt(no_access));
    }
    let dropped = dropped(d);
    if dropped > 0 {
        s.push(
            "  Dropped: no address could be computed",
            Cell::UInt(dropped),
        );
        let mut causes: Vec<(&String, &u64)> = d
            .unresolved
            .iter()
            .filter(|(c, _)| kind(c) != Kind::NoAccess)
            .collect();
        causes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (why, n) in causes {
            s.push(format!("    {why}"), Cell::UInt(*n));
        }
    }
    if total > 0 {
        s.push("Dropped share", share(dropped, total));
        // Without a PMU, the share of time the threads were at a memory access stands in
        // for the memory-bound share: a dropped access was one; unknown causes are left out.
        let at_memory = with_address + count(Kind::AtMemory);
        s.push(
            "Time at memory accesses",
            share(at_memory, at_memory + no_access),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(source: Source, causes: &[(&str, u64)]) -> AccessData {
        AccessData {
            source,
            unresolved: causes.iter().map(|&(c, n)| (c.to_string(), n)).collect(),
            ..AccessData::default()
        }
    }

    fn rows(d: &AccessData) -> Vec<(String, String)> {
        let mut s = Section::new("t");
        push_rows(d, &mut s);
        s.entries
            .iter()
            .map(|(k, v)| (k.clone(), format!("{v:?}")))
            .collect()
    }

    const OVERWRITTEN: &str = "the instruction that just ran overwrote a register of its own address, and no register holds the old value";

    #[test]
    fn causes_are_told_apart() {
        assert_eq!(kind(NO_ACCESS), Kind::NoAccess);
        assert_eq!(kind(OVERWRITTEN), Kind::AtMemory);
        // The words of results written before the old value was looked for.
        assert_eq!(
            kind("the instruction that just ran changed a register of its own address"),
            Kind::AtMemory
        );
        assert_eq!(kind("register r12 was not in the sample"), Kind::AtMemory);
        assert_eq!(
            kind("fs: relative to a segment base that is not known (thread-local storage)"),
            Kind::AtMemory
        );
        assert_eq!(
            kind("code not readable (JIT, vDSO or missing binary)"),
            Kind::Unknown
        );
        assert_eq!(kind("no user registers (a kernel thread)"), Kind::Unknown);
    }

    #[test]
    fn address_sampling_lists_the_drops_by_cause_with_their_share() {
        let d = data(
            Source::Registers,
            &[
                (NO_ACCESS, 10),
                (OVERWRITTEN, 30),
                ("code not readable (JIT, vDSO or missing binary)", 60),
            ],
        );
        let r = rows(&d);
        let keys: Vec<&str> = r.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "  the sampled instruction accesses no memory",
                "  Dropped: no address could be computed",
                "    code not readable (JIT, vDSO or missing binary)",
                &format!("    {OVERWRITTEN}"),
                "Dropped share",
                "Time at memory accesses",
            ]
        );
        assert_eq!(r[1].1, "UInt(90)");
        // 90 of 100 samples dropped; 30 at a memory access against 10 at none.
        assert_eq!(r[4].1, "Percent(90.0)");
        assert_eq!(r[5].1, "Percent(75.0)");
        assert_eq!(dropped(&d), 90);
    }

    #[test]
    fn a_pmu_lists_its_causes_as_they_are() {
        let d = data(Source::Pmu, &[("no data address in the sample", 4)]);
        assert_eq!(
            rows(&d),
            [(
                "  no data address in the sample".to_string(),
                "UInt(4)".to_string()
            )]
        );
    }
}
