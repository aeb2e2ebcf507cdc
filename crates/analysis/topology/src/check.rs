//! The check itself: each network, storage and accelerator device's node against the nodes
//! the target's samples ran on and its memory pages are on.

use std::collections::BTreeMap;

use kairos_platform::numa::format_cpulist;
use kairos_platform::{Device, DeviceKind, Platform};
use serde::Serialize;

/// What the result measured of the target, per node.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Samples per node (each sample's CPU mapped to its node).
    pub samples_by_node: BTreeMap<u32, u64>,
    /// Samples on CPUs no node lists (or with no CPU recorded).
    pub samples_without_node: u64,
    /// Samples per CPU.
    pub samples_by_cpu: BTreeMap<u32, u64>,
    /// Per thread (tid): its name and its samples per node.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub threads: BTreeMap<u32, ThreadUse>,
    /// Resident pages of the target's memory objects per node (memory-access NUMA data);
    /// None when the result has no placement.
    pub pages_by_node: Option<BTreeMap<u32, u64>>,
    /// What the target moved through each device (`net:eth0`), traced; None when the
    /// collection did not trace device use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<BTreeMap<String, Traffic>>,
}

/// The target's data through one device, by the node of the CPU it was moved on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Traffic {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub bytes_by_node: BTreeMap<u32, u64>,
    /// Per thread: its name and its bytes per node.
    pub threads: BTreeMap<u32, ThreadUse>,
}

/// One thread's samples (or, under a device's traffic, bytes) per node.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ThreadUse {
    pub name: String,
    pub samples_by_node: BTreeMap<u32, u64>,
}

impl Usage {
    pub fn samples(&self) -> u64 {
        self.samples_by_node.values().sum()
    }
    pub fn pages(&self) -> u64 {
        self.pages_by_node.as_ref().map_or(0, |m| m.values().sum())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The target ran (or its memory is) mostly off the device's node.
    Mismatch,
    Local,
    /// The target moved no data through the device (device use was traced).
    Unused,
    /// The device's node is unknown, or nothing was measured.
    Unchecked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Mismatch => "mismatch",
            Verdict::Local => "local",
            Verdict::Unused => "not used",
            Verdict::Unchecked => "not checked",
        }
    }
}

/// One device's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub device: String,
    pub node: Option<u32>,
    pub verdict: Verdict,
    /// Share of the samples (with a node) that ran on other nodes, in percent.
    pub off_node_samples_pct: Option<f64>,
    /// Share of the pages on other nodes, in percent.
    pub off_node_pages_pct: Option<f64>,
    /// Share of the target's traced traffic through the device moved on other nodes' CPUs.
    pub off_node_traffic_pct: Option<f64>,
    pub sentence: String,
}

/// Whether the device is one the check is about: hardware that moves data.
pub fn checked_kind(d: &Device) -> bool {
    !d.virtual_device
        && matches!(
            d.kind,
            DeviceKind::Network | DeviceKind::Storage | DeviceKind::Accelerator
        )
}

