//! The result's `io.json`: what was measured (one [`Series`] per quantity: a device's
//! received bytes, an IIO stack's inbound writes, a socket's TOR inserts), each tick's
//! deltas, the metric formulas of the perfmon file, and why what is missing is missing.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// File name inside the result directory.
pub const FILE: &str = "io.json";

/// What `io.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IoResult {
    pub tick_ms: u64,
    /// The sources used, in words.
    pub sources: Vec<String>,
    pub series: Vec<Series>,
    pub points: Vec<Point>,
    /// Perfmon metrics evaluated per socket over the counts of the `socket` series.
    #[serde(default)]
    pub metrics: Vec<Metric>,
    /// Why DDIO hits and misses were not measured; None when they were.
    #[serde(default)]
    pub ddio_unmeasured: Option<String>,
    /// Why per-stack PCIe traffic was not measured; None when it was.
    #[serde(default)]
    pub pcie_unmeasured: Option<String>,
    /// DRAM and socket-link traffic: where to find it, or why it is not here.
    #[serde(default)]
    pub dram_note: Option<String>,
    /// Which threads moved data through which device: where to find it, or why not traced.
    #[serde(default)]
    pub device_use_note: Option<String>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// What a series stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// A device's own counters (network interface, block device).
    Device,
    /// An IIO stack (one PCIe root bus) of the uncore.
    Stack,
    /// A socket's CHA counts (an event, summed over its CHAs).
    Socket,
}

/// One measured quantity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub scope: Scope,
    /// `lo`, `nvme0n1`, `uncore_iio_2`, `socket 0`.
    pub name: String,
    /// `rx`, `tx`, `read`, `write` (devices); `inbound read`, `inbound write`, `mmio read`,
    /// `mmio write` (stacks); the event name (sockets).
    pub flow: String,
    /// `bytes` or `count`.
    pub unit: String,
    /// Socket (stacks and sockets) or NUMA node (devices), when known.
    pub socket: Option<u32>,
    /// PCI address of the device, or `segment:bus` of the stack's root bus.
    pub pci: Option<String>,
    /// The PCIe block: the host bridge (`pci0000:17`) the device or stack is.
    pub block: Option<String>,
    /// The devices behind a stack's bus, or the device's kind.
    pub label: String,
    /// Payload bytes a second the link carries at most (speed x width less encoding).
    pub link_bytes_per_s: Option<f64>,
}

/// One tick: seconds since the start, its length, and each series' delta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub t: f64,
    pub secs: f64,
    pub values: Vec<f64>,
}

/// A perfmon metric as the file gives it (kept so reports evaluate what was planned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub formula: String,
    /// (alias, event name).
    pub events: Vec<(String, String)>,
}

impl IoResult {
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(dir.join(FILE), text).map_err(|e| format!("{}: {e}", FILE))
    }

    /// None: the result has no `io.json`.
    pub fn load(dir: &Path) -> Option<Result<IoResult, String>> {
        let text = std::fs::read_to_string(dir.join(FILE)).ok()?;
        Some(serde_json::from_str(&text).map_err(|e| format!("{FILE} is damaged: {e}")))
    }

    /// Seconds covered by the points.
    pub fn duration(&self) -> f64 {
        self.points.iter().map(|p| p.secs).sum()
    }

    /// Total of series `i` over the run.
    pub fn total(&self, i: usize) -> f64 {
        self.points
            .iter()
            .map(|p| p.values.get(i).copied().unwrap_or(0.0))
            .sum()
    }

    /// Average per second of series `i`.
    pub fn average(&self, i: usize) -> f64 {
        self.total(i) / self.duration().max(1e-9)
    }

    /// Highest per-second rate of one tick of series `i`.
    pub fn peak(&self, i: usize) -> f64 {
        self.points
            .iter()
            .map(|p| p.values.get(i).copied().unwrap_or(0.0) / p.secs.max(1e-9))
            .fold(0.0, f64::max)
    }

    /// The points summed into buckets of `width` seconds: (start, seconds, deltas).
    pub fn buckets(&self, width: f64) -> Vec<Point> {
        let mut out: Vec<Point> = Vec::new();
        for p in &self.points {
            let start = (p.t / width.max(1e-9)).floor() * width;
            if out.last().is_none_or(|b| (b.t - start).abs() > 1e-9) {
                out.push(Point {
                    t: start,
                    secs: 0.0,
                    values: vec![0.0; self.series.len()],
                });
            }
            if let Some(b) = out.last_mut() {
                b.secs += p.secs;
                for (acc, v) in b.values.iter_mut().zip(&p.values) {
                    *acc += v;
                }
            }
        }
        out
    }
}
