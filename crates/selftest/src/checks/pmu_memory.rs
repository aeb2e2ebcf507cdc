//! The PMU's memory sampling (PEBS load latency, AMD IBS) and the memory-bound (TMA)
//! counters, from one `kairos collect memory-access -k source=pmu` run of `matrix 512
//! naive` (its three matrices' addresses printed by the program), against separate perf
//! runs of the same program: `perf mem -t load record` for the load addresses and
//! latencies, and `perf stat` of the very counter groups kairos plans, put through the
//! same TMA formulas.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use kairos_analysis_memory_access::tma::{constants_here, Figures, MemoryBoundResult};
use kairos_analysis_memory_access::Source;
use kairos_mem_source::perfmon_events::{Encoded, Kind};
use kairos_mem_source::tma::MemoryBound;
use kairos_platform::names;

use super::{unavailable, Probe};
use crate::context::{Ctx, Step};
use crate::perf_text::{self, MemSample};
use crate::programs::{self, Range};
use crate::shared_runs::PmuMemoryRun;
use crate::verdict::{median, share_tolerance, Figure, Line, Tolerance, Unit};

pub(crate) const NAME: &str = "pebs-ibs";
pub(crate) const TMA: &str = "tma";

const PROGRAM: &str = "matrix";
const ARGS: [&str; 2] = ["512", "naive"];
/// The least tolerance of a matrix's share of the loads, points.
const SHARE_FLOOR: f64 = 3.0;
/// TMA figures are percent of slots or clocks of two runs: this many points apart at most.
const TMA_POINTS: f64 = 5.0;

fn program_line() -> String {
    format!("{PROGRAM} {}", ARGS.join(" "))
}

fn pmu_reason(ctx: &Ctx) -> Option<String> {
    match (ctx.capability(names::PEBS), ctx.capability(names::IBS)) {
        (Ok(()), _) | (_, Ok(())) => None,
        (Err(p), Err(i)) => Some(format!("PEBS: {p}; IBS: {i}")),
    }
}

fn collect(ctx: &Ctx) -> Step<PmuMemoryRun> {
    let na = |why: String| Line::not_available(NAME, why);
    if let Some(why) = pmu_reason(ctx) {
        return Err(unavailable(ctx, NAME, &why, Probe::Mem, true));
    }
    let prog = ctx.sample(PROGRAM).map_err(na)?;
    let dir = ctx.path("pmu-memory");
    let knobs = ["source=pmu", "numa=off", "track-allocations=off"];
    match ctx.collect("memory-access", &dir, &knobs, &prog, &ARGS) {
        Ok(output) => Ok(PmuMemoryRun {
            dir,
            stdout: output.stdout,
        }),
        Err(e) => Err(Line::disagrees(
            NAME,
            format!(
                "kairos info, which says this machine has PEBS or IBS, on {}",
                program_line()
            ),
            e,
        )),
    }
}

/// The shared run; a failure is reported under the asking check's name.
fn shared(ctx: &mut Ctx, name: &str) -> Step<PmuMemoryRun> {
    if ctx.pmu_memory.is_none() {
        ctx.pmu_memory = Some(collect(ctx));
    }
    match ctx
        .pmu_memory
        .clone()
        .unwrap_or_else(|| Err(Line::not_available(NAME, "not run")))
    {
        Ok(r) => Ok(r),
        Err(mut l) => {
            if l.name != name {
                l.name = name.to_string();
                l.summary = format!("kairos counts them during memory-access -k source=pmu, which could not run: {}", l.summary);
            }
            Err(l)
        }
    }
}

/// What one side's load samples say: each matrix's share of the loads in the matrices,
/// the share outside them, and the median latency.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Loads {
    pub in_matrices: u64,
    pub total: u64,
    /// Per range, percent of `in_matrices`.
    pub shares: Vec<f64>,
    pub median_latency: Option<f64>,
}

