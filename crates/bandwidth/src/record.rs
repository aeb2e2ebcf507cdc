//! Recording bandwidth during a collection: a thread reads the best source this machine
//! has (uncore memory-controller and link counters, else resctrl MBM) at a fixed tick and
//! keeps a [`Timeline`]; with neither, the timeline says why.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::counters::{discover, plan};
use crate::sampler::Sampler;
use crate::timeline::{ChannelPoint, Flow, Point, Timeline};

/// Where to look (tests give recorded trees).
pub struct Places {
    /// `/sys/bus/event_source/devices`.
    pub pmus: PathBuf,
    /// `/sys/devices/system/cpu`, for each CPU's socket.
    pub cpus: PathBuf,
    pub resctrl: PathBuf,
}

impl Default for Places {
    fn default() -> Self {
        Places {
            pmus: "/sys/bus/event_source/devices".into(),
            cpus: "/sys/devices/system/cpu".into(),
            resctrl: "/sys/fs/resctrl".into(),
        }
    }
}

/// A source, opened.
pub enum Source {
    Uncore(Sampler),
    Mbm(PathBuf),
}

impl Source {
    pub fn name(&self) -> &'static str {
        match self {
            Source::Uncore(_) => "uncore counters (Intel: memory-controller CAS x 64 bytes, socket-link data flits x 64/9 bytes; AMD: memory-controller (amd_umc) CAS x 64 bytes per channel, else data-fabric DRAM requests x 64 bytes; link data packets x 32 bytes)",
            Source::Mbm(_) => "resctrl memory-bandwidth monitoring (mbm_total_bytes, mbm_local_bytes summed over the default group and every control group: the whole machine)",
        }
    }
}

pub(crate) fn socket_of(cpus: &Path, cpu: u32) -> u32 {
    std::fs::read_to_string(cpus.join(format!("cpu{cpu}/topology/physical_package_id")))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The best source here, or one sentence per source saying why not. `uncore_json`: the
/// CPU's perfmon uncore event file (Intel) or the kernel's data-fabric event file (AMD),
/// or why it was not found. AMD's memory controllers need their own file: [`open_with_umc`].
pub fn open(places: &Places, uncore_json: Result<String, String>) -> Result<Source, String> {
    let no_umc = Err("the kernel's memory-controller event file was not looked for".to_string());
    open_with_umc(places, uncore_json, no_umc)
}

/// [`open`], with the kernel's `amdzenN/memory-controller.json` (or why it was not found)
/// for AMD's `amd_umc_N` PMUs.
pub fn open_with_umc(
    places: &Places,
    uncore_json: Result<String, String>,
    umc_json: Result<String, String>,
) -> Result<Source, String> {
    let mut pmus = discover(&places.pmus);
    let df = crate::amd::df_pmu(&places.pmus);
    let umc = crate::umc::discover(&places.pmus);
    let planned = match (pmus.iter().any(|p| p.name.starts_with("uncore_imc_")), &df) {
        (true, _) => uncore_json.and_then(|json| plan(&pmus, &json)),
        // The memory controllers before the data fabric: they count reads and writes apart,
        // per channel; the fabric adds its socket links (see umc::plan_amd).
        _ if !umc.is_empty() => crate::umc::plan_amd(&umc, umc_json, df.as_ref(), uncore_json),
        (false, Some(df)) => uncore_json.and_then(|json| crate::amd::plan_df(df, &json)),
        // No memory-controller PMU says more than a missing perfmon file would.
        (false, None) => Err(crate::counters::describe(&pmus)),
    };
    pmus.extend(df);
    pmus.extend(umc.into_iter().map(|u| u.pmu));
    let uncore = planned.and_then(|counters| {
        let by_pmu: Vec<(String, Vec<u32>)> = pmus
            .iter()
            .map(|p| (p.name.clone(), p.cpus.clone()))
            .collect();
        let cpus_of = |c: &crate::counters::Counter| {
            by_pmu
                .iter()
                .find(|p| p.0 == c.pmu)
                .map(|p| p.1.clone())
                .unwrap_or_default()
        };
        Sampler::open(counters, &cpus_of, &|cpu| socket_of(&places.cpus, cpu))
            .map_err(|e| e.to_string())
    });
    let why_uncore = match uncore {
        Ok(s) => return Ok(Source::Uncore(s)),
        Err(e) => e,
    };
    match crate::mbm::why_not(&places.resctrl) {
        None => Ok(Source::Mbm(places.resctrl.clone())),
        Some(why_mbm) => Err(format!(
            "no bandwidth counters here: uncore: {why_uncore}; resctrl: {why_mbm}"
        )),
    }
}

/// The `bandwidth_timeline` line of `kairos info`: what a bandwidth timeline needs and
/// whether this machine has it (the uncore file is not looked for: a PMU list suffices).
pub fn capability(places: &Places) -> kairos_platform::Capability {
    let pmus = discover(&places.pmus);
    let needs = "needs uncore memory-controller PMUs (Intel uncore_imc with the CPU's perfmon uncore file, AMD amd_umc with the kernel's memory-controller file or amd_df with its data-fabric file) or resctrl memory-bandwidth monitoring";
    let umc = crate::umc::discover(&places.pmus);
    let (available, detail, reason) = if pmus.iter().any(|p| p.name.starts_with("uncore_imc_")) {
        (true, crate::counters::describe(&pmus), None)
    } else if !umc.is_empty() {
        (true, crate::umc::describe(&umc), None)
    } else if crate::amd::df_pmu(&places.pmus).is_some() {
        (true, "AMD data fabric (amd_df): DRAM requests x 64 bytes per channel, link data packets x 32 bytes; needs the kernel's amdzenN/data-fabric.json in the perfmon folder".into(), None)
    } else {
        match crate::mbm::why_not(&places.resctrl) {
            None => (
                true,
                format!("resctrl MBM at {}", places.resctrl.display()),
                None,
            ),
            Some(why) => (
                false,
                "none".to_string(),
                Some(format!(
                    "{}; {why}; {needs}",
                    crate::counters::describe(&pmus)
                )),
            ),
        }
    };
    kairos_platform::Capability {
        name: CAPABILITY.into(),
        available,
        detail,
        reason,
    }
}

/// The capability's key (also in the memory-access analysis' `uses`).
pub const CAPABILITY: &str = "bandwidth_timeline";

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The running recorder; [`Recorder::finish`] stops it and gives the timeline.
pub struct Recorder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Timeline>>,
    fallback: Timeline,
}

