//! DRAM bandwidth from the uncore counters: kairos keeps a bandwidth timeline in every
//! result (bandwidth.json, 100 ms ticks); `perf stat -a -I 100` of the memory controllers
//! runs over the same stretch (started before kairos, stopped after it) while
//! `cache_thrash` streams through a buffer far larger than any cache. Each side's rate is
//! the median of its intervals at or above half its peak, which leaves out the idle ends
//! the two windows do not share. perf counts Intel's controllers by the kernel's own
//! `cas_count_read`/`cas_count_write` aliases (independent of kairos's perfmon files);
//! elsewhere it counts the very events kairos planned.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kairos_bandwidth::timeline::{Flow, Timeline};
use kairos_platform::names;

use super::{unavailable, Probe};
use crate::context::{Ctx, Running, Step};
use crate::perf_text::{self, StatRow};
use crate::verdict::{busy_rate, Figure, Line, Tolerance, Unit};

pub(crate) const NAME: &str = "uncore-bandwidth";
const DEVICES: &str = "/sys/bus/event_source/devices";
const SECONDS: &str = "2";
const TOLERANCE: Tolerance = Tolerance::Relative {
    fraction: 0.10,
    floor: 0.05e9,
};

/// One event perf counts, and what its count is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PerfEvent {
    pub spelling: String,
    pub flow: Flow,
    /// Bytes per count; None when perf scales it to a unit of its own (MiB).
    pub bytes_per_count: Option<f64>,
}

/// The kernel's aliases where the Intel controllers have them, else kairos's plan.
pub(crate) fn perf_events(devices: &Path) -> Result<Vec<PerfEvent>, String> {
    let alias = devices.join("uncore_imc_0/events/cas_count_read");
    if alias.is_file()
        && devices
            .join("uncore_imc_0/events/cas_count_write")
            .is_file()
    {
        return Ok(vec![
            PerfEvent {
                spelling: "uncore_imc/cas_count_read/".into(),
                flow: Flow::Read,
                bytes_per_count: None,
            },
            PerfEvent {
                spelling: "uncore_imc/cas_count_write/".into(),
                flow: Flow::Write,
                bytes_per_count: None,
            },
        ]);
    }
    let counters = kairos_plan(devices)?;
    Ok(counters
        .into_iter()
        .filter_map(|c| {
            let flow = match c.flow {
                kairos_bandwidth::counters::Flow::DramRead => Flow::Read,
                kairos_bandwidth::counters::Flow::DramWrite => Flow::Write,
                kairos_bandwidth::counters::Flow::DramAll => Flow::Total,
                kairos_bandwidth::counters::Flow::LinkTx => return None,
            };
            Some(PerfEvent {
                spelling: format!("{}/config={:#x}/", c.pmu, c.config),
                flow,
                bytes_per_count: Some(c.bytes_per_count),
            })
        })
        .collect())
}

/// The counters kairos's recorder plans here (the same choice as its `open_with_umc`).
fn kairos_plan(devices: &Path) -> Result<Vec<kairos_bandwidth::counters::Counter>, String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| kairos_mem_source::CpuId::from_cpuinfo(&t));
    let dirs = kairos_mem_source::perfmon_dir::candidates(None);
    let json = kairos_session::bandwidth::uncore_file(cpu.as_ref(), &dirs);
    let pmus = kairos_bandwidth::counters::discover(devices);
    let df = kairos_bandwidth::amd::df_pmu(devices);
    let umc = kairos_bandwidth::umc::discover(devices);
    if pmus.iter().any(|p| p.name.starts_with("uncore_imc_")) {
        json.and_then(|j| kairos_bandwidth::counters::plan(&pmus, &j))
    } else if !umc.is_empty() {
        let umc_json = match cpu.as_ref() {
            Some(c) => kairos_bandwidth::umc::memory_controller_file(c.family, c.model, &dirs),
            None => Err("/proc/cpuinfo does not say which CPU this is".into()),
        };
        kairos_bandwidth::umc::plan_amd(&umc, umc_json, df.as_ref(), json)
    } else if let Some(df) = df {
        json.and_then(|j| kairos_bandwidth::amd::plan_df(&df, &j))
    } else {
        Err("no uncore_imc, amd_umc or amd_df PMU here".into())
    }
}