pub(crate) fn loads(samples: &[(u64, u64)], ranges: &[Range]) -> Loads {
    let (shares, in_matrices) = super::memory::shares(samples.iter().map(|s| s.0), ranges);
    let lat: Vec<f64> = samples.iter().map(|s| s.1 as f64).collect();
    Loads {
        in_matrices,
        total: samples.len() as u64,
        shares,
        median_latency: median(&lat),
    }
}

pub(crate) fn load_figures(
    ranges: &[Range],
    ours: &Loads,
    perf: &Loads,
    latency: bool,
) -> Vec<Figure> {
    let outside = |l: &Loads| {
        (l.total > 0).then(|| 100.0 * (l.total - l.in_matrices) as f64 / l.total as f64)
    };
    let mut f: Vec<Figure> = ranges
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (k, p) = (ours.shares.get(i).copied(), perf.shares.get(i).copied());
            Figure::new(
                format!("loads in {}", r.name),
                Unit::Percent,
                k.filter(|_| ours.in_matrices > 0),
                p.filter(|_| perf.in_matrices > 0),
                share_tolerance(
                    p.unwrap_or(50.0),
                    ours.in_matrices,
                    perf.in_matrices,
                    SHARE_FLOOR,
                ),
            )
        })
        .collect();
    f.push(Figure::new(
        "loads outside the matrices",
        Unit::Percent,
        outside(ours),
        outside(perf),
        share_tolerance(
            outside(perf).unwrap_or(50.0),
            ours.total,
            perf.total,
            SHARE_FLOOR,
        ),
    ));
    if latency {
        f.push(Figure::new(
            "median load latency",
            Unit::Cycles,
            ours.median_latency,
            perf.median_latency,
            Tolerance::Relative {
                fraction: 0.25,
                floor: 5.0,
            },
        ));
    }
    f
}

pub(crate) fn check(ctx: &mut Ctx) -> Line {
    check_steps(ctx).unwrap_or_else(|l| l)
}

fn check_steps(ctx: &mut Ctx) -> Step<Line> {
    {
        let na = |why: String| Line::not_available(NAME, why);
        if let Some(why) = pmu_reason(ctx) {
            return Err(unavailable(ctx, NAME, &why, Probe::Mem, true));
        }
        ctx.perf_ready().map_err(na)?;
        let kairos = shared(ctx, NAME)?;
        let against = format!(
            "perf mem -t load record on a separate run of {}",
            program_line()
        );
        let ranges = programs::matrix_ranges(&kairos.stdout).ok_or_else(|| {
            na(format!(
                "{PROGRAM} did not print its matrices: {}",
                kairos.stdout.trim()
            ))
        })?;
        let built = kairos_analysis_memory_access::tables::read(&kairos.dir.join("tables"))
            .map_err(|e| {
                Line::disagrees(
                    NAME,
                    &against,
                    format!("kairos's accesses cannot be read: {e}"),
                )
            })?;
        let ours: Vec<(u64, u64)> = built
            .samples
            .iter()
            .filter(|s| s.source == Source::Pmu && s.direction.reads())
            .map(|s| (s.addr, s.weight))
            .collect();
        // perf's run, with the addresses its own run of the program printed.
        let data = ctx.path("pebs-ibs.perf.data");
        let prog = ctx.sample(PROGRAM).map_err(na)?;
        let rec: Vec<OsString> = ["mem", "-t", "load", "record", "-o"]
            .iter()
            .map(OsString::from)
            .chain([data.clone().into(), "--".into(), prog.into()])
            .chain(ARGS.iter().map(OsString::from))
            .collect();
        let o = ctx.perf(&rec).map_err(na)?;
        if !o.ok() {
            return Err(na(format!(
                "perf mem record failed: {}",
                perf_text::message(&o.stderr)
            )));
        }
        let perf_ranges = programs::matrix_ranges(&o.stdout).ok_or_else(|| {
            na(format!(
                "{PROGRAM} under perf did not print its matrices: {}",
                o.stdout.trim()
            ))
        })?;
        let dump: Vec<OsString> = ["mem", "-D", "-x,", "report", "-i"]
            .iter()
            .map(OsString::from)
            .chain([data.into()])
            .collect();
        let d = ctx.perf(&dump).map_err(na)?;
        if !d.ok() {
            return Err(na(format!(
                "perf mem report failed: {}",
                perf_text::message(&d.stderr)
            )));
        }
        let perf: Vec<(u64, u64)> = perf_text::mem_samples(&d.stdout)
            .iter()
            .filter(|s| s.is_load())
            .map(|s: &MemSample| (s.addr, s.weight))
            .collect();
        // IBS reports latency only for some ops, and differently: compared for PEBS.
        let pebs = ctx.capability(names::PEBS).is_ok();
        let (k, p) = (loads(&ours, &ranges), loads(&perf, &perf_ranges));
        Ok(Line::judged(
            NAME,
            against,
            format!(
                "load samples, kairos {} ({} in the matrices) vs perf {} ({}): each matrix's share within {SHARE_FLOOR} points or 3 standard deviations{}",
                k.total,
                k.in_matrices,
                p.total,
                p.in_matrices,
                if pebs { ", median latency within 25% (at least 5 cycles)" } else { "" }
            ),
            load_figures(&ranges, &k, &p, pebs),
        ))
    }
}

