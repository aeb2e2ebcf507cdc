//! Per socket, over a span of ticks: the perfmon `io_*` metrics evaluated on the summed
//! CHA counts, the DDIO hit rate of all inbound requests (IO_HIT over IO_HIT + IO_MISS) and
//! the average inbound read and ItoM write latencies (TOR occupancy / TOR inserts = cycles
//! in the TOR, over the CHA clock).

use std::collections::{BTreeMap, HashMap};

use kairos_metrics::{evaluate_perfmon, Binding, PerfmonMetric};

use crate::model::{IoResult, Metric, Point, Scope};

/// What one socket's counters say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SocketIo {
    pub socket: u32,
    /// Metric name to value (MB/s for bandwidths, percent for misses).
    pub metrics: BTreeMap<String, f64>,
    /// IO_HIT / (IO_HIT + IO_MISS) in percent, when there were requests.
    pub hit_rate: Option<f64>,
    pub requests: f64,
    /// Average inbound read (PCIRdCur) latency in ns.
    pub read_latency_ns: Option<f64>,
    /// Average time an inbound full-line write (ItoM) spends in the TOR, in ns: getting
    /// ownership of the line before the data is written into the L3.
    pub write_latency_ns: Option<f64>,
}

/// Occupancy / inserts = cycles in the TOR, over the CHA clock: ns.
fn latency_ns(
    occupancy: Option<f64>,
    inserts: Option<f64>,
    clock: Option<f64>,
    secs: f64,
) -> Option<f64> {
    match (occupancy, inserts, clock) {
        (Some(occ), Some(ins), Some(clk)) if ins > 0.0 && clk > 0.0 && secs > 0.0 => {
            Some(occ / ins / (clk / secs) * 1e9)
        }
        _ => None,
    }
}

/// Evaluates `m` on `counts` over `secs` seconds; None when it cannot be (a division by
/// zero, a missing count).
pub fn evaluate(m: &Metric, counts: &HashMap<String, f64>, secs: f64) -> Option<f64> {
    // Nothing counted: no figure (the evaluator would give 0 for 0/0).
    if m.events
        .iter()
        .all(|(_, n)| counts.get(n).copied().unwrap_or(0.0) == 0.0)
    {
        return None;
    }
    let pm = PerfmonMetric {
        name: m.name.clone(),
        level: None,
        parent: None,
        unit: String::new(),
        events: m
            .events
            .iter()
            .map(|(alias, name)| Binding {
                name: name.clone(),
                alias: alias.clone(),
            })
            .collect(),
        constants: Vec::new(),
        formula: m.formula.clone(),
        brief: String::new(),
    };
    let constants: HashMap<String, f64> = [("DURATIONTIMEINSECONDS".to_string(), secs)].into();
    evaluate_perfmon(&pm, counts, &constants)
        .ok()
        .filter(|v| v.is_finite())
}

/// Each socket with CHA counts, over `points`.
pub fn per_socket(r: &IoResult, points: &[Point]) -> Vec<SocketIo> {
    let secs: f64 = points.iter().map(|p| p.secs).sum();
    let mut counts: BTreeMap<u32, HashMap<String, f64>> = BTreeMap::new();
    for (i, s) in r.series.iter().enumerate() {
        if s.scope != Scope::Socket {
            continue;
        }
        let total: f64 = points
            .iter()
            .map(|p| p.values.get(i).copied().unwrap_or(0.0))
            .sum();
        *counts
            .entry(s.socket.unwrap_or(0))
            .or_default()
            .entry(s.flow.clone())
            .or_insert(0.0) += total;
    }
    counts
        .into_iter()
        .map(|(socket, c)| {
            let get = |n: &str| c.get(n).copied();
            let metrics = r
                .metrics
                .iter()
                .filter_map(|m| Some((m.name.clone(), evaluate(m, &c, secs)?)))
                .collect();
            let (hit, miss) = (
                get("UNC_CHA_TOR_INSERTS.IO_HIT"),
                get("UNC_CHA_TOR_INSERTS.IO_MISS"),
            );
            let requests = hit.unwrap_or(0.0) + miss.unwrap_or(0.0);
            let hit_rate = match (hit, miss) {
                (Some(h), Some(_)) if requests > 0.0 => Some(100.0 * h / requests),
                _ => None,
            };
            let clock = get("UNC_CHA_CLOCKTICKS");
            let read_latency_ns = latency_ns(
                get("UNC_CHA_TOR_OCCUPANCY.IO_PCIRDCUR"),
                get("UNC_CHA_TOR_INSERTS.IO_PCIRDCUR"),
                clock,
                secs,
            );
            let write_latency_ns = latency_ns(
                get("UNC_CHA_TOR_OCCUPANCY.IO_ITOM"),
                get("UNC_CHA_TOR_INSERTS.IO_ITOM"),
                clock,
                secs,
            );
            SocketIo {
                socket,
                metrics,
                hit_rate,
                requests,
                read_latency_ns,
                write_latency_ns,
            }
        })
        .collect()
}
