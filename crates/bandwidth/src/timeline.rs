//! Bandwidth over a collection: one point per tick, domain (socket or resctrl L3 domain)
//! and flow, in bytes a second; the source it came from, or why there is none; the
//! platform maximum it is drawn against. Kept in a result as `bandwidth.json`.
//! [`stats`], [`histogram`] and [`high_intervals`] are what reports and the page show.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Measurement;

/// The file in a result directory.
pub const FILE: &str = "bandwidth.json";

/// What a point measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flow {
    /// DRAM reads (memory-controller CAS reads).
    Read,
    /// DRAM writes.
    Write,
    /// Data sent on socket links (UPI/xGMI).
    Link,
    /// All DRAM traffic of the domain: resctrl MBM's total (local and remote), or AMD's
    /// data-fabric DRAM requests (reads and writes together).
    Total,
    /// resctrl MBM: traffic to the domain's own memory.
    Local,
}

impl Flow {
    pub fn name(self) -> &'static str {
        match self {
            Flow::Read => "read",
            Flow::Write => "write",
            Flow::Link => "link",
            Flow::Total => "total",
            Flow::Local => "local",
        }
    }
    /// Whether the flow is DRAM traffic that adds up to the domain's DRAM bandwidth
    /// (read + write from counters, or MBM's total; MBM's local is a part of total).
    pub fn is_dram(self) -> bool {
        matches!(self, Flow::Read | Flow::Write | Flow::Total)
    }
}

impl From<crate::counters::Flow> for Flow {
    fn from(f: crate::counters::Flow) -> Flow {
        match f {
            crate::counters::Flow::DramRead => Flow::Read,
            crate::counters::Flow::DramWrite => Flow::Write,
            crate::counters::Flow::DramAll => Flow::Total,
            crate::counters::Flow::LinkTx => Flow::Link,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Start of the interval, CLOCK_MONOTONIC ns (the clock samples are stamped with).
    pub t_ns: u64,
    pub dur_ns: u64,
    pub domain: u32,
    pub flow: Flow,
    pub bytes_per_s: f64,
}

/// One channel's rate over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelPoint {
    pub t_ns: u64,
    pub dur_ns: u64,
    pub domain: u32,
    pub channel: u32,
    pub flow: Flow,
    pub bytes_per_s: f64,
}

/// Average and peak of one channel's flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelStats {
    pub domain: u32,
    pub channel: u32,
    pub flow: Flow,
    pub average_gbs: f64,
    pub peak_gbs: f64,
}

/// Per domain, channel and flow; time-weighted averages. Empty where the counters are
/// not per channel.
pub fn channel_stats(t: &Timeline) -> Vec<ChannelStats> {
    let mut by: BTreeMap<(u32, u32, Flow), (f64, f64, f64)> = BTreeMap::new();
    for p in &t.channels {
        let e = by
            .entry((p.domain, p.channel, p.flow))
            .or_insert((0.0, 0.0, 0.0));
        let secs = p.dur_ns as f64 / 1e9;
        e.0 += secs;
        e.1 += secs * p.bytes_per_s;
        e.2 = e.2.max(p.bytes_per_s);
    }
    by.into_iter()
        .map(
            |((domain, channel, flow), (secs, bytes, peak))| ChannelStats {
                domain,
                channel,
                flow,
                average_gbs: if secs > 0.0 { bytes / secs / 1e9 } else { 0.0 },
                peak_gbs: peak / 1e9,
            },
        )
        .collect()
}

/// The platform maximum a timeline is drawn against, from `kairos measure bandwidth`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Maximum {
    /// GB/s of all nodes together (the local triads' sum).
    pub gbs: f64,
    /// GB/s of each node's local triad.
    pub per_node: BTreeMap<u32, f64>,
    /// How and when it was measured.
    pub how: String,
}

