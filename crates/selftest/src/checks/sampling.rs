//! Sampling with cpu-clock and with hardware cycles: perf and kairos attach (`-p`) to the
//! same process, held stopped before its exec until both have, so both record the very
//! same run of transitions at the same rate; and the function shares of `kairos report
//! hotspots` are held against `perf report` restricted to the target's command: self
//! shares from perf's sample counts, total shares from its Children column.
//!
//! How far apart chance may put the two sides' shares depends on how their samples
//! relate. With cpu-clock both sample the same clock of the same task at the same period,
//! so their samples nearly coincide (here, 13,000 a side come out within 0.3 points of
//! each other): their errors are not independent, and the spread allowed is that of one
//! estimate from all the samples both took. With cycles, two counters overflow at
//! unrelated moments (kairos's period, perf's frequency): two independent estimates of
//! the one run, whose spreads add.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kairos_platform::names;

use super::{unavailable, Probe};
use crate::context::{self, table_rows, Ctx, Running, Step, RUN_LIMIT};
use crate::perf_text::{self, SymbolRow};
use crate::verdict::{share_tolerance, Figure, Line, Unit};

pub(crate) const CPU_CLOCK: &str = "cpu-clock";
pub(crate) const CYCLES: &str = "cycles";

/// transitions' iterations: about 1.4 s of run, long enough for thousands of samples.
const ITERATIONS: &str = "2000";
/// Shares at or above this, on either side, are compared.
const SHOWN: f64 = 1.0;
/// The least tolerance of a user function's share, in points; kernel functions get more
/// (their samples land in short paths where two timers placed apart disagree more).
const USER_FLOOR: f64 = 2.0;
const KERNEL_FLOOR: f64 = 3.0;
/// How long perf and kairos may take to attach.
const ATTACH_LIMIT: Duration = Duration::from_secs(30);

pub(crate) fn cpu_clock(ctx: &mut Ctx) -> Line {
    let run = || -> Step<Line> {
        ctx.capability(names::CPU_CLOCK)
            .map_err(|why| Line::not_available(CPU_CLOCK, format!("kairos: {why}")))?;
        // perf samples cpu-clock with a fixed period: the same 100 us as kairos.
        same_run(
            ctx,
            CPU_CLOCK,
            "cpu-clock",
            100,
            &["-c", "100000"],
            Pairing::SameClock,
        )
    };
    run().unwrap_or_else(|l| l)
}

pub(crate) fn cycles(ctx: &mut Ctx) -> Line {
    let run = || -> Step<Line> {
        if let Err(why) = ctx.capability(names::HARDWARE_PMU) {
            return Err(unavailable(
                ctx,
                CYCLES,
                &why,
                Probe::Stat {
                    event: "cycles".into(),
                    system_wide: false,
                },
                true,
            ));
        }
        // 250 us and perf's 4000 Hz: within the sample-rate limit the kernel lowers on busy
        // PMU machines.
        same_run(
            ctx,
            CYCLES,
            "cycles",
            250,
            &["-F", "4000"],
            Pairing::Independent,
        )
    };
    run().unwrap_or_else(|l| l)
}

/// Function to (self %, total %, kernel).
type Shares = BTreeMap<String, (f64, f64, bool)>;

/// How kairos's samples relate to perf's, which sets the spread chance gives their shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// The same clock of the same task at the same period: the samples nearly coincide,
    /// and the spread is that of one estimate from all the samples of both.
    SameClock,
    /// Samples at unrelated moments: two independent estimates, whose spreads add.
    Independent,
}