/// Bytes of one row.
fn bytes(row: &StatRow, e: &PerfEvent) -> Option<f64> {
    let v = row.value?;
    Some(match row.unit.as_str() {
        "MiB" => v * 1024.0 * 1024.0,
        "MB" => v * 1e6,
        "GiB" => v * 1024.0 * 1024.0 * 1024.0,
        _ => v * e.bytes_per_count.unwrap_or(64.0),
    })
}

/// perf's rates per flow and interval, from `perf stat -I -x,` rows (in the order of
/// `events` within each interval).
pub(crate) fn perf_rates(text: &str, events: &[PerfEvent]) -> BTreeMap<Flow, Vec<f64>> {
    let rows = perf_text::stat_rows(text, true);
    let mut by_time: BTreeMap<u64, BTreeMap<Flow, f64>> = BTreeMap::new();
    let mut times: Vec<f64> = Vec::new();
    for chunk in rows.chunks(events.len().max(1)) {
        let Some(t) = chunk.first().and_then(|r| r.time) else {
            continue;
        };
        let key = (t * 1e6) as u64;
        if !times.contains(&t) {
            times.push(t);
        }
        for (r, e) in chunk.iter().zip(events) {
            if let Some(b) = bytes(r, e) {
                *by_time.entry(key).or_default().entry(e.flow).or_default() += b;
            }
        }
    }
    let mut out: BTreeMap<Flow, Vec<f64>> = BTreeMap::new();
    let mut prev = 0.0;
    for t in times {
        let len = t - prev;
        prev = t;
        let Some(m) = by_time.get(&((t * 1e6) as u64)) else {
            continue;
        };
        if len <= 0.0 {
            continue;
        }
        for (f, b) in m {
            out.entry(*f).or_default().push(b / len);
        }
    }
    out
}

/// kairos's rates per flow and tick, summed over domains.
pub(crate) fn kairos_rates(t: &Timeline) -> BTreeMap<Flow, Vec<f64>> {
    let mut by: BTreeMap<(Flow, u64), f64> = BTreeMap::new();
    for p in &t.points {
        *by.entry((p.flow, p.t_ns)).or_default() += p.bytes_per_s;
    }
    let mut out: BTreeMap<Flow, Vec<f64>> = BTreeMap::new();
    for ((f, _), r) in by {
        out.entry(f).or_default().push(r);
    }
    out
}

/// Read, write and their sum (or the total where only that is counted).
pub(crate) fn figures(
    ours: &BTreeMap<Flow, Vec<f64>>,
    perf: &BTreeMap<Flow, Vec<f64>>,
) -> Vec<Figure> {
    let sum = |m: &BTreeMap<Flow, Vec<f64>>| -> Vec<f64> {
        if let Some(t) = m.get(&Flow::Total) {
            return t.clone();
        }
        match (m.get(&Flow::Read), m.get(&Flow::Write)) {
            (Some(r), Some(w)) => r.iter().zip(w).map(|(a, b)| a + b).collect(),
            (Some(r), None) => r.clone(),
            _ => Vec::new(),
        }
    };
    let mut f = Vec::new();
    for (flow, label) in [(Flow::Read, "DRAM read"), (Flow::Write, "DRAM write")] {
        if let (Some(k), Some(p)) = (ours.get(&flow), perf.get(&flow)) {
            f.push(Figure::new(
                label,
                Unit::BytesPerSecond,
                busy_rate(k),
                busy_rate(p),
                TOLERANCE,
            ));
        }
    }
    f.push(Figure::new(
        "DRAM total",
        Unit::BytesPerSecond,
        busy_rate(&sum(ours)),
        busy_rate(&sum(perf)),
        TOLERANCE,
    ));
    f
}

fn intel() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| t.contains("GenuineIntel"))
}

