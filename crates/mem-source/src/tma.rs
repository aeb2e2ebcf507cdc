//! The memory-bound share of the pipeline and its split (L1, L2, L3, DRAM, store bound),
//! from the CPU's Intel perfmon metric file (TMA formulas) and counter values, evaluated
//! by kairos-metrics. Values are what the file's formulas give: percent. Memory_Bound is
//! a share of pipeline slots; its children are shares of clocks (stall cycles), so they
//! need not add up to it (Intel's TMA defines them so).

use std::collections::HashMap;
use std::path::Path;

use kairos_metrics::{evaluate_perfmon, PerfmonMetric};
use serde::Serialize;

use crate::choice::{Refusal, RefusalKind};
use crate::cpu::{CpuId, Vendor};
use crate::perfmon_events::{EncodeError, Encoded, Kind, PerfmonEvents, SLOTS_CONFIG};
use crate::sysfs::list_pmus;

/// The name of the parent node in Intel's files.
pub const MEMORY_BOUND: &str = "Memory_Bound";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TmaError {
    #[error("the metric file has no {MEMORY_BOUND} metric")]
    NoMemoryBound,
    #[error("{metric}: {error}")]
    Metric {
        metric: String,
        error: kairos_metrics::Error,
    },
}

/// Which child a metric is (TMA renamed DRAM_Bound to L3_Miss_Bound on newer files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Part {
    L1,
    L2,
    L3,
    Dram,
    Store,
    Other,
}

pub fn part_of(name: &str) -> Part {
    match name {
        "L1_Bound" => Part::L1,
        "L2_Bound" => Part::L2,
        "L3_Bound" => Part::L3,
        "DRAM_Bound" | "L3_Miss_Bound" | "MEM_Bound" => Part::Dram,
        "Store_Bound" => Part::Store,
        _ => Part::Other,
    }
}

/// The evaluated metrics, in percent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryBound {
    /// Share of pipeline slots stalled on memory.
    pub memory_bound: f64,
    /// Each child of Memory_Bound in the file: (metric name, part, percent of clocks).
    pub split: Vec<(String, Part, f64)>,
}

impl MemoryBound {
    /// The value of one part (the first child of that part).
    pub fn part(&self, p: Part) -> Option<f64> {
        self.split
            .iter()
            .find(|(_, q, _)| *q == p)
            .map(|(_, _, v)| *v)
    }
}

fn children(metrics: &[PerfmonMetric]) -> impl Iterator<Item = &PerfmonMetric> {
    metrics
        .iter()
        .filter(|m| m.parent.as_deref() == Some(MEMORY_BOUND))
}

/// Evaluates Memory_Bound and its children on one set of counts (one interval, or one
/// function's counts). `constants`: HYPERTHREADING_ON and the like, by name.
pub fn memory_bound(
    metrics: &[PerfmonMetric],
    counts: &HashMap<String, f64>,
    constants: &HashMap<String, f64>,
) -> Result<MemoryBound, TmaError> {
    let eval = |m: &PerfmonMetric| {
        evaluate_perfmon(m, counts, constants).map_err(|error| TmaError::Metric {
            metric: m.name.clone(),
            error,
        })
    };
    let top = metrics
        .iter()
        .find(|m| m.name == MEMORY_BOUND)
        .ok_or(TmaError::NoMemoryBound)?;
    let memory_bound = eval(top)?;
    let mut split = Vec::new();
    for m in children(metrics) {
        split.push((m.name.clone(), part_of(&m.name), eval(m)?));
    }
    Ok(MemoryBound {
        memory_bound,
        split,
    })
}

/// Every event Memory_Bound and its children need counted, each once.
pub fn memory_bound_events(metrics: &[PerfmonMetric]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in metrics
        .iter()
        .filter(|m| m.name == MEMORY_BOUND)
        .chain(children(metrics))
    {
        for e in &m.events {
            if !out.contains(&e.name) {
                out.push(e.name.clone());
            }
        }
    }
    out
}

/// The metric file for this CPU from Intel's mapfile.csv (`Family-model,Version,Filename,
/// EventType,...`; keys like `GenuineIntel-6-55-[01234]` or `GenuineIntel-6-8F`).
pub fn metrics_file_for(mapfile_csv: &str, cpu: &CpuId) -> Option<String> {
    file_for(mapfile_csv, cpu, "metrics")
}

/// The core event file for this CPU from mapfile.csv (EventType `core`).
pub fn events_file_for(mapfile_csv: &str, cpu: &CpuId) -> Option<String> {
    file_for(mapfile_csv, cpu, "core")
}

fn file_for(mapfile_csv: &str, cpu: &CpuId, wanted: &str) -> Option<String> {
    let key = cpu.mapfile_key();
    mapfile_csv.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split(',').collect();
        let (pattern, file, kind) = (cols.first()?, cols.get(2)?, cols.get(3)?);
        (*kind == wanted && key_matches(pattern, &key))
            .then(|| file.trim_start_matches('/').to_string())
    })
}