fn same_run(
    ctx: &Ctx,
    name: &str,
    event: &str,
    interval_us: u64,
    rate: &[&str],
    pairing: Pairing,
) -> Step<Line> {
    let c = Comparison {
        name,
        event,
        against: format!(
            "perf record -e {event} -g attached to the same run of transitions {ITERATIONS}"
        ),
    };
    let na = |why: String| Line::not_available(name, why);
    ctx.perf_ready().map_err(na)?;
    let prog = ctx.sample("transitions").map_err(na)?;
    let dir = ctx.path(name);
    let data = ctx.path(&format!("{name}.perf.data"));
    // The program waits before its exec until both have attached, then runs once under both.
    let target = context::stopped(&prog, &[ITERATIONS]).map_err(na)?;
    let pid = target.pid().to_string();
    let mut perf_cmd = Command::new("perf");
    perf_cmd
        .args(["record", "-q", "-g", "-e", event])
        .args(rate)
        .args(["-p", &pid, "-o"])
        .arg(&data)
        .current_dir(&ctx.work);
    let perf = Running::start(perf_cmd).map_err(na)?;
    let mut kairos_cmd = Command::new(&ctx.kairos);
    kairos_cmd
        .args(["collect", "hotspots", "-q", "-r"])
        .arg(&dir)
        .args([
            "-k",
            &format!("sampling-interval-us={interval_us}"),
            "-k",
            &format!("event={event}"),
            "-p",
            &pid,
        ])
        .current_dir(&ctx.work);
    let kairos = Running::start(kairos_cmd).map_err(na)?;
    let (perf, kairos) = c.wait_attached(perf, kairos)?;
    target.resume();
    let ran = target.wait(RUN_LIMIT).map_err(na)?;
    if !ran.ok() {
        return Err(na(format!(
            "transitions ended with status {:?}: {}",
            ran.code,
            ran.stderr.trim()
        )));
    }
    let k = kairos.wait(RUN_LIMIT).map_err(na)?;
    let p = perf.wait(RUN_LIMIT).map_err(na)?;
    if !k.ok() || !dir.join("manifest.json").is_file() {
        return Err(c.kairos_failed(&k));
    }
    if !p.ok() || !data.is_file() {
        return Err(na(format!(
            "perf record -e {event} failed: {}",
            perf_text::message(&p.stderr)
        )));
    }
    c.judge(ctx, &dir, data, pairing)
}

/// One run recorded by perf and kairos at once.
struct Comparison<'a> {
    name: &'a str,
    event: &'a str,
    /// What kairos is held against.
    against: String,
}

impl Comparison<'_> {
    fn na(&self, why: String) -> Line {
        Line::not_available(self.name, why)
    }

    fn kairos_failed(&self, o: &context::Output) -> Line {
        Line::disagrees(
            self.name,
            &self.against,
            format!("kairos collect hotspots -p failed: {}", o.kairos_sentence()),
        )
    }

    /// Until both hold their events for two looks 100 ms apart (kairos's capability probe
    /// opens and closes some at once at its start); Err when either ends first or the
    /// wait is too long.
    fn wait_attached(&self, mut perf: Running, mut kairos: Running) -> Step<(Running, Running)> {
        let deadline = Instant::now() + ATTACH_LIMIT;
        let mut held = 0;
        while held < 2 {
            if kairos.ended() {
                let o = kairos.wait(RUN_LIMIT).unwrap_or_default();
                return Err(self.kairos_failed(&o));
            }
            if perf.ended() {
                let o = perf.wait(RUN_LIMIT).unwrap_or_default();
                return Err(self.na(format!(
                    "perf record -e {} -p failed: {}",
                    self.event,
                    perf_text::message(&o.stderr)
                )));
            }
            if Instant::now() > deadline {
                return Err(self.na(format!(
                    "perf and kairos did not both attach within {} s",
                    ATTACH_LIMIT.as_secs()
                )));
            }
            held = if context::perf_events_open(perf.pid()) > 0
                && context::perf_events_open(kairos.pid()) > 0
            {
                held + 1
            } else {
                0
            };
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok((perf, kairos))
    }

    /// Holds kairos's function shares (from its result `dir`) against perf's (from
    /// `perf report` of `data`).
    fn judge(&self, ctx: &Ctx, dir: &Path, data: PathBuf, pairing: Pairing) -> Step<Line> {
        let report: Vec<OsString> = [
            "report",
            "--stdio",
            "-q",
            "--children",
            "-n",
            "--sort",
            "sym",
            "-g",
            "none",
            "--percentage",
            "relative",
            "--comm",
            "transitions",
            "-i",
        ]
        .iter()
        .map(OsString::from)
        .chain([data.into()])
        .collect();
        let rep = ctx.perf(&report).map_err(|e| self.na(e))?;
        if !rep.ok() {
            return Err(self.na(format!(
                "perf report failed: {}",
                perf_text::message(&rep.stderr)
            )));
        }
        let (perf, perf_n) = perf_shares(&perf_text::report_rows(&rep.stdout));
        let doc = ctx
            .report_json("hotspots", dir)
            .map_err(|e| Line::disagrees(self.name, &self.against, e))?;
        let (ours, ours_n) = kairos_shares(&doc);
        if perf_n == 0 {
            return Err(self.na(format!(
                "perf recorded no samples of transitions ({})",
                perf_text::message(&rep.stderr)
            )));
        }
        let figures = compare_paired(&ours, ours_n, &perf, perf_n, pairing);
        Ok(Line::judged(
            self.name,
            &self.against,
            format!(
                "self and total shares of each function at {SHOWN}% or more, kairos ({ours_n} samples) vs perf ({perf_n} samples), within {USER_FLOOR} points ({KERNEL_FLOOR} for kernel functions) or 3 standard deviations"
            ),
            figures,
        ))
    }
}

