//! Intel uncore planning: which counters to open for inbound PCIe bandwidth per IIO stack
//! (UNC_IIO_DATA_REQ_OF_CPU.*.PART0..3), outbound MMIO (UNC_IIO_DATA_REQ_BY_CPU.*), and
//! DDIO hits and misses per socket (UNC_CHA_TOR_INSERTS.IO_*), encoded from the CPU's
//! perfmon uncore file through the PMU's sysfs `format` fields; the perfmon metric file's
//! `io_*` formulas are kept and evaluated per socket by the reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::encode::{bytes_per_count, encode, events, Event};
use crate::model::{Metric, Scope, Series};
use kairos_bandwidth::counters::{discover, UncorePmu};

/// The perfmon metrics kept, when the metric file has them.
pub const METRICS: [&str; 5] = [
    "io_bandwidth_read",
    "io_bandwidth_write",
    "io_read_l3_miss",
    "io_full_write_l3_miss",
    "io_partial_write_l3_miss",
];

/// Per-stack flows: (flow, event prefix); the four PART events of each are summed.
pub const STACK_FLOWS: [(&str, &str); 4] = [
    ("inbound read", "UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART"),
    ("inbound write", "UNC_IIO_DATA_REQ_OF_CPU.MEM_WRITE.PART"),
    ("mmio read", "UNC_IIO_DATA_REQ_BY_CPU.MEM_READ.PART"),
    ("mmio write", "UNC_IIO_DATA_REQ_BY_CPU.MEM_WRITE.PART"),
];

/// Per-socket CHA events besides the metrics': all IO hits and misses, and what the
/// average inbound read and write latencies need (TOR occupancy over inserts of PCIe reads
/// and of ItoM full-line writes, over the CHA clock).
pub const SOCKET_EVENTS: [&str; 7] = [
    "UNC_CHA_TOR_INSERTS.IO_HIT",
    "UNC_CHA_TOR_INSERTS.IO_MISS",
    "UNC_CHA_TOR_OCCUPANCY.IO_PCIRDCUR",
    "UNC_CHA_TOR_INSERTS.IO_PCIRDCUR",
    "UNC_CHA_TOR_OCCUPANCY.IO_ITOM",
    "UNC_CHA_TOR_INSERTS.IO_ITOM",
    "UNC_CHA_CLOCKTICKS",
];

/// Where to look (tests give recorded trees).
pub struct Places {
    /// `/sys/bus/event_source/devices`.
    pub pmus: PathBuf,
    /// `/sys` (CPU sockets, PCI devices).
    pub sys: PathBuf,
}

/// One counter to open: `event` on `pmu` counted on `cpu`, each count worth `scale` of
/// series `series`.
#[derive(Debug, Clone, PartialEq)]
pub struct Counter {
    pub pmu: String,
    pub type_: u32,
    pub config: u64,
    /// The box filter (SKX CHA opcode match), 0 for none.
    pub config1: u64,
    pub event: String,
    pub cpu: u32,
    pub series: usize,
    pub scale: f64,
}

/// What to open, and what it adds up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub series: Vec<Series>,
    pub counters: Vec<Counter>,
    pub metrics: Vec<Metric>,
    pub notes: Vec<String>,
}

fn socket_of(sys: &Path, cpu: u32) -> u32 {
    std::fs::read_to_string(sys.join(format!(
        "devices/system/cpu/cpu{cpu}/topology/physical_package_id"
    )))
    .ok()
    .and_then(|s| s.trim().parse().ok())
    .unwrap_or(0)
}

fn numbered<'a>(pmus: &'a [UncorePmu], prefix: &'a str) -> impl Iterator<Item = &'a UncorePmu> {
    pmus.iter().filter(move |p| {
        p.name
            .strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    })
}

