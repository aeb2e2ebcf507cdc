//! Page faults and system calls: kairos's system-overview of `kfaults` (a known number of
//! kernel- and user-mode faults and as many read(2) calls as kernel-mode faults) against
//! `perf stat` of the events with the same definitions on a separate run of the same
//! program. Counting is exact on both sides; the two runs' start-up differs by a few.
//!
//! Definitions compared: kairos's "page faults" (faults handle_mm_fault completed) with
//! perf's minor-faults + major-faults; its fault-handler entries from user and from kernel
//! mode (the recording's own stack-walk faults left out) with the exceptions tracepoints;
//! its system calls with raw_syscalls:sys_enter.

use std::ffi::OsString;

use kairos_platform::names;

use crate::context::{Ctx, Step};
use crate::perf_text;
use crate::programs;
use crate::shared_runs::KernelRuns;
use crate::verdict::{Figure, Line, Tolerance, Unit};

pub(crate) const FAULTS: &str = "page-faults";
pub(crate) const SYSCALLS: &str = "syscalls";

const ARGS: [&str; 3] = ["20000", "2000", "100"];
const EVENTS: &str = "minor-faults,major-faults,exceptions:page_fault_user,exceptions:page_fault_kernel,raw_syscalls:sys_enter";
/// Counts agree within this fraction, and never closer than `FLOOR` events: the two runs'
/// start-up differs by a handful, while a mistake (the recording's own faults counted as
/// the program's: one per sample) is hundreds.
const FRACTION: f64 = 0.002;
const FLOOR: f64 = 20.0;

fn against() -> String {
    format!(
        "perf stat -e {EVENTS} on a separate run of kfaults {}",
        ARGS.join(" ")
    )
}

/// kairos's figures from the result's manifest (`system_overview`).
pub(crate) fn kairos_figures(so: &serde_json::Value) -> [Option<f64>; 4] {
    let e = &so["kernel_entries"];
    [
        so["page_faults"].as_f64(),
        e["user-page-fault"].as_f64(),
        e["kernel-page-fault"].as_f64(),
        e["syscall"].as_f64(),
    ]
}

/// perf's figures from its `-x,` output.
pub(crate) fn perf_figures(stat: &str) -> Result<[Option<f64>; 4], String> {
    let rows = perf_text::stat_rows(stat, false);
    let get = |name: &str| -> Result<f64, String> {
        let r = rows
            .iter()
            .find(|r| r.event == name)
            .ok_or_else(|| format!("perf stat printed no {name} count"))?;
        r.value.ok_or_else(|| {
            format!(
                "perf stat could not count {name}: {}",
                r.note.clone().unwrap_or_default()
            )
        })
    };
    Ok([
        Some(get("minor-faults")? + get("major-faults")?),
        Some(get("exceptions:page_fault_user")?),
        Some(get("exceptions:page_fault_kernel")?),
        Some(get("raw_syscalls:sys_enter")?),
    ])
}

fn runs(ctx: &Ctx) -> Step<KernelRuns> {
    // A launched program's kernel entries need the tracepoints (system-overview's need).
    let na = |why: String| Line::not_available(FAULTS, why);
    ctx.capability(names::TRACEPOINTS)
        .map_err(|why| na(format!("kairos: {why}")))?;
    ctx.perf_ready().map_err(na)?;
    let prog = ctx.sample("kfaults").map_err(na)?;
    let dir = ctx.path("kernel-entries");
    let o = ctx
        .collect("system-overview", &dir, &[], &prog, &ARGS)
        .map_err(|e| Line::disagrees(FAULTS, against(), e))?;
    let manifest = kairos_result::ResultDir::open(&dir)
        .map(|d| {
            d.manifest()
                .extra
                .get("system_overview")
                .cloned()
                .unwrap_or_default()
        })
        .map_err(|e| {
            Line::disagrees(
                FAULTS,
                against(),
                format!("kairos's result cannot be read: {e}"),
            )
        })?;
    let args: Vec<OsString> = ["stat", "-x,", "-e", EVENTS, "--"]
        .iter()
        .map(OsString::from)
        .chain([prog.into()])
        .chain(ARGS.iter().map(OsString::from))
        .collect();
    let p = ctx.perf(&args).map_err(na)?;
    if !p.ok() {
        return Err(na(format!(
            "perf stat failed: {}",
            perf_text::message(&p.stderr)
        )));
    }
    Ok(KernelRuns {
        kairos: kairos_figures(&manifest),
        perf: perf_figures(&p.stderr).map_err(na)?,
        truth: programs::kfaults(&o.stdout),
    })
}

