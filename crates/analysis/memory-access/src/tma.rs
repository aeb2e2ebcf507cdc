//! Where the time goes first, with a PMU: the memory-bound share of the pipeline and its
//! split (L1, L2, L3, DRAM, store bound), over the whole run, per function and over time.
//!
//! The counters are recorded as groups read at each sample of their leader (see
//! `kairos_mem_source::tma::plan`); the converter turns each read into samples of the
//! member events weighted by how much each advanced, at the leader's stack and time. So a
//! function's counts are the sums of its samples' weights, and an interval's the sums of
//! the samples in it. Groups share the counters in turn when they do not all fit: each
//! group's counts are scaled by the ratio of the reference group's cycles to its own, so
//! that every formula mixes counts of the same stretch of execution.

use std::collections::HashMap;

use kairos_mem_source::tma::{memory_bound, parse_recording_name, MemoryBound, CYCLES};
use kairos_metrics::PerfmonMetric;
use kairos_model::Profile;
use serde::{Deserialize, Serialize};

/// The file in the result directory.
pub const FILE: &str = "memory_bound.json";

/// A function or interval with too few cycles in some group gives no figure rather than a
/// wild one: at least this many leader samples' worth of cycles in every group.
const MIN_GROUP_SAMPLES: u64 = 4;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Percent of pipeline slots.
    pub memory_bound: f64,
    /// (metric, percent of clocks), in the metric file's order.
    pub split: Vec<(String, f64)>,
}