/// The root bus of `pmu` on socket `die`: its `dieN` attribute ("0000:17"), else None.
pub fn stack_bus(pmus_dir: &Path, pmu: &str, die: u32) -> Option<String> {
    std::fs::read_to_string(pmus_dir.join(pmu).join(format!("die{die}")))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The counters for this machine, or why there are none. `metrics_json`: the CPU's
/// perfmon metric file, when there is one.
pub fn plan(
    places: &Places,
    uncore_json: &str,
    metrics_json: Option<&str>,
) -> Result<Plan, String> {
    plan_files(places, &[uncore_json], metrics_json)
}

/// The same with several uncore files (the CPU's file, then its `uncore experimental`
/// file, where ICX keeps `TOR_OCCUPANCY.IO_ITOM`): a name takes its first file's event.
pub fn plan_files(
    places: &Places,
    uncore_jsons: &[&str],
    metrics_json: Option<&str>,
) -> Result<Plan, String> {
    let pmus = discover(&places.pmus);
    if pmus.is_empty() {
        return Err("no uncore PMUs (a virtual machine exposes none)".into());
    }
    let mut evs = Vec::new();
    for json in uncore_jsons {
        evs.extend(events(json)?);
    }
    let mut by_name: BTreeMap<&str, &Event> = BTreeMap::new();
    for e in &evs {
        by_name.entry(e.event_name.as_str()).or_insert(e);
    }
    let derived = crate::opcode::derived(&by_name);
    let mut planner = Planner {
        places,
        pmus: &pmus,
        by_name: &by_name,
        p: Plan::default(),
    };
    planner.stacks();
    let wanted = planner.metrics(metrics_json)?;
    planner.socket_events(wanted, &derived);
    let mut p = planner.p;
    let mut seen_notes = std::collections::BTreeSet::new();
    p.notes.retain(|n| seen_notes.insert(n.clone()));
    if p.counters.is_empty() {
        return Err(format!(
            "none of the uncore PMUs here ({}) counts PCIe or DDIO traffic",
            pmus.iter()
                .map(|p| p.name.as_str())
                .take(6)
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(p)
}

/// The plan being made from the machine's uncore PMUs and the perfmon files' events.
struct Planner<'a> {
    places: &'a Places,
    pmus: &'a [UncorePmu],
    /// The events of the uncore files, by name.
    by_name: &'a BTreeMap<&'a str, &'a Event>,
    p: Plan,
}

impl Planner<'_> {
    /// The per-stack series: each flow of [`STACK_FLOWS`] on each IIO stack, labelled with
    /// the devices behind the stack.
    fn stacks(&mut self) {
        let devices = {
            let topo = kairos_platform::numa::Topology::read(&self.places.sys);
            kairos_platform::devices::read_devices(&self.places.sys, &topo)
        };
        for pmu in numbered(self.pmus, "uncore_iio_") {
            for &cpu in &pmu.cpus {
                let socket = socket_of(&self.places.sys, cpu);
                let bus = stack_bus(&self.places.pmus, &pmu.name, socket);
                let block = bus.as_ref().map(|b| format!("pci{b}"));
                let behind: Vec<String> = devices
                    .iter()
                    .filter(|d| block.is_some() && d.root == block)
                    .map(|d| d.label())
                    .collect();
                for (flow, prefix) in STACK_FLOWS {
                    if !self.stack_flow(pmu, cpu, prefix) {
                        continue;
                    }
                    self.p.series.push(Series {
                        scope: Scope::Stack,
                        name: pmu.name.clone(),
                        flow: flow.into(),
                        unit: "bytes".into(),
                        socket: Some(socket),
                        pci: bus.clone(),
                        block: block.clone(),
                        label: if behind.is_empty() {
                            "no devices".into()
                        } else {
                            behind.join(", ")
                        },
                        link_bytes_per_s: None,
                    });
                }
            }
        }
        if self.p.series.is_empty() {
            self.p.notes.push("no uncore_iio PMU with the perfmon file's IIO events: per-stack PCIe traffic is not measured".into());
        }
    }

    /// Counters for the four PART events of one flow on one stack, into the series to be
    /// pushed next; false when none can be counted.
    fn stack_flow(&mut self, pmu: &UncorePmu, cpu: u32, prefix: &str) -> bool {
        let p = &mut self.p;
        let index = p.series.len();
        let mut any = false;
        for part in 0..4 {
            let name = format!("{prefix}{part}");
            let Some(e) = self.by_name.get(name.as_str()) else {
                continue;
            };
            let Some(scale) = bytes_per_count(e) else {
                p.notes.push(format!("{name} is not counted: the perfmon file does not say how many bytes a count is"));
                continue;
            };
            let c = match encode(&self.places.pmus.join(&pmu.name), e) {
                Ok(c) => c,
                Err(why) => {
                    p.notes.push(format!("{name} is not counted: {why}"));
                    continue;
                }
            };
            p.counters.push(Counter {
                pmu: pmu.name.clone(),
                type_: pmu.type_,
                config: c.config,
                config1: c.config1,
                event: name,
                cpu,
                series: index,
                scale,
            });
            any = true;
        }
        any
    }

    /// The perfmon metrics of [`METRICS`] whose events the uncore files define; returns
    /// the socket events to count: [`SOCKET_EVENTS`] and the metrics', each once.
    fn metrics(&mut self, metrics_json: Option<&str>) -> Result<Vec<String>, String> {
        let metric_list: Vec<kairos_metrics::PerfmonMetric> = match metrics_json {
            Some(j) => kairos_metrics::load_perfmon(j)
                .map_err(|e| format!("the perfmon metric file: {e}"))?,
            None => Vec::new(),
        };
        let mut wanted: Vec<String> = SOCKET_EVENTS.iter().map(|s| s.to_string()).collect();
        for m in metric_list
            .iter()
            .filter(|m| METRICS.contains(&m.name.as_str()))
        {
            let missing: Vec<&str> = m
                .events
                .iter()
                .map(|b| b.name.as_str())
                .filter(|n| !self.by_name.contains_key(n))
                .collect();
            if !missing.is_empty() {
                self.p.notes.push(format!(
                    "{} is not evaluated: it counts {}, which the uncore event file does not define",
                    m.name,
                    missing.join(", ")
                ));
                continue;
            }
            wanted.extend(m.events.iter().map(|b| b.name.clone()));
            self.p.metrics.push(Metric {
                name: m.name.clone(),
                formula: m.formula.clone(),
                events: m
                    .events
                    .iter()
                    .map(|b| (b.alias.clone(), b.name.clone()))
                    .collect(),
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        wanted.retain(|w| seen.insert(w.clone()));
        Ok(wanted)
    }

    /// Counters of the socket events on every box of their unit, summed per socket.
    fn socket_events(&mut self, wanted: Vec<String>, derived: &BTreeMap<String, Vec<Event>>) {
        let p = &mut self.p;
        let chas: Vec<&UncorePmu> = numbered(self.pmus, "uncore_cha_").collect();
        if chas.is_empty() {
            p.notes
                .push("no uncore_cha PMU: DDIO hits and misses are not measured".into());
        }
        let mut socket_series: BTreeMap<(u32, String), usize> = BTreeMap::new();
        for name in wanted {
            // The events summed into this series: built from filters (SKX), else the file's
            // own.
            let parts: Vec<&Event> = match derived.get(&name) {
                Some(list) => list.iter().collect(),
                None => self
                    .by_name
                    .get(name.as_str())
                    .copied()
                    .into_iter()
                    .collect(),
            };
            if let Some(e) = parts.iter().find(|e| crate::opcode::unfiltered(e)) {
                p.notes.push(format!("{} is not counted: the perfmon file gives it a CHA FILTER1 value of 0, which matches no request, and has no opcode events to take the filter from (give the CPU's uncore_experimental file too)", e.event_name));
                continue;
            }
            for e in parts {
                socket_counters(self.places, self.pmus, p, &mut socket_series, &name, e);
            }
        }
    }
}

/// Counters of `e` on every box of its unit (all CHAs, or all IIO stacks), summed per
/// socket into series `name`.
fn socket_counters(
    places: &Places,
    pmus: &[UncorePmu],
    p: &mut Plan,
    socket_series: &mut BTreeMap<(u32, String), usize>,
    name: &str,
    e: &Event,
) {
    let prefix = format!("uncore_{}_", e.unit.to_ascii_lowercase());
    for unit in numbered(pmus, &prefix) {
        // The CHA clock is the same on every CHA of a socket: one is enough.
        if name == "UNC_CHA_CLOCKTICKS" && !unit.name.ends_with("_0") {
            continue;
        }
        let c = match encode(&places.pmus.join(&unit.name), e) {
            Ok(c) => c,
            Err(why) => {
                p.notes
                    .push(format!("{} is not counted: {why}", e.event_name));
                continue;
            }
        };
        for &cpu in &unit.cpus {
            let socket = socket_of(&places.sys, cpu);
            let n = p.series.len();
            let index = *socket_series.entry((socket, name.to_string())).or_insert(n);
            if index == n {
                p.series.push(Series {
                    scope: Scope::Socket,
                    name: format!("socket {socket}"),
                    flow: name.to_string(),
                    unit: "count".into(),
                    socket: Some(socket),
                    pci: None,
                    block: None,
                    label: e.brief_description.clone(),
                    link_bytes_per_s: None,
                });
            }
            p.counters.push(Counter {
                pmu: unit.name.clone(),
                type_: unit.type_,
                config: c.config,
                config1: c.config1,
                event: e.event_name.clone(),
                cpu,
                series: index,
                scale: 1.0,
            });
        }
    }
}