/// perf's shares: self from its sample counts (the Self column's base differs slightly
/// with --children), total from the Children column. Also the number of samples.
pub(crate) fn perf_shares(rows: &[SymbolRow]) -> (Shares, u64) {
    let n: u64 = rows.iter().filter_map(|r| r.samples).sum();
    let mut out = Shares::new();
    for r in rows {
        let e = out.entry(r.symbol.clone()).or_insert((0.0, 0.0, r.kernel));
        if n > 0 {
            e.0 += 100.0 * r.samples.unwrap_or(0) as f64 / n as f64;
        }
        e.1 += r.children.unwrap_or(r.self_percent);
    }
    (out, n)
}

/// kairos's shares from `report hotspots --format json`: Self % and Total % by function
/// (summed over modules of the same name), and the number of samples.
pub(crate) fn kairos_shares(doc: &serde_json::Value) -> (Shares, u64) {
    let mut out = Shares::new();
    let mut n = 0;
    for r in table_rows(doc, "") {
        let Some(f) = r["Function"].as_str() else {
            continue;
        };
        let kernel = r["Module"]
            .as_str()
            .is_some_and(|m| m.starts_with("[kernel"));
        let e = out.entry(f.to_string()).or_insert((0.0, 0.0, kernel));
        e.0 += r["Self %"].as_f64().unwrap_or(0.0);
        e.1 += r["Total %"].as_f64().unwrap_or(0.0);
        n += r["Self samples"].as_u64().unwrap_or(0);
    }
    (out, n)
}

/// [`compare_paired`] for samples of the same clock (cpu-clock), as the recorded figures
/// are checked.
#[cfg(test)]
pub(crate) fn compare(ours: &Shares, ours_n: u64, perf: &Shares, perf_n: u64) -> Vec<Figure> {
    compare_paired(ours, ours_n, perf, perf_n, Pairing::SameClock)
}