impl From<MemoryBound> for Figures {
    fn from(m: MemoryBound) -> Self {
        Figures {
            memory_bound: m.memory_bound,
            split: m.split.into_iter().map(|(n, _, v)| (n, v)).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionBound {
    pub function: String,
    /// Share of all cycles, percent.
    pub cycles_share: f64,
    pub figures: Figures,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalBound {
    /// Nanoseconds from the first sample.
    pub start_ns: u64,
    pub end_ns: u64,
    /// None when the interval had too few samples of some group.
    pub figures: Option<Figures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBoundResult {
    pub overall: Figures,
    pub functions: Vec<FunctionBound>,
    /// Functions left out for too few samples.
    pub functions_without_figures: usize,
    pub timeline: Vec<IntervalBound>,
    /// Counter groups; more than one means they shared the counters in turn.
    pub groups: usize,
}

/// The recording's TMA events: per profile event index, (group, metric-file name).
fn tma_events(p: &Profile) -> Vec<Option<(usize, String)>> {
    p.events
        .iter()
        .map(|e| parse_recording_name(&e.name).map(|(g, n)| (g, n.to_string())))
        .collect()
}

/// Counts of one function or interval, one slot per TMA event index.
#[derive(Clone)]
struct Acc(Vec<u64>);

/// Scaled counts by metric name, or None when a group lacks cycles.
fn counts(
    acc: &Acc,
    events: &[Option<(usize, String)>],
    min_cycles: &[u64],
) -> Option<HashMap<String, f64>> {
    let groups = events
        .iter()
        .flatten()
        .map(|(g, _)| *g + 1)
        .max()
        .unwrap_or(0);
    let mut cycles = vec![0u64; groups];
    for (i, e) in events.iter().enumerate() {
        if let Some((g, n)) = e {
            if n == CYCLES {
                cycles[*g] = acc.0[i];
            }
        }
    }
    let present: Vec<usize> = (0..groups)
        .filter(|&g| events.iter().flatten().any(|(h, _)| *h == g))
        .collect();
    if present
        .iter()
        .any(|&g| cycles[g] == 0 || cycles[g] < min_cycles.get(g).copied().unwrap_or(0))
    {
        return None;
    }
    let reference = cycles[*present.first()?] as f64;
    let mut out = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        if let Some((g, n)) = e {
            let scaled = acc.0[i] as f64 * reference / cycles[*g] as f64;
            // The same event in two groups (cycles): keep the reference group's.
            out.entry(n.clone()).or_insert(scaled);
        }
    }
    Some(out)
}

/// The figures of a profile whose recording has TMA groups; None when it has none.
/// `intervals`: how many slices of the run the timeline has.
pub fn analyse(
    p: &Profile,
    metrics: &[PerfmonMetric],
    constants: &HashMap<String, f64>,
    intervals: usize,
) -> Option<Result<MemoryBoundResult, String>> {
    let events = tma_events(p);
    if events.iter().all(Option::is_none) {
        return None;
    }
    Some(analyse_events(
        p,
        &events,
        metrics,
        constants,
        intervals.max(1),
    ))
}

fn analyse_events(
    p: &Profile,
    events: &[Option<(usize, String)>],
    metrics: &[PerfmonMetric],
    constants: &HashMap<String, f64>,
    intervals: usize,
) -> Result<MemoryBoundResult, String> {
    let n = events.len();
    let groups = events
        .iter()
        .flatten()
        .map(|(g, _)| *g + 1)
        .max()
        .unwrap_or(0);
    let (t0, t1) = (
        p.samples.first().map_or(0, |s| s.time_ns),
        p.samples.last().map_or(0, |s| s.time_ns),
    );
    let span = (t1 - t0).max(1);
    let mut total = Acc(vec![0; n]);
    let mut per_fn: HashMap<&str, Acc> = HashMap::new();
    let mut per_slice = vec![Acc(vec![0; n]); intervals];
    // Leader samples per group, to know what one sample's cycles are.
    let mut leader_samples = vec![0u64; groups];
    for (i, s) in p.samples.iter().enumerate() {
        let ev = p.sample_events.get(i).copied().unwrap_or(0) as usize;
        let Some(Some((g, name))) = events.get(ev) else {
            continue;
        };
        if name == CYCLES {
            leader_samples[*g] += 1;
        }
        total.0[ev] += s.weight;
        let f = p.leaf_frame(s).map_or("[unknown]", |f| f.function.as_str());
        per_fn.entry(f).or_insert_with(|| Acc(vec![0; n])).0[ev] += s.weight;
        let slice = (((s.time_ns - t0) as u128 * intervals as u128 / span as u128) as usize)
            .min(intervals - 1);
        per_slice[slice].0[ev] += s.weight;
    }
    let eval = |c: HashMap<String, f64>| memory_bound(metrics, &c, constants).map(Figures::from);
    let overall_counts = counts(&total, events, &[])
        .ok_or("a counter group recorded no cycles: no figure can be computed")?;
    let overall = eval(overall_counts).map_err(|e| e.to_string())?;
    // Cycles of a few leader samples, per group: less than that is noise.
    let min_cycles: Vec<u64> = (0..groups)
        .map(|g| {
            let c = events
                .iter()
                .position(|e| e.as_ref().is_some_and(|(h, n)| *h == g && n == CYCLES))
                .map_or(0, |i| total.0[i]);
            c / leader_samples[g].max(1) * MIN_GROUP_SAMPLES
        })
        .collect();
    let cycles_idx = events
        .iter()
        .position(|e| e.as_ref().is_some_and(|(_, n)| n == CYCLES));
    let all_cycles = cycles_idx.map_or(0, |i| total.0[i]).max(1);
    let mut functions = Vec::new();
    let mut without = 0;
    for (f, acc) in &per_fn {
        match counts(acc, events, &min_cycles).and_then(|c| eval(c).ok()) {
            Some(figures) => {
                let cycles = cycles_idx.map_or(0, |i| acc.0[i]);
                functions.push(FunctionBound {
                    function: f.to_string(),
                    cycles_share: 100.0 * cycles as f64 / all_cycles as f64,
                    figures,
                });
            }
            None => without += 1,
        }
    }
    functions.sort_by(|a, b| {
        b.cycles_share
            .total_cmp(&a.cycles_share)
            .then_with(|| a.function.cmp(&b.function))
    });
    let timeline = per_slice
        .iter()
        .enumerate()
        .map(|(k, acc)| IntervalBound {
            start_ns: span * k as u64 / intervals as u64,
            end_ns: span * (k as u64 + 1) / intervals as u64,
            figures: counts(acc, events, &min_cycles).and_then(|c| eval(c).ok()),
        })
        .collect();
    Ok(MemoryBoundResult {
        overall,
        functions,
        functions_without_figures: without,
        timeline,
        groups,
    })
}

/// The TMA constants of this machine: whether SMT is on, threads per core.
pub fn constants_here() -> HashMap<String, f64> {
    let smt = std::fs::read_to_string("/sys/devices/system/cpu/smt/active")
        .map(|s| s.trim() == "1")
        .unwrap_or(false);
    let threads =
        std::fs::read_to_string("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
            .map(|s| kairos_collector::parse_cpu_list(s.trim()).len())
            .unwrap_or(1);
    HashMap::from([
        ("HYPERTHREADING_ON".to_string(), smt as u8 as f64),
        ("THREADS_PER_CORE".to_string(), threads.max(1) as f64),
    ])
}

#[cfg(test)]
#[path = "tma_tests.rs"]
mod tests;