impl Maximum {
    pub fn of(m: &Measurement) -> Maximum {
        let per_node = m
            .pairs
            .iter()
            .filter(|p| p.local())
            .map(|p| (p.cpu_node, p.triad_gbs))
            .collect();
        Maximum {
            gbs: m.local_max_gbs(),
            per_node,
            how: format!("kairos measure bandwidth on {} ({})", m.host, m.method()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Timeline {
    /// Where the figures come from (empty when there are none).
    pub source: String,
    /// Why there are no figures on this machine, with what it would take.
    pub unavailable: Option<String>,
    pub tick_ms: u64,
    /// What a domain is: "socket" (uncore counters) or "L3 domain" (resctrl).
    pub domain: String,
    pub points: Vec<Point>,
    /// The same DRAM traffic per memory channel, where the counters are per channel
    /// (Intel's `uncore_imc_N`); the per-domain points already hold their sums.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<ChannelPoint>,
    pub maximum: Option<Maximum>,
    /// Intervals left out (a counter reset, "Unavailable"), and similar facts.
    pub notes: Vec<String>,
}

impl Timeline {
    pub fn unavailable(why: String, tick_ms: u64) -> Timeline {
        Timeline {
            unavailable: Some(why),
            tick_ms,
            ..Timeline::default()
        }
    }

    pub fn load(dir: &Path) -> Option<Result<Timeline, String>> {
        let p = dir.join(FILE);
        let bytes = std::fs::read(&p).ok()?;
        Some(
            serde_json::from_slice(&bytes)
                .map_err(|e| format!("{} is not a bandwidth timeline: {e}", p.display())),
        )
    }

    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let p = dir.join(FILE);
        let json = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&p, json).map_err(|e| format!("cannot write {}: {e}", p.display()))
    }

    /// Each interval's DRAM bandwidth summed over domains: (start ns, duration ns, bytes/s).
    pub fn dram_intervals(&self) -> Vec<(u64, u64, f64)> {
        let mut by: BTreeMap<u64, (u64, f64)> = BTreeMap::new();
        for p in self.points.iter().filter(|p| p.flow.is_dram()) {
            let e = by.entry(p.t_ns).or_insert((p.dur_ns, 0.0));
            e.1 += p.bytes_per_s;
        }
        by.into_iter().map(|(t, (d, v))| (t, d, v)).collect()
    }

    /// The reference of shares: the measured maximum, else the timeline's DRAM peak.
    pub fn reference_gbs(&self) -> Option<(f64, &'static str)> {
        match &self.maximum {
            Some(m) if m.gbs > 0.0 => Some((m.gbs, "the measured maximum")),
            _ => {
                let peak = self
                    .dram_intervals()
                    .iter()
                    .map(|x| x.2)
                    .fold(0.0, f64::max)
                    / 1e9;
                (peak > 0.0).then_some((peak, "the peak (no maximum measured)"))
            }
        }
    }
}

/// Average and peak of one domain's flow (domain None: all domains summed).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowStats {
    pub domain: Option<u32>,
    pub flow: Flow,
    pub average_gbs: f64,
    pub peak_gbs: f64,
    /// The maximum this row is a share of (the node's local triad; all nodes' sum).
    pub maximum_gbs: Option<f64>,
}

/// (domain, flow) -> interval start -> (duration, rate).
type Series = BTreeMap<(Option<u32>, Flow), BTreeMap<u64, (u64, f64)>>;

/// Per domain and flow, then all domains per flow; time-weighted averages.
pub fn stats(t: &Timeline) -> Vec<FlowStats> {
    let mut series: Series = BTreeMap::new();
    for p in &t.points {
        for d in [Some(p.domain), None] {
            let e = series
                .entry((d, p.flow))
                .or_default()
                .entry(p.t_ns)
                .or_insert((p.dur_ns, 0.0));
            e.1 += p.bytes_per_s;
        }
    }
    let domains = t
        .points
        .iter()
        .map(|p| p.domain)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    series
        .into_iter()
        // With one domain the "all" rows repeat it.
        .filter(|((d, _), _)| d.is_some() || domains > 1)
        .map(|((domain, flow), s)| {
            let secs: f64 = s.values().map(|(d, _)| *d as f64).sum();
            let bytes: f64 = s.values().map(|(d, v)| *d as f64 * v).sum();
            let peak = s.values().map(|x| x.1).fold(0.0, f64::max);
            let maximum_gbs = t.maximum.as_ref().and_then(|m| {
                if flow == Flow::Link {
                    None
                } else {
                    match domain {
                        Some(d) => m.per_node.get(&d).copied(),
                        None => Some(m.gbs),
                    }
                }
            });
            FlowStats {
                domain,
                flow,
                average_gbs: if secs > 0.0 { bytes / secs / 1e9 } else { 0.0 },
                peak_gbs: peak / 1e9,
                maximum_gbs,
            }
        })
        .collect()
}

/// One bin of the utilization histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bin {
    pub from_gbs: f64,
    pub to_gbs: f64,
    pub seconds: f64,
}

/// Time spent at each level of DRAM bandwidth (all domains): `bins` equal bins of the
/// reference (the last one also takes what is above it). Empty without a reference.
pub fn histogram(t: &Timeline, bins: usize) -> Vec<Bin> {
    let Some((reference, _)) = t.reference_gbs() else {
        return Vec::new();
    };
    let bins = bins.max(1);
    let w = reference / bins as f64;
    let mut out: Vec<Bin> = (0..bins)
        .map(|i| Bin {
            from_gbs: w * i as f64,
            to_gbs: w * (i + 1) as f64,
            seconds: 0.0,
        })
        .collect();
    for (_, dur, v) in t.dram_intervals() {
        let i = ((v / 1e9 / w) as usize).min(bins - 1);
        out[i].seconds += dur as f64 / 1e9;
    }
    out
}

/// The intervals whose DRAM bandwidth is at least `share` of the reference: (start, end) ns.
pub fn high_intervals(t: &Timeline, share: f64) -> Vec<(u64, u64)> {
    let Some((reference, _)) = t.reference_gbs() else {
        return Vec::new();
    };
    t.dram_intervals()
        .into_iter()
        .filter(|(_, _, v)| v / 1e9 >= share * reference)
        .map(|(s, d, _)| (s, s + d))
        .collect()
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