/// kairos's memory-bound figures against those of perf's counts.
pub(crate) fn tma_figures(ours: &Figures, perf: &MemoryBound) -> Vec<Figure> {
    let pts = Tolerance::Absolute(TMA_POINTS);
    let mut f = vec![Figure::new(
        "Memory_Bound",
        Unit::Percent,
        Some(ours.memory_bound),
        Some(perf.memory_bound),
        pts,
    )];
    for (name, v) in &ours.split {
        let p = perf
            .split
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, _, x)| *x);
        f.push(Figure::new(name.clone(), Unit::Percent, Some(*v), p, pts));
    }
    f
}

/// perf's spelling of a kairos counter, on the big cores' PMU of a hybrid CPU.
pub(crate) fn perf_event(e: &Encoded, hybrid: bool) -> String {
    let s = e.perf_spelling();
    match (hybrid, e.kind) {
        (false, _) => s,
        (true, Kind::Hardware) => format!("cpu_core/{s}/"),
        (true, _) => s.replacen("cpu/", "cpu_core/", 1),
    }
}

/// Counts by metric-file name from perf stat's rows, in the order the events were given.
pub(crate) fn tma_counts(names: &[String], stat: &str) -> Result<HashMap<String, f64>, String> {
    let rows = perf_text::stat_rows(stat, false);
    if rows.len() != names.len() {
        return Err(format!(
            "perf stat printed {} counts for {} events",
            rows.len(),
            names.len()
        ));
    }
    let mut out = HashMap::new();
    for (n, r) in names.iter().zip(rows) {
        let v = r.value.ok_or_else(|| {
            format!(
                "perf stat could not count {n} ({}): {}",
                r.event,
                r.note.unwrap_or_default()
            )
        })?;
        out.entry(n.clone()).or_insert(v);
    }
    Ok(out)
}

fn perf_tma(ctx: &Ctx, perfmon: Option<&Path>, prog: &Path) -> Result<MemoryBound, String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| kairos_mem_source::CpuId::from_cpuinfo(&t))
        .ok_or("/proc/cpuinfo does not say which CPU this is")?;
    let files = kairos_mem_source::perfmon_dir::load_for(
        &cpu,
        &kairos_mem_source::perfmon_dir::candidates(perfmon),
    )?;
    let groups = kairos_mem_source::tma::plan(&files.metrics, &files.events, 4)
        .map_err(|e| e.to_string())?;
    let hybrid = Path::new(kairos_mem_source::choice::DEVICES)
        .join("cpu_core")
        .is_dir();
    let mut args: Vec<OsString> = vec!["stat".into(), "-x,".into()];
    let mut names = Vec::new();
    for g in &groups {
        let members: Vec<&Encoded> = std::iter::once(&g.leader).chain(&g.members).collect();
        names.extend(members.iter().map(|e| e.name.clone()));
        let spelled: Vec<String> = members.iter().map(|e| perf_event(e, hybrid)).collect();
        args.push("-e".into());
        args.push(format!("{{{}}}", spelled.join(",")).into());
    }
    args.push("--".into());
    args.push(prog.into());
    args.extend(ARGS.iter().map(OsString::from));
    let o = ctx.perf(&args)?;
    if !o.ok() {
        return Err(format!(
            "perf stat failed: {}",
            perf_text::message(&o.stderr)
        ));
    }
    let counts = tma_counts(&names, &o.stderr)?;
    kairos_mem_source::tma::memory_bound(&files.metrics, &counts, &constants_here())
        .map_err(|e| e.to_string())
}

