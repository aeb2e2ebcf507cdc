//! NUMA in memory-access, on any Linux and without a PMU: for each memory object, its pages
//! per node (move_pages(2) queries while the target runs: `placement`, `query`, `runs`),
//! who touched each page first (the page-fault tracepoint's address and error code, with
//! the sample's CPU, thread and call stack: `faults`), which nodes the threads that access
//! it ran on and the estimated share of remote accesses (address samples' CPUs against the
//! pages' nodes; with a PMU also the data source's remote bits): `attribute`; one sentence
//! per problem with its fix (`problems`, `naming`); the `numa_*` tables (`table`), the
//! manifest's summary (here) and the `numa` report (`report`). `collect` turns it on.

pub mod attribute;
pub(crate) mod collect;
pub mod faults;
pub mod imported;
pub mod naming;
pub mod placement;
pub mod problems;
pub mod query;
pub mod report;
pub mod runs;
pub mod table;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use kairos_model::Profile;
use serde::{Deserialize, Serialize};

pub use kairos_platform::numa::{format_cpulist, Topology};

use crate::build::Built;
use crate::objects::ObjectMap;
use attribute::{Inputs, NumaData};
use faults::Faults;
use placement::Placement;

/// Pages are counted in base pages of 4 KiB (x86-64, and arm64 as most distributions build it).
pub const PAGE: u64 = 4096;
/// A transparent huge page (one PMD) with 4 KiB base pages.
pub const HUGE: u64 = 2 << 20;
/// The node of a CPU no node lists (or of a recording without the machine's nodes).
pub const UNKNOWN_NODE: u32 = u32::MAX;
/// The key of this summary in the manifest's `memory_access` entry.
pub const KEY: &str = "numa";

/// What the manifest keeps of the NUMA side of a result: enough for the report's header,
/// `kairos compare` and the page's placement chart.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Whether placement and first touch were recorded, and if not why (`-k numa=off`...).
    pub recorded: bool,
    pub why_not: Option<String>,
    /// The machine's nodes at collection time.
    pub topology: Option<Topology>,
    /// Placement queries made, and how long before the end of the collection the last one ran.
    pub queries: u64,
    pub last_query_before_end_ns: Option<u64>,
    /// Every `stride`-th page was asked (1: all).
    pub stride: u64,
    /// Why no page has a queried placement, when none has.
    pub placement_missing: Option<String>,
    /// Placement over time: (ns since the start, pages per node).
    pub timeline: Vec<(u64, BTreeMap<u32, u64>)>,
    /// The fault events read, their count, and whether they say read or write.
    pub fault_events: Vec<String>,
    pub faults: u64,
    pub write_flag: bool,
    /// Records the kernel dropped (ring buffer full): fault records among them leave
    /// their pages' first touch unknown.
    #[serde(default)]
    pub lost_records: u64,
    /// Over all objects: pages by node (queried, and estimated from first touch), huge pages.
    pub pages_by_node: BTreeMap<u32, u64>,
    pub estimated_by_node: BTreeMap<u32, u64>,
    pub huge_pages: u64,
    /// Sampled accesses whose CPU node and page node are known, and the remote ones.
    pub samples_with_node: u64,
    pub remote_samples: u64,
    pub remote_share_pct: Option<f64>,
    /// PMU samples, and those the data source marks remote.
    pub pmu_samples: u64,
    pub pmu_remote_samples: u64,
    pub pmu_remote_share_pct: Option<f64>,
    pub problems: u64,
    /// Collected on an emulated machine (QEMU TCG), whose nodes have equal latency.
    #[serde(default)]
    pub emulated: bool,
    /// Placement learnt otherwise than by queries (an import's sampled physical addresses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_from: Option<String>,
    pub notes: Vec<String>,
}

impl Summary {
    /// Nodes that have CPUs (0 when unknown).
    pub fn nodes(&self) -> usize {
        self.topology.as_ref().map_or(0, Topology::nodes_with_cpus)
    }
}

/// What the end of a collection (or an import) knows for the NUMA side.
#[derive(Default)]
pub struct Recorded {
    pub placement: Option<Placement>,
    pub topology: Option<Topology>,
    /// Set when NUMA recording was off or impossible: the summary says why.
    pub why_not: Option<String>,
    /// An emulated machine: placement is real, timing is not.
    pub emulated: bool,
    /// How the placement was learnt when not by queries.
    pub placement_from: Option<String>,
    pub notes: Vec<String>,
}

/// Attribution and summary at the end: `built` and `map` are the access attribution's.
#[allow(clippy::too_many_arguments)]
pub fn analyse(
    rec: &Recorded,
    faults: &Faults,
    built: &Built,
    map: &mut ObjectMap,
    profile: &Profile,
    sources: &HashMap<String, String>,
    start_ns: u64,
    end_ns: u64,
) -> (NumaData, Summary) {
    let inp = Inputs {
        built,
        profile,
        placement: rec.placement.as_ref(),
        faults,
        topology: rec.topology.as_ref(),
        sources,
    };
    let data = attribute::attribute(&inp, map);
    let mut s = Summary {
        recorded: rec.why_not.is_none(),
        why_not: rec.why_not.clone(),
        topology: rec.topology.clone(),
        fault_events: faults.events.clone(),
        faults: faults.faults.len() as u64,
        write_flag: faults.faults.iter().any(|f| f.write.is_some()),
        lost_records: profile.losses.lost_records,
        emulated: rec.emulated,
        placement_from: rec.placement_from.clone(),
        notes: rec.notes.iter().chain(&faults.notes).cloned().collect(),
        stride: 1,
        ..Summary::default()
    };
    if let Some(p) = &rec.placement {
        s.queries = p.snapshots.len() as u64;
        s.last_query_before_end_ns = p.snapshots.last().map(|q| end_ns.saturating_sub(q.time_ns));
        s.stride = p.stride.max(1);
        s.placement_missing = p.missing.clone();
        s.timeline = p
            .snapshots
            .iter()
            .map(|q| (q.time_ns.saturating_sub(start_ns), q.by_node.clone()))
            .collect();
        s.notes.extend(p.notes.iter().cloned());
        // The report's placement line points to the notes for the reason.
        if let Some(why) = p.missing.as_ref().filter(|w| !s.notes.contains(w)) {
            s.notes.push(format!("page placement: {why}"));
        }
        // Each page once, whatever the objects sharing it.
        for r in p.runs.values().flat_map(|m| m.iter()) {
            *s.pages_by_node.entry(r.node).or_default() += (r.end - r.start) / PAGE;
        }
    }
    for o in &data.objects {
        for (n, c) in &o.estimated {
            *s.estimated_by_node.entry(*n).or_default() += c;
        }
        s.huge_pages += o.huge_pages;
        s.samples_with_node += o.with_node;
        s.remote_samples += o.remote;
        s.pmu_samples += o.pmu;
        s.pmu_remote_samples += o.pmu_remote;
    }
    let share = |a: u64, b: u64| (b > 0).then(|| 100.0 * a as f64 / b as f64);
    s.remote_share_pct = share(s.remote_samples, s.samples_with_node);
    s.pmu_remote_share_pct = share(s.pmu_remote_samples, s.pmu_samples);
    s.problems = problems::problems(&data, map.objects(), s.nodes()).len() as u64;
    (data, s)
}