/// `1.2 MB` (10^6 bytes), `512 bytes`.
fn size(bytes: u64) -> String {
    match bytes {
        0..1000 => format!("{bytes} bytes"),
        1000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", bytes as f64 / 1e6),
        _ => format!("{:.2} GB", bytes as f64 / 1e9),
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// The node other than `node` holding the most of `by` (for "ran on node 0").
fn main_other(by: &BTreeMap<u32, u64>, node: u32) -> Option<u32> {
    by.iter()
        .filter(|(&n, &c)| n != node && c > 0)
        .max_by_key(|(&n, &c)| (c, std::cmp::Reverse(n)))
        .map(|(&n, _)| n)
}

fn what_lands(d: &Device, node: u32) -> String {
    if d.class == kairos_platform::devices::PERSISTENT_MEMORY {
        return format!(
            "its media is node {node}'s memory and every load and store to it from there is remote"
        );
    }
    match d.kind {
        DeviceKind::Network => format!("inbound data lands in node {node}'s L3 and memory and every read of it is remote"),
        DeviceKind::Storage => format!("data read from it is written by DMA to node {node}'s L3 and memory, and every read of it is remote"),
        _ => format!("data it writes lands in node {node}'s L3 and memory, and every read of it is remote"),
    }
}

/// ` (threads 4242 worker 100% off, ...)`: the threads that ran mostly off `node`, busiest
/// first, at most four named; empty when the result has no per-thread figures.
fn off_threads(threads: &BTreeMap<u32, ThreadUse>, node: u32) -> String {
    let mut off: Vec<(u64, f64, u32, &str)> = threads
        .iter()
        .filter_map(|(tid, t)| {
            let all: u64 = t.samples_by_node.values().sum();
            let away = all - t.samples_by_node.get(&node).copied().unwrap_or(0);
            (all > 0 && 2 * away > all).then(|| (away, pct(away, all), *tid, t.name.as_str()))
        })
        .collect();
    if off.is_empty() {
        return String::new();
    }
    off.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
    let named: Vec<String> = off
        .iter()
        .take(4)
        .map(|(_, p, tid, name)| format!("{tid} {name} {p:.0}%"))
        .collect();
    let more = match off.len().saturating_sub(4) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let which = if off.len() == 1 { "thread" } else { "threads" };
    format!(
        " ({which} mostly off node {node}: {}{more})",
        named.join(", ")
    )
}

/// One finding per checked device, in the platform's device order.
pub fn check(p: &Platform, u: &Usage) -> Vec<Finding> {
    let Some(devices) = &p.devices else {
        return Vec::new();
    };
    let samples = u.samples();
    let pages = u.pages();
    devices
        .iter()
        .filter(|d| checked_kind(d))
        .map(|d| finding(p, d, u, samples, pages))
        .collect()
}

fn finding(p: &Platform, d: &Device, u: &Usage, samples: u64, pages: u64) -> Finding {
    let device = d.label();
    let Some(node) = d.node else {
        let why = d.note.clone().unwrap_or_else(|| "no node".into());
        return Finding { device: device.clone(), node: None, verdict: Verdict::Unchecked, off_node_samples_pct: None, off_node_pages_pct: None, off_node_traffic_pct: None, sentence: format!("{device}: {why}, so it cannot be checked; find its socket from the slot it sits in") };
    };
    let off_s = samples - u.samples_by_node.get(&node).copied().unwrap_or(0);
    let off_p = pages
        - u.pages_by_node
            .as_ref()
            .and_then(|m| m.get(&node))
            .copied()
            .unwrap_or(0);
    let s_pct = (samples > 0).then(|| pct(off_s, samples));
    let p_pct = (pages > 0).then(|| pct(off_p, pages));
    let mut out = Finding {
        device: device.clone(),
        node: Some(node),
        verdict: Verdict::Local,
        off_node_samples_pct: s_pct,
        off_node_pages_pct: p_pct,
        off_node_traffic_pct: None,
        sentence: String::new(),
    };
    // Traced: the device is judged by the threads that really moved its data.
    let traffic = u
        .traffic
        .as_ref()
        .map(|t| d.names.iter().find_map(|n| t.get(n)));
    if let Some(None) = traffic {
        out.verdict = Verdict::Unused;
        out.sentence = format!("{device} is on node {node}; the target moved no data through it");
        return out;
    }
    let traffic = traffic.flatten();
    let t_all = traffic.map_or(0, |t| t.bytes_by_node.values().sum::<u64>());
    let t_off = t_all
        - traffic
            .and_then(|t| t.bytes_by_node.get(&node))
            .copied()
            .unwrap_or(0);
    let t_pct = (t_all > 0).then(|| pct(t_off, t_all));
    out.off_node_traffic_pct = t_pct;
    if p.nodes.iter().filter(|n| !n.cpus.is_empty()).count() < 2 {
        out.verdict = Verdict::Local;
        out.sentence =
            format!("{device} is on node {node}, the only node with CPUs: every access is local");
        return out;
    }
    if samples == 0 && pages == 0 && t_all == 0 {
        out.verdict = Verdict::Unchecked;
        out.sentence = format!("{device} is on node {node}; the result has no samples with a CPU and no page placement, so nothing to check it against");
        return out;
    }
    let e = Evidence {
        d,
        u,
        node,
        traffic,
        s_pct,
        p_pct,
        t_pct,
    };
    let parts = e.mismatches();
    if parts.is_empty() {
        out.sentence = format!("{device} is on node {node}; {}: local", e.local());
        return out;
    }
    let cpus = p
        .nodes
        .iter()
        .find(|n| n.id == node)
        .map(|n| format_cpulist(&n.cpus))
        .unwrap_or_default();
    let fix = format!("pin the threads to node {node}'s CPUs {cpus} (taskset -c {cpus}, or numactl --cpunodebind={node} --membind={node})");
    out.verdict = Verdict::Mismatch;
    out.sentence = format!("{device} is on node {node}; {}; {fix}", parts.join("; "));
    out
}

/// What a device on `node` is judged by: the traffic traced through it, or the target's
/// samples, and its pages; each off-node share, when there is anything to take it of.
struct Evidence<'a> {
    d: &'a Device,
    u: &'a Usage,
    node: u32,
    traffic: Option<&'a Traffic>,
    s_pct: Option<f64>,
    p_pct: Option<f64>,
    t_pct: Option<f64>,
}

impl Evidence<'_> {
    /// What the target moved through the device.
    fn moved(&self) -> Option<String> {
        self.traffic.map(|t| {
            format!(
                "the target read {} from it and wrote {}",
                size(t.read_bytes),
                size(t.write_bytes)
            )
        })
    }

    /// One clause per majority off the device's node: of its traffic (else of the
    /// samples), and of the pages.
    fn mismatches(&self) -> Vec<String> {
        let (d, u, node) = (self.d, self.u, self.node);
        let mut parts: Vec<String> = Vec::new();
        if let (Some(t), Some(tp)) = (self.traffic, self.t_pct) {
            if let Some(other) = main_other(&t.bytes_by_node, node).filter(|_| tp > 50.0) {
                parts.push(format!(
                    "{}, {tp:.0}% of it on node {other}'s CPUs{}: {}",
                    self.moved().unwrap_or_default(),
                    off_threads(&t.threads, node),
                    what_lands(d, node)
                ));
            }
        } else if let (Some(sp), Some(other)) = (self.s_pct, main_other(&u.samples_by_node, node)) {
            // Not traced: a majority of the samples off the device's node is the mismatch.
            if sp > 50.0 {
                parts.push(format!(
                    "{:.0}% of the samples of the target's threads ran on node {other}{}: {}",
                    sp,
                    off_threads(&u.threads, node),
                    what_lands(d, node)
                ));
            }
        }
        if let (Some(pp), Some(other)) = (
            self.p_pct,
            u.pages_by_node.as_ref().and_then(|m| main_other(m, node)),
        ) {
            if pp > 50.0 {
                parts.push(format!("{pp:.0}% of the target's resident pages are on node {other}, so buffers exchanged with the device cross the interconnect"));
            }
        }
        parts
    }

    /// What shows the device's use local: its traffic's (else the samples') and the
    /// pages' shares on its node.
    fn local(&self) -> String {
        let node = self.node;
        let ran = match (self.moved(), self.t_pct) {
            (Some(m), Some(tp)) => Some(format!(
                "{m}, {:.0}% of it on node {node}'s CPUs",
                100.0 - tp
            )),
            (Some(m), None) => Some(m),
            _ => self
                .s_pct
                .map(|sp| format!("{:.0}% of the samples ran on node {node}", 100.0 - sp)),
        };
        let mem = self
            .p_pct
            .map(|pp| format!("{:.0}% of the pages are on node {node}", 100.0 - pp));
        let what: Vec<String> = [ran, mem].into_iter().flatten().collect();
        what.join(" and ")
    }
}