/// Every function at `SHOWN`% or more on either side, self and total, for samples related
/// as `pairing` says.
pub(crate) fn compare_paired(
    ours: &Shares,
    ours_n: u64,
    perf: &Shares,
    perf_n: u64,
    pairing: Pairing,
) -> Vec<Figure> {
    let (n, n_reference) = match pairing {
        Pairing::SameClock => (ours_n.saturating_add(perf_n), 0),
        Pairing::Independent => (ours_n, perf_n),
    };
    let mut names: Vec<&String> = ours.keys().chain(perf.keys()).collect();
    names.sort();
    names.dedup();
    let mut figures = Vec::new();
    for (col, label) in [(0, "self"), (1, "total")] {
        let get = |m: &Shares, f: &str| m.get(f).map_or(0.0, |v| if col == 0 { v.0 } else { v.1 });
        let mut rows: Vec<(&String, f64, f64, bool)> = names
            .iter()
            .map(|f| {
                let kernel = ours.get(*f).or(perf.get(*f)).is_some_and(|v| v.2);
                (*f, get(ours, f), get(perf, f), kernel)
            })
            .filter(|(_, k, p, _)| *k >= SHOWN || *p >= SHOWN)
            .collect();
        rows.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        for (f, k, p, kernel) in rows {
            let floor = if kernel { KERNEL_FLOOR } else { USER_FLOOR };
            figures.push(Figure::new(
                format!("{f} {label}"),
                Unit::Percent,
                Some(k),
                Some(p),
                share_tolerance(p.min(100.0), n, n_reference, floor),
            ));
        }
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;

    /// perf 6.1 on this VM, `perf record -g -e cpu-clock -c 100000` around kairos on
    /// transitions 2000, and kairos's report of the same run (the top rows).
    const PERF: &str = "   100.46%     0.00%             0  [.] main\n\
        \x20   41.50%     0.11%             4  [.] p3_f1\n\
        \x20   29.99%    29.91%          1048  [.] F2\n\
        \x20   29.14%    28.88%          1012  [.] p3_C\n\
        \x20   12.21%    12.13%           425  [.] p3_B\n\
        \x20   10.64%    10.59%           371  [.] F1\n\
        \x20    9.39%     9.19%           322  [.] F3\n\
        \x20    8.90%     8.82%           309  [.] calibrate\n\
        \x20    0.34%     0.03%            13  [k] do_mprotect_pkey\n";

    fn kairos_doc(f2_self: f64) -> serde_json::Value {
        serde_json::json!([
            {"Function": "F2", "Module": "transitions", "Self samples": 1040, "Self %": f2_self, "Total %": f2_self + 0.1},
            {"Function": "p3_C", "Module": "transitions", "Self samples": 993, "Self %": 28.16, "Total %": 28.64},
            {"Function": "p3_B", "Module": "transitions", "Self samples": 432, "Self %": 12.25, "Total %": 12.42},
            {"Function": "F1", "Module": "transitions", "Self samples": 374, "Self %": 10.61, "Total %": 10.66},
            {"Function": "F3", "Module": "transitions", "Self samples": 320, "Self %": 9.08, "Total %": 9.36},
            {"Function": "calibrate", "Module": "transitions", "Self samples": 309, "Self %": 8.76, "Total %": 8.82},
            {"Function": "p3_f1", "Module": "transitions", "Self samples": 1, "Self %": 0.03, "Total %": 41.12},
            {"Function": "asm_sysvec_apic_timer_interrupt", "Module": "[kernel.kallsyms]", "Self samples": 0, "Self %": 0.0, "Total %": 1.16},
            {"Function": "main", "Module": "transitions", "Self samples": 0, "Self %": 0.0, "Total %": 99.69}
        ])
    }

    #[test]
    fn the_recorded_run_agrees() {
        let (perf, pn) = perf_shares(&perf_text::report_rows(PERF));
        assert_eq!(pn, 3504);
        assert!((perf["F2"].0 - 29.91).abs() < 0.01, "{:?}", perf["F2"]);
        let (ours, on) = kairos_shares(&kairos_doc(29.50));
        assert_eq!(on, 3469);
        let figures = compare(&ours, on, &perf, pn);
        let l = Line::judged(CPU_CLOCK, "perf", "shares", figures);
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        // Self: the six busy functions; total: those, p3_f1, main and the kernel's timer
        // interrupt that kairos alone puts at 1% (perf at 0, within the kernel's 3 points).
        assert_eq!(
            l.figures
                .iter()
                .filter(|f| f.what.ends_with(" self"))
                .count(),
            6
        );
        assert!(l
            .figures
            .iter()
            .any(|f| f.what == "asm_sysvec_apic_timer_interrupt total"));
        assert!(
            l.figures_text().starts_with("F2 self 29.5% vs 29.9%"),
            "{}",
            l.figures_text()
        );
    }

    #[test]
    fn a_function_off_by_more_than_the_tolerance_disagrees() {
        let (perf, pn) = perf_shares(&perf_text::report_rows(PERF));
        let (ours, on) = kairos_shares(&kairos_doc(33.0));
        let l = Line::judged(CPU_CLOCK, "perf", "shares", compare(&ours, on, &perf, pn));
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text()
                .starts_with("F2 self 33.0% vs 29.9% (apart by 3.1 points, allowed 2.0 points)"),
            "{}",
            l.figures_text()
        );
    }

    #[test]
    fn a_function_only_one_side_saw_is_compared_against_zero() {
        let (perf, pn) = perf_shares(&perf_text::report_rows(PERF));
        let mut doc = kairos_doc(29.5);
        if let Some(rows) = doc.as_array_mut() {
            rows.push(serde_json::json!({"Function": "phantom", "Module": "transitions", "Self samples": 200, "Self %": 5.5, "Total %": 5.5}));
        }
        let (ours, on) = kairos_shares(&doc);
        let l = Line::judged(CPU_CLOCK, "perf", "shares", compare(&ours, on, &perf, pn));
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text().contains("phantom self 5.5% vs 0.0%"),
            "{}",
            l.figures_text()
        );
    }

    /// Made-up figures of a machine with a PMU (cycles: a few hundred samples only), to
    /// show the tolerance widening with few samples: 4 points apart is within 3 sigma.
    #[test]
    fn few_samples_widen_the_tolerance() {
        let mut perf = Shares::new();
        perf.insert("F2".into(), (30.0, 30.0, false));
        let mut ours = Shares::new();
        ours.insert("F2".into(), (34.0, 34.0, false));
        let l = Line::judged(CYCLES, "perf", "shares", compare(&ours, 300, &perf, 300));
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        let l = Line::judged(
            CYCLES,
            "perf",
            "shares",
            compare(&ours, 30_000, &perf, 30_000),
        );
        assert_eq!(l.verdict, Verdict::Disagrees, "{}", l.figures_text()); // Samples at unrelated moments (cycles) allow more: at 1,000 a side, 5 points
                                                                           // apart is within their added spreads (6.1 points), not within one estimate's
                                                                           // from 2,000 samples (3.1).
        let mut far = Shares::new();
        far.insert("F2".into(), (35.0, 35.0, false));
        let apart = |pairing| {
            Line::judged(
                CYCLES,
                "perf",
                "shares",
                compare_paired(&far, 1_000, &perf, 1_000, pairing),
            )
            .verdict
        };
        assert_eq!(apart(Pairing::Independent), Verdict::Agrees);
        assert_eq!(apart(Pairing::SameClock), Verdict::Disagrees);
    }
}