/// `pattern` (literal characters and `[...]` classes) matches all of `key`, or a prefix
/// of it that ends where a `-` follows (a key without stepping matches every stepping).
fn key_matches(pattern: &str, key: &str) -> bool {
    let (p, k) = (pattern.as_bytes(), key.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < p.len() {
        let Some(&c) = k.get(j) else { return false };
        if p[i] == b'[' {
            let Some(end) = p[i..].iter().position(|&x| x == b']') else {
                return false;
            };
            if !p[i + 1..i + end].iter().any(|x| x.eq_ignore_ascii_case(&c)) {
                return false;
            }
            i += end + 1;
        } else if p[i].eq_ignore_ascii_case(&c) {
            i += 1;
        } else {
            return false;
        }
        j += 1;
    }
    j == k.len() || k[j] == b'-'
}

/// Whether the TMA counters can be read here: they need Intel's core PMU.
pub fn availability(devices: &Path, cpu: Option<&CpuId>) -> Result<(), Refusal> {
    let core = ["cpu", "cpu_core"]
        .iter()
        .any(|n| devices.join(n).join("type").is_file());
    if cpu.is_some_and(|c| c.vendor != Vendor::Intel) {
        return Err(Refusal {
            kind: RefusalKind::UnsupportedVendor,
            reason:
                "the memory-bound breakdown uses Intel's TMA metric files; this CPU is not Intel"
                    .into(),
        });
    }
    if !core {
        return Err(Refusal {
            kind: RefusalKind::NoCorePmu,
            reason: format!(
                "no core PMU in {} (present: {}), so the TMA counters cannot be read",
                devices.display(),
                list_pmus(devices).join(" ")
            ),
        });
    }
    Ok(())
}

/// One group of counters read together at each sample of its leader (PERF_SAMPLE_READ):
/// their deltas between two samples are what the code between them did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterGroup {
    /// Samples; its period sets how often the group is read.
    pub leader: Encoded,
    pub period: u64,
    pub members: Vec<Encoded>,
}

/// Recording names: `tma:GROUP:EVENT`, so that the analysis knows which counts were
/// taken together (groups share the counters in turn when there are more than fit).
pub fn recording_name(group: usize, event: &str) -> String {
    format!("{TMA_PREFIX}{group}:{event}")
}

pub const TMA_PREFIX: &str = "tma:";

/// The group and metric-file name of a recording name made by [`recording_name`].
pub fn parse_recording_name(name: &str) -> Option<(usize, &str)> {
    let rest = name.strip_prefix(TMA_PREFIX)?;
    let (g, ev) = rest.split_once(':')?;
    // perf appends `:u`/`u` when the kernel was excluded; the metric's name has no `:u`.
    let ev = ev.strip_suffix(":u").unwrap_or(ev);
    Some((g.parse().ok()?, ev))
}

/// The cycles event every group carries, as the metric files name it: each group's counts
/// are scaled by its own cycles, since groups count in turn.
pub const CYCLES: &str = "CPU_CLK_UNHALTED.THREAD";

/// Groups that count every event Memory_Bound needs, at most `gp_counters` general-purpose
/// counters each (4 per thread with Hyper-Threading on Intel's big cores): the topdown
/// fractions in a group led by slots, the rest in groups led by cycles.
pub fn plan(
    metrics: &[PerfmonMetric],
    events: &PerfmonEvents,
    gp_counters: usize,
) -> Result<Vec<CounterGroup>, EncodeError> {
    let gp = gp_counters.max(1);
    let cycles = events.encode(CYCLES)?;
    let mut topdown: Vec<Encoded> = Vec::new();
    let mut fixed: Vec<Encoded> = Vec::new();
    let mut general: Vec<Encoded> = Vec::new();
    for name in memory_bound_events(metrics) {
        let e = events.encode(&name)?;
        match e.kind {
            Kind::Slots | Kind::Metric => topdown.push(e),
            _ if e.name == CYCLES => {}
            _ if e.fixed => fixed.push(e),
            _ => general.push(e),
        }
    }
    let mut groups = Vec::new();
    if !topdown.is_empty() {
        // Slots leads; metrics follow it (the kernel's rule); cycles rides on its fixed counter.
        let slots_pos = topdown.iter().position(|e| e.kind == Kind::Slots);
        let leader = match slots_pos {
            Some(i) => topdown.remove(i),
            None => Encoded {
                name: "TOPDOWN.SLOTS:perf_metrics".into(),
                kind: Kind::Slots,
                config: SLOTS_CONFIG,
                config1: 0,
                fixed: true,
            },
        };
        let mut members = topdown;
        members.push(cycles.clone());
        groups.push(CounterGroup {
            leader,
            period: 10_000_003,
            members,
        });
    }
    let mut chunks: Vec<Vec<Encoded>> = general.chunks(gp).map(<[Encoded]>::to_vec).collect();
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
    chunks[0].extend(fixed);
    for members in chunks {
        groups.push(CounterGroup {
            leader: cycles.clone(),
            period: 2_000_003,
            members,
        });
    }
    Ok(groups)
}
