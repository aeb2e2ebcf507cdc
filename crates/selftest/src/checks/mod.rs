//! The checks, one per capability, in the order they print; and what a line says when
//! kairos cannot collect something here: kairos's reason, and perf's own answer when it
//! tries the same (where perf can do what kairos says is impossible, they disagree).

pub(crate) mod branches;
pub(crate) mod kernel;
pub(crate) mod memory;
pub(crate) mod pmu_memory;
pub(crate) mod resctrl;
pub(crate) mod sampling;
pub(crate) mod uncore;

use std::ffi::OsString;

use crate::context::Ctx;
use crate::perf_text;
use crate::verdict::Line;

/// One check: its `--only` name and what it compares.
#[derive(Debug, Clone, Copy)]
pub struct CheckInfo {
    pub name: &'static str,
    pub compares: &'static str,
    pub(crate) run: fn(&mut Ctx) -> Line,
}

/// Every check, in the order they run and print.
pub const CHECKS: &[CheckInfo] = &[
    CheckInfo {
        name: sampling::CPU_CLOCK,
        compares: "function shares (self and total) of transitions against perf record -e cpu-clock -g of the same run",
        run: sampling::cpu_clock,
    },
    CheckInfo {
        name: sampling::CYCLES,
        compares: "function shares of transitions against perf record -e cycles -g of the same run (PMU)",
        run: sampling::cycles,
    },
    CheckInfo {
        name: branches::NAME,
        compares: "LBR records per sample, call share and call targets of transitions against perf record -j (PMU)",
        run: branches::check,
    },
    CheckInfo {
        name: pmu_memory::NAME,
        compares: "PEBS/IBS load addresses by matrix (and latency) against perf mem record (PMU)",
        run: pmu_memory::check,
    },
    CheckInfo {
        name: pmu_memory::TMA,
        compares: "the memory-bound (TMA) figures against perf stat of the same counter groups (Intel PMU)",
        run: pmu_memory::tma,
    },
    CheckInfo {
        name: uncore::NAME,
        compares: "DRAM bandwidth while cache_thrash runs against perf stat -a -I 100 of the memory controllers (uncore)",
        run: uncore::check,
    },
    CheckInfo {
        name: resctrl::NAME,
        compares: "kairos cache's schemata, and the monitoring kairos records while cache_thrash runs, against the resctrl files read directly",
        run: resctrl::check,
    },
    CheckInfo {
        name: kernel::FAULTS,
        compares: "kfaults' page faults and fault-handler entries against perf stat of the software and exceptions events",
        run: kernel::faults,
    },
    CheckInfo {
        name: kernel::SYSCALLS,
        compares: "kfaults' system calls against perf stat -e raw_syscalls:sys_enter",
        run: kernel::syscalls,
    },
    CheckInfo {
        name: memory::ADDRESS_SAMPLING,
        compares: "three_arrays' array shares against the program's own measurement (perf has no equivalent without a PMU)",
        run: memory::address_sampling,
    },
    CheckInfo {
        name: memory::WATCHPOINTS,
        compares: "false_sharing's watched counters against the program's own threads and offsets (perf has no equivalent for addresses known only at run time)",
        run: memory::watchpoints,
    },
];

/// The names, for sentences and help.
pub fn names() -> Vec<&'static str> {
    CHECKS.iter().map(|c| c.name).collect()
}

/// How perf answers the same question kairos answered "not here".
pub(crate) enum Probe {
    /// `perf stat -x, -e EVENT -- true` (`-a` for system-wide events).
    Stat { event: String, system_wide: bool },
    /// `perf record -b -- true`.
    BranchStack,
    /// `perf mem record -- true`.
    Mem,
    /// No perf equivalent to try; the sentence says what stands in for it.
    Nothing(String),
}

enum Answer {
    Refused(String),
    Works(String),
}

fn ask_perf(ctx: &Ctx, probe: &Probe) -> Answer {
    if let Err(why) = ctx.perf_ready() {
        return Answer::Refused(why);
    }
    let scratch = ctx.path("probe.perf.data");
    let args: Vec<OsString> = match probe {
        Probe::Nothing(s) => return Answer::Refused(s.clone()),
        Probe::Stat { event, system_wide } => {
            let mut a: Vec<OsString> = vec!["stat".into(), "-x,".into()];
            if *system_wide {
                a.push("-a".into());
            }
            a.extend(["-e".into(), event.into(), "--".into(), "true".into()]);
            a
        }
        Probe::BranchStack => vec![
            "record".into(),
            "-q".into(),
            "-b".into(),
            "-o".into(),
            scratch.clone().into(),
            "--".into(),
            "true".into(),
        ],
        Probe::Mem => vec![
            "mem".into(),
            "record".into(),
            "-o".into(),
            scratch.clone().into(),
            "--".into(),
            "true".into(),
        ],
    };
    let shown = format!(
        "perf {}",
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let answer = match ctx.perf(&args) {
        Err(e) => Answer::Refused(e),
        Ok(o) if matches!(probe, Probe::Stat { .. }) => {
            let rows = perf_text::stat_rows(&o.stderr, false);
            match rows.first() {
                Some(r) if r.value.is_some() => {
                    Answer::Works(format!("{shown} counts {} here", r.event))
                }
                Some(r) => Answer::Refused(format!(
                    "{} {}",
                    r.event,
                    r.note.clone().unwrap_or_default()
                )),
                None => Answer::Refused(perf_text::message(&o.stderr)),
            }
        }
        Ok(o) if o.ok() => Answer::Works(format!("{shown} works here")),
        Ok(o) => Answer::Refused(perf_text::message(&o.stderr)),
    };
    let _ = std::fs::remove_file(&scratch);
    answer
}

/// The line for a capability kairos does not have here: kairos's reason and perf's
/// answer; when perf can do it and `perf_can_contradict`, a disagreement.
pub(crate) fn unavailable(
    ctx: &Ctx,
    name: &str,
    kairos_reason: &str,
    probe: Probe,
    perf_can_contradict: bool,
) -> Line {
    match ask_perf(ctx, &probe) {
        Answer::Refused(p) => {
            Line::not_available(name, format!("kairos: {kairos_reason}; perf: {p}"))
        }
        Answer::Works(w) if perf_can_contradict => Line::disagrees(
            name,
            "perf on this machine",
            format!("kairos says it cannot ({kairos_reason}), but {w}"),
        ),
        Answer::Works(w) => {
            Line::not_available(name, format!("kairos: {kairos_reason} (perf: {w})"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_are_unique_and_spelled_for_the_command_line() {
        let n = names();
        let mut sorted = n.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), n.len(), "{n:?}");
        for name in n {
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                "{name}"
            );
        }
        assert!(CHECKS.iter().all(|c| !c.compares.is_empty()));
    }
}