impl Recorder {
    /// Starts reading `source` every `tick` (or, with no source, keeps the reason).
    pub fn start(source: Result<Source, String>, tick: Duration) -> Recorder {
        let tick_ms = tick.as_millis() as u64;
        let stop = Arc::new(AtomicBool::new(false));
        let source = match source {
            Ok(s) => s,
            Err(why) => {
                return Recorder {
                    stop,
                    thread: None,
                    fallback: Timeline::unavailable(why, tick_ms),
                }
            }
        };
        let flag = stop.clone();
        let fallback =
            Timeline::unavailable("the bandwidth thread stopped unexpectedly".into(), tick_ms);
        // The first MBM read is taken here, so that the counts start with the caller's start.
        let first = match &source {
            Source::Mbm(root) => crate::mbm::read_machine(root),
            Source::Uncore(_) => Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("kairos-bandwidth".into())
            .spawn(move || run(source, first, tick, &flag))
            .ok();
        Recorder {
            stop,
            thread,
            fallback,
        }
    }

    pub fn finish(mut self) -> Timeline {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(t)) => t,
            _ => std::mem::take(&mut self.fallback),
        }
    }
}

fn run(
    mut source: Source,
    first: Vec<(PathBuf, Vec<kairos_resctrl::monitor::Reading>)>,
    tick: Duration,
    stop: &AtomicBool,
) -> Timeline {
    let mut t = Timeline {
        source: source.name().into(),
        tick_ms: tick.as_millis() as u64,
        ..Timeline::default()
    };
    t.domain = match source {
        Source::Uncore(_) => "socket".into(),
        Source::Mbm(_) => "L3 domain".into(),
    };
    let mut prev_at = monotonic_ns();
    let mut prev_mbm = first;
    let mut missing = 0u64;
    loop {
        // Short sleeps, so that the end of the collection is not kept waiting a tick.
        let due = prev_at + tick.as_nanos() as u64;
        while !stop.load(Ordering::Relaxed) && monotonic_ns() < due {
            std::thread::sleep(Duration::from_millis(5).min(tick));
        }
        let stopping = stop.load(Ordering::Relaxed);
        let now = monotonic_ns();
        let dur = now.saturating_sub(prev_at);
        // The last, partial interval is kept when it is long enough to mean something.
        if !stopping || dur >= tick.as_nanos() as u64 / 4 {
            match &mut source {
                Source::Uncore(s) => {
                    let tick = s.tick();
                    for ((domain, flow), v) in tick.bytes_per_s {
                        t.points.push(Point {
                            t_ns: prev_at,
                            dur_ns: dur,
                            domain,
                            flow: flow.into(),
                            bytes_per_s: v,
                        });
                    }
                    for ((domain, channel, flow), v) in tick.per_channel {
                        t.channels.push(ChannelPoint {
                            t_ns: prev_at,
                            dur_ns: dur,
                            domain,
                            channel,
                            flow: flow.into(),
                            bytes_per_s: v,
                        });
                    }
                }
                Source::Mbm(root) => {
                    let now_mbm = crate::mbm::read_machine(root);
                    let r = crate::mbm::machine_rates(&prev_mbm, &now_mbm, dur as f64 / 1e9);
                    t.points
                        .extend(r.bytes_per_s.into_iter().map(|(domain, flow, v)| Point {
                            t_ns: prev_at,
                            dur_ns: dur,
                            domain,
                            flow,
                            bytes_per_s: v,
                        }));
                    missing += r.missing.iter().filter(|m| m.1 == Flow::Total).count() as u64;
                    prev_mbm = now_mbm;
                }
            }
            prev_at = now;
        }
        if stopping {
            break;
        }
    }
    if missing > 0 {
        t.notes.push(format!("{missing} domain intervals have no figure: the MBM counter said Unavailable or Error, or was reset"));
    }
    t
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