pub(crate) fn check(ctx: &mut Ctx) -> Line {
    let run = || -> Step<Line> {
        let na = |why: String| Line::not_available(NAME, why);
        if let Err(why) = ctx.capability(names::UNCORE) {
            let probe = if intel() {
                Probe::Stat {
                    event: "uncore_imc/cas_count_read/".into(),
                    system_wide: true,
                }
            } else {
                Probe::Nothing("not tried: its memory-controller events depend on the CPU, and the kernel exposes no uncore PMU for them here".into())
            };
            return Err(unavailable(ctx, NAME, &why, probe, true));
        }
        ctx.perf_ready().map_err(na)?;
        let prog = ctx.sample("cache_thrash").map_err(na)?;
        let events = perf_events(Path::new(DEVICES))
            .map_err(|e| na(format!("no events for perf to count: {e}")))?;
        let against = format!(
            "perf stat -a -I 100 -e {} over the same run of cache_thrash --seconds {SECONDS}",
            events
                .iter()
                .map(|e| e.spelling.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        let csv = ctx.path("uncore.perf-stat.csv");
        let mut cmd = Command::new("perf");
        cmd.args(["stat", "-a", "-x,", "-I", "100", "-o"]).arg(&csv);
        for e in &events {
            cmd.args(["-e", &e.spelling]);
        }
        cmd.current_dir(&ctx.work);
        let mut perf = Running::start(cmd).map_err(na)?;
        std::thread::sleep(Duration::from_millis(300));
        if perf.ended() {
            let err = perf
                .wait(Duration::from_secs(5))
                .map(|o| o.stderr)
                .unwrap_or_default();
            return Err(na(format!(
                "perf stat refused: {}",
                perf_text::message(&err)
            )));
        }
        let dir = ctx.path(NAME);
        let collected = ctx.collect(
            "hotspots",
            &dir,
            &["event=cpu-clock"],
            &prog,
            &["--seconds", SECONDS],
        );
        let err = perf
            .interrupt(Duration::from_secs(10))
            .map(|o| o.stderr)
            .unwrap_or_default();
        collected.map_err(|e| Line::disagrees(NAME, &against, e))?;
        let text = std::fs::read_to_string(&csv).map_err(|e| {
            na(format!(
                "perf stat wrote no counts ({e}): {}",
                perf_text::message(&err)
            ))
        })?;
        let timeline = match Timeline::load(&dir) {
            Some(Ok(t)) => t,
            Some(Err(e)) => return Err(Line::disagrees(NAME, &against, e)),
            None => {
                return Err(Line::disagrees(
                    NAME,
                    &against,
                    "kairos kept no bandwidth timeline (bandwidth.json) in its result",
                ))
            }
        };
        if let Some(why) = &timeline.unavailable {
            return Err(na(format!("kairos recorded no bandwidth: {why}")));
        }
        if !timeline.source.starts_with("uncore") {
            return Err(na(format!(
                "kairos took its bandwidth from {}, not from the uncore counters",
                timeline.source
            )));
        }
        Ok(Line::judged(
            NAME,
            against,
            "bytes a second while the program streamed (the median of the intervals at or above half the peak), within 10% (at least 0.05 GB/s)",
            figures(&kairos_rates(&timeline), &perf_rates(&text, &events)),
        ))
    };
    run().unwrap_or_else(|l| l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;
    use kairos_bandwidth::timeline::Point;

    fn aliases() -> Vec<PerfEvent> {
        vec![
            PerfEvent {
                spelling: "uncore_imc/cas_count_read/".into(),
                flow: Flow::Read,
                bytes_per_count: None,
            },
            PerfEvent {
                spelling: "uncore_imc/cas_count_write/".into(),
                flow: Flow::Write,
                bytes_per_count: None,
            },
        ]
    }

    /// Made-up `perf stat -a -x, -I 100` output of a two-socket machine streaming at about
    /// 10 GB/s read and 5 GB/s write, with an idle first interval.
    fn perf_text(read_mib: f64) -> String {
        let mut s = String::from("#           time,counts,unit,events,...\n     0.100100,2.0,MiB,uncore_imc/cas_count_read/,800,100.00,,\n     0.100100,1.0,MiB,uncore_imc/cas_count_write/,800,100.00,,\n");
        for i in 2..=10 {
            let t = 0.1 * i as f64 + 0.0001;
            s.push_str(&format!("{t:.6},{read_mib},MiB,uncore_imc/cas_count_read/,800,100.00,,\n{t:.6},{},MiB,uncore_imc/cas_count_write/,800,100.00,,\n", read_mib / 2.0));
        }
        s
    }

    /// kairos's timeline of the same stretch: two sockets, read and write each.
    fn timeline(gbs_read: f64) -> Timeline {
        let mut t = Timeline {
            source: "uncore counters (Intel: ...)".into(),
            tick_ms: 100,
            domain: "socket".into(),
            ..Timeline::default()
        };
        for i in 0..12u64 {
            let busy = (2..11).contains(&i);
            for socket in 0..2 {
                for (flow, gbs) in [(Flow::Read, gbs_read), (Flow::Write, gbs_read / 2.0)] {
                    t.points.push(Point {
                        t_ns: i * 100_000_000,
                        dur_ns: 100_000_000,
                        domain: socket,
                        flow,
                        bytes_per_s: if busy { gbs * 1e9 / 2.0 } else { 1e6 },
                    });
                }
            }
        }
        t
    }

    #[test]
    fn perf_intervals_become_rates() {
        let r = perf_rates(&perf_text(953.674), &aliases());
        assert_eq!(r[&Flow::Read].len(), 10);
        // 953.674 MiB in 0.1 s: 10.0 GB/s.
        assert!(
            (busy_rate(&r[&Flow::Read]).unwrap_or(0.0) - 10.0e9).abs() < 1e7,
            "{:?}",
            r[&Flow::Read]
        );
        let k = kairos_rates(&timeline(10.0));
        assert_eq!(busy_rate(&k[&Flow::Read]), Some(10.0e9));
    }

    #[test]
    fn made_up_uncore_figures_agree_and_disagree_as_they_should() {
        let perf = perf_rates(&perf_text(953.674), &aliases());
        let l = Line::judged(
            NAME,
            "perf",
            "x",
            figures(&kairos_rates(&timeline(10.3)), &perf),
        );
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        assert_eq!(l.figures.len(), 3);
        // kairos counting one socket only: half the bandwidth.
        let l = Line::judged(
            NAME,
            "perf",
            "x",
            figures(&kairos_rates(&timeline(5.0)), &perf),
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text()
                .starts_with("DRAM read 5.00 GB/s vs 10.00 GB/s"),
            "{}",
            l.figures_text()
        );
        // Nothing recorded on kairos's side.
        let l = Line::judged(NAME, "perf", "x", figures(&BTreeMap::new(), &perf));
        assert_eq!(l.verdict, Verdict::Disagrees);
    }

    #[test]
    fn raw_events_are_scaled_by_their_bytes_per_count() {
        // Made-up AMD data-fabric counts: 64 bytes per request, reads and writes together.
        let events = vec![PerfEvent {
            spelling: "amd_df/config=0x7/".into(),
            flow: Flow::Total,
            bytes_per_count: Some(64.0),
        }];
        let text = "0.100000,15625000,,amd_df/config=0x7/,1,100.00,,\n0.200000,15625000,,amd_df/config=0x7/,1,100.00,,\n";
        let r = perf_rates(text, &events);
        assert_eq!(busy_rate(&r[&Flow::Total]), Some(10.0e9));
        // And the Intel aliases are found in sysfs before any plan.
        let tmp = tempfile::tempdir();
        if let Ok(tmp) = tmp {
            let ev = tmp.path().join("uncore_imc_0/events");
            assert!(std::fs::create_dir_all(&ev).is_ok());
            assert!(std::fs::write(ev.join("cas_count_read"), "event=0x04,umask=0x03").is_ok());
            assert!(std::fs::write(ev.join("cas_count_write"), "event=0x04,umask=0x0c").is_ok());
            assert_eq!(perf_events(tmp.path()).unwrap_or_default(), aliases());
        }
    }
}