pub(crate) fn tma(ctx: &mut Ctx) -> Line {
    tma_steps(ctx).unwrap_or_else(|l| l)
}

fn tma_steps(ctx: &mut Ctx) -> Step<Line> {
    {
        let na = |why: String| Line::not_available(TMA, why);
        if let Err(why) = ctx.capability(names::TMA_COUNTERS) {
            return Err(unavailable(
                ctx,
                TMA,
                &why,
                Probe::Stat {
                    event: "cycles".into(),
                    system_wide: false,
                },
                false,
            ));
        }
        ctx.perf_ready().map_err(na)?;
        let kairos = shared(ctx, TMA)?;
        let extra = kairos_result::ResultDir::open(&kairos.dir)
            .map(|d| {
                d.manifest()
                    .extra
                    .get("memory_access")
                    .cloned()
                    .unwrap_or_default()
            })
            .unwrap_or_default();
        let ours: MemoryBoundResult =
            match std::fs::read(kairos.dir.join(kairos_analysis_memory_access::tma::FILE))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
            {
                Some(r) => r,
                None => {
                    let why = extra["memory_bound"]
                        .as_str()
                        .unwrap_or("no memory_bound.json in the result");
                    return Err(na(format!("kairos did not measure them: {why}")));
                }
            };
        let prog = ctx.sample(PROGRAM).map_err(na)?;
        let perfmon = extra["perfmon_dir"].as_str().map(PathBuf::from);
        let perf = perf_tma(ctx, perfmon.as_deref(), &prog).map_err(na)?;
        Ok(Line::judged(
            TMA,
            format!("perf stat of the same counter groups on a separate run of {}, through the same formulas", program_line()),
            format!("percent of slots (Memory_Bound) and of clocks (its split), within {TMA_POINTS} points; kairos counted in {} group(s)", ours.groups),
            tma_figures(&ours.overall, &perf),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;
    use kairos_mem_source::tma::Part;

    fn ranges() -> Vec<Range> {
        ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, n)| Range {
                name: n.to_string(),
                start: (i as u64 + 1) << 20,
                len: 1 << 20,
            })
            .collect()
    }

    /// Made-up samples of a PEBS machine (matrix 512 naive: the column walk over b is what
    /// misses), for the verdicts only.
    fn made_up(b: u64, a: u64, outside: u64, latency: u64) -> Vec<(u64, u64)> {
        std::iter::repeat_n(((2 << 20) + 64, latency), b as usize)
            .chain(std::iter::repeat_n(((1 << 20) + 8, latency), a as usize))
            .chain(std::iter::repeat_n(
                (0x7ffd_0000_0000, latency),
                outside as usize,
            ))
            .collect()
    }

    #[test]
    fn made_up_pebs_figures_agree_and_disagree_as_they_should() {
        let perf = loads(&made_up(9000, 500, 500, 60), &ranges());
        assert_eq!((perf.in_matrices, perf.total), (9500, 10000));
        let ours = loads(&made_up(8900, 550, 480, 58), &ranges());
        let l = Line::judged(
            NAME,
            "perf",
            "x",
            load_figures(&ranges(), &ours, &perf, true),
        );
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        // Addresses off by a page: they fall outside the matrices.
        let wrong = loads(&made_up(4000, 500, 5500, 58), &ranges());
        let l = Line::judged(
            NAME,
            "perf",
            "x",
            load_figures(&ranges(), &wrong, &perf, true),
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text()
                .contains("loads outside the matrices 55.0% vs 5.0%"),
            "{}",
            l.figures_text()
        );
        // Latency read from the wrong field.
        let l = Line::judged(
            NAME,
            "perf",
            "x",
            load_figures(
                &ranges(),
                &loads(&made_up(8900, 550, 480, 0), &ranges()),
                &perf,
                true,
            ),
        );
        assert!(
            l.figures_text()
                .starts_with("median load latency 0 cycles vs 60 cycles"),
            "{}",
            l.figures_text()
        );
        // No samples on kairos's side.
        let l = Line::judged(
            NAME,
            "perf",
            "x",
            load_figures(&ranges(), &loads(&[], &ranges()), &perf, false),
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
    }

    #[test]
    fn made_up_tma_figures_compare_by_name() {
        let ours = Figures {
            memory_bound: 41.0,
            split: vec![("L1_Bound".into(), 8.0), ("DRAM_Bound".into(), 25.0)],
        };
        let perf = MemoryBound {
            memory_bound: 43.5,
            split: vec![
                ("DRAM_Bound".into(), Part::Dram, 27.0),
                ("L1_Bound".into(), Part::L1, 7.0),
            ],
        };
        let l = Line::judged(TMA, "perf", "x", tma_figures(&ours, &perf));
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        let far = MemoryBound {
            memory_bound: 60.0,
            ..perf.clone()
        };
        let l = Line::judged(TMA, "perf", "x", tma_figures(&ours, &far));
        assert!(
            l.figures_text()
                .starts_with("Memory_Bound 41.0% vs 60.0% (apart by 19.0 points"),
            "{}",
            l.figures_text()
        );
        let missing = MemoryBound {
            split: Vec::new(),
            ..perf
        };
        assert_eq!(
            Line::judged(TMA, "perf", "x", tma_figures(&ours, &missing)).verdict,
            Verdict::Disagrees
        );
    }

    #[test]
    fn tma_counts_follow_the_order_given() {
        // Made-up perf stat output of two groups sharing cycles (the first count is kept).
        let names: Vec<String> = [
            "TOPDOWN.SLOTS:perf_metrics",
            "PERF_METRICS.BACKEND_BOUND",
            "CPU_CLK_UNHALTED.THREAD",
            "CPU_CLK_UNHALTED.THREAD",
            "CYCLE_ACTIVITY.STALLS_L1D_MISS",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let stat = "6000000,,cpu/event=0x0,umask=0x4/,1,100.00,,\n2000000,,cpu/event=0x0,umask=0x83/,1,100.00,,\n1000000,,cycles,1,100.00,,\n\
                    1000100,,cycles,1,50.00,,\n300000,,cpu/event=0xa3,umask=0xc,cmask=0xc/,1,50.00,,\n";
        let c = tma_counts(&names, stat).unwrap_or_default();
        assert_eq!(c["CPU_CLK_UNHALTED.THREAD"], 1_000_000.0);
        assert_eq!(c["CYCLE_ACTIVITY.STALLS_L1D_MISS"], 300_000.0);
        assert!(tma_counts(&names[..2], stat).is_err());
        let refused = "<not supported>,,cycles,0,100.00,,\n";
        assert_eq!(
            tma_counts(&names[2..3], refused).err().unwrap_or_default(),
            "perf stat could not count CPU_CLK_UNHALTED.THREAD (cycles): <not supported>"
        );
    }

    #[test]
    fn hybrid_cpus_count_on_the_big_cores() {
        let raw = Encoded {
            name: "X".into(),
            kind: Kind::Raw,
            config: 0x0ca3,
            config1: 0,
            fixed: false,
        };
        assert_eq!(perf_event(&raw, false), "cpu/event=0xa3,umask=0xc/");
        assert_eq!(perf_event(&raw, true), "cpu_core/event=0xa3,umask=0xc/");
        let cyc = Encoded {
            name: "CPU_CLK_UNHALTED.THREAD".into(),
            kind: Kind::Hardware,
            config: 0,
            config1: 0,
            fixed: true,
        };
        assert_eq!(perf_event(&cyc, true), "cpu_core/cycles/");
    }
}