/// The shared runs, made by the first of the two checks that needs them. A failure is
/// reported under the asking check's name.
fn shared(ctx: &mut Ctx, name: &str) -> Step<KernelRuns> {
    if ctx.kernel_runs.is_none() {
        ctx.kernel_runs = Some(runs(ctx));
    }
    match ctx
        .kernel_runs
        .clone()
        .unwrap_or_else(|| Err(Line::not_available(FAULTS, "not run")))
    {
        Ok(r) => Ok(r),
        Err(mut l) => {
            l.name = name.to_string();
            Err(l)
        }
    }
}

fn count(what: &str, k: Option<f64>, p: Option<f64>) -> Figure {
    Figure::new(
        what,
        Unit::Count,
        k,
        p,
        Tolerance::Relative {
            fraction: FRACTION,
            floor: FLOOR,
        },
    )
}

fn percent(f: f64) -> String {
    format!("{}%", f * 100.0)
}

pub(crate) fn fault_line(r: &KernelRuns) -> Line {
    let truth = r.truth.map_or(String::new(), |(k, u)| {
        format!(" (the program's own: {k} kernel-mode, {u} user-mode)")
    });
    Line::judged(
        FAULTS,
        against(),
        format!(
            "counts within {} (at least {FLOOR:.0}){truth}",
            percent(FRACTION)
        ),
        vec![
            count("completed faults (minor+major)", r.kairos[0], r.perf[0]),
            count("fault entries from user mode", r.kairos[1], r.perf[1]),
            count("fault entries from kernel mode", r.kairos[2], r.perf[2]),
        ],
    )
}

pub(crate) fn syscall_line(r: &KernelRuns) -> Line {
    let truth = r.truth.map_or(String::new(), |(k, _)| {
        format!(" (the program makes {k} read calls and its start-up a few dozen)")
    });
    Line::judged(
        SYSCALLS,
        format!(
            "perf stat -e raw_syscalls:sys_enter on a separate run of kfaults {}",
            ARGS.join(" ")
        ),
        format!(
            "count within {} (at least {FLOOR:.0}){truth}",
            percent(FRACTION)
        ),
        vec![count("system calls", r.kairos[3], r.perf[3])],
    )
}

pub(crate) fn faults(ctx: &mut Ctx) -> Line {
    shared(ctx, FAULTS).map_or_else(|l| l, |r| fault_line(&r))
}

pub(crate) fn syscalls(ctx: &mut Ctx) -> Line {
    shared(ctx, SYSCALLS).map_or_else(|l| l, |r| syscall_line(&r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;

    /// This VM: kairos's manifest of `collect system-overview -- kfaults 20000 2000 100`
    /// and perf stat of a separate run.
    fn recorded() -> KernelRuns {
        let so = serde_json::json!({
            "kernel_entries": {"context-switch": 44, "interrupt": 119, "kernel-page-fault": 20003, "syscall": 20041, "user-page-fault": 2058},
            "page_faults": 2061, "recording_faults": 99
        });
        let stat = "2060,,minor-faults,44578859,100.00,,\n0,,major-faults,44578859,100.00,,\n\
                    2056,,exceptions:page_fault_user,44578859,100.00,,\n20004,,exceptions:page_fault_kernel,44578859,100.00,,\n\
                    20042,,raw_syscalls:sys_enter,44578859,100.00,,\n";
        KernelRuns {
            kairos: kairos_figures(&so),
            perf: perf_figures(stat).unwrap_or_default(),
            truth: Some((20000, 2000)),
        }
    }

    #[test]
    fn the_recorded_runs_agree() {
        let r = recorded();
        assert_eq!(
            r.kairos,
            [Some(2061.0), Some(2058.0), Some(20003.0), Some(20041.0)]
        );
        assert_eq!(
            r.perf,
            [Some(2060.0), Some(2056.0), Some(20004.0), Some(20042.0)]
        );
        let l = fault_line(&r);
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        assert!(l.summary.contains("20000 kernel-mode"), "{}", l.summary);
        assert_eq!(syscall_line(&r).verdict, Verdict::Agrees);
    }

    #[test]
    fn the_recordings_own_faults_counted_as_the_programs_disagree() {
        // Were the 99 faults of kairos's own stack walks not left out.
        let mut r = recorded();
        r.kairos[2] = Some(20102.0);
        let l = fault_line(&r);
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text().starts_with(
                "fault entries from kernel mode 20102 vs 20004 (apart by 98, allowed 40)"
            ),
            "{}",
            l.figures_text()
        );
    }

    #[test]
    fn a_missing_figure_or_count_is_said() {
        let mut r = recorded();
        r.kairos[3] = None;
        assert_eq!(syscall_line(&r).verdict, Verdict::Disagrees);
        let e = perf_figures("<not supported>,,minor-faults,0,100.00,,\n")
            .err()
            .unwrap_or_default();
        assert_eq!(e, "perf stat could not count minor-faults: <not supported>");
        let e = perf_figures("").err().unwrap_or_default();
        assert_eq!(e, "perf stat printed no minor-faults count");
    }
}
