//! The plan: for each CPU node, its CPUs run the triad on arrays bound to each memory
//! node in turn; best of `reps` repetitions; a copy on the same arrays as the second method.

use std::path::PathBuf;
use std::time::Duration;

use kairos_platform::numa::Topology;
use serde::{Deserialize, Serialize};

use crate::kernel::{run, Array, Kernel};
use crate::Error;

#[derive(Debug, Clone)]
pub struct Options {
    /// Size of each of the three arrays.
    pub mib_per_array: usize,
    /// Threads per CPU node (default: one per CPU of the node).
    pub threads: Option<usize>,
    /// CPU nodes to measure from (default: every node with CPUs).
    pub nodes: Option<Vec<u32>>,
    pub reps: usize,
    /// Passes over the arrays per repetition.
    pub passes: u32,
    /// /sys (a test gives a recorded tree).
    pub sys_dir: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mib_per_array: 256,
            threads: None,
            nodes: None,
            reps: 5,
            passes: 4,
            sys_dir: PathBuf::from("/sys"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub cpu_node: u32,
    pub mem_node: u32,
    pub threads: usize,
    /// GB/s (10^9 bytes), STREAM's byte count.
    pub triad_gbs: f64,
    pub copy_gbs: f64,
}

impl Pair {
    pub fn local(&self) -> bool {
        self.cpu_node == self.mem_node
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub host: String,
    /// Seconds since the epoch.
    pub when: u64,
    pub nodes: usize,
    pub mib_per_array: usize,
    pub reps: usize,
    pub pairs: Vec<Pair>,
    pub notes: Vec<String>,
}

impl Measurement {
    /// The platform maximum: the best local triad summed over nodes (each node's CPUs on
    /// its own memory run at the same time on a real machine; measured one node at a time
    /// here, so this is their sum).
    pub fn local_max_gbs(&self) -> f64 {
        let mut best = std::collections::BTreeMap::<u32, f64>::new();
        for p in self.pairs.iter().filter(|p| p.local()) {
            let b = best.entry(p.cpu_node).or_insert(0.0);
            *b = b.max(p.triad_gbs);
        }
        best.values().sum()
    }

    pub fn remote_max_gbs(&self) -> Option<f64> {
        self.pairs
            .iter()
            .filter(|p| !p.local())
            .map(|p| p.triad_gbs)
            .reduce(f64::max)
    }

    /// How it was measured, in one sentence.
    pub fn method(&self) -> String {
        format!(
            "triad a = b + s*c over three {} MiB arrays (24 bytes per element, as STREAM counts; write-allocate not counted), threads pinned to the CPU node's CPUs, arrays bound to the memory node before first touch, best of {} repetitions; checked against a copy of the same arrays (16 bytes per element)",
            self.mib_per_array, self.reps
        )
    }
}

fn gbs(bytes: f64, t: Duration) -> f64 {
    bytes / t.as_secs_f64().max(1e-9) / 1e9
}

/// Measures every (CPU node, memory node) pair; `progress` hears each pair as it starts.
pub fn measure(o: &Options, progress: &mut dyn FnMut(u32, u32)) -> Result<Measurement, Error> {
    let topo = Topology::read(&o.sys_dir);
    let mut notes = Vec::new();
    let cpu_nodes = cpu_nodes(o, &topo)?;
    // No NUMA in sysfs (a kernel without it): one unbound measurement on every CPU.
    let single = topo.nodes.is_empty();
    if single {
        notes.push(
            "no NUMA nodes in sysfs: measured once on all CPUs without binding memory".into(),
        );
    } else if topo.nodes.len() == 1 {
        notes.push("one NUMA node: no remote bandwidth to measure".into());
    }
    if o.mib_per_array == 0 || o.reps == 0 || o.passes == 0 {
        return Err(Error::Bad(
            "--size-mib, repetitions and passes must be at least 1".into(),
        ));
    }
    let elements = o.mib_per_array << 17;
    let bytes = |per_el: f64| per_el * elements as f64 * o.passes as f64;
    let mem_nodes: Vec<u32> = topo
        .nodes
        .iter()
        .filter(|n| n.mem_total_kb.is_none_or(|k| k > 0))
        .map(|n| n.id)
        .collect();
    let mut pairs = Vec::new();
    for (cpu_node, node_cpus) in cpus_per_node(&topo, single, &cpu_nodes) {
        let threads = o.threads.unwrap_or(node_cpus.len()).clamp(1, 1024);
        let cpus: Vec<u32> = (0..threads)
            .map(|i| node_cpus[i % node_cpus.len()])
            .collect();
        let targets: Vec<Option<u32>> = if single {
            vec![None]
        } else {
            mem_nodes.iter().map(|&m| Some(m)).collect()
        };
        for mem in targets {
            progress(cpu_node.unwrap_or(0), mem.unwrap_or(0));
            let (triad, copy) = best_times(o, &cpus, elements, mem)?;
            pairs.push(Pair {
                cpu_node: cpu_node.unwrap_or(0),
                mem_node: mem.unwrap_or(0),
                threads,
                triad_gbs: gbs(bytes(24.0), triad),
                copy_gbs: gbs(bytes(16.0), copy),
            });
        }
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(Measurement {
        host,
        when,
        nodes: topo.nodes.len().max(1),
        mib_per_array: o.mib_per_array,
        reps: o.reps,
        pairs,
        notes,
    })
}

/// The CPU nodes to measure from: those asked for (each must exist and have CPUs), else
/// every node with CPUs.
fn cpu_nodes(o: &Options, topo: &Topology) -> Result<Vec<u32>, Error> {
    let with_cpus: Vec<u32> = topo
        .nodes
        .iter()
        .filter(|n| !n.cpus.is_empty())
        .map(|n| n.id)
        .collect();
    let have = || {
        if topo.nodes.is_empty() {
            "no NUMA node in sysfs".to_string()
        } else {
            format!(
                "nodes {}",
                topo.nodes
                    .iter()
                    .map(|n| n.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    match &o.nodes {
        Some(ns) => {
            for &n in ns {
                if !topo.nodes.iter().any(|x| x.id == n) {
                    return Err(Error::NoSuchNode {
                        node: n,
                        have: have(),
                    });
                }
                if !with_cpus.contains(&n) {
                    return Err(Error::NoCpus(n));
                }
            }
            Ok(ns.clone())
        }
        None => Ok(with_cpus),
    }
}

/// Each CPU node with its CPUs; without NUMA (`single`), no node and every CPU.
fn cpus_per_node(topo: &Topology, single: bool, cpu_nodes: &[u32]) -> Vec<(Option<u32>, Vec<u32>)> {
    if single {
        let all_cpus: Vec<u32> =
            (0..std::thread::available_parallelism().map_or(1, |n| n.get() as u32)).collect();
        return vec![(None, all_cpus)];
    }
    cpu_nodes
        .iter()
        .map(|&n| {
            (
                Some(n),
                topo.nodes
                    .iter()
                    .find(|x| x.id == n)
                    .map(|x| x.cpus.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// The best triad and copy times of `o.reps` repetitions on `cpus`, the arrays on memory
/// node `mem` (None: unbound).
fn best_times(
    o: &Options,
    cpus: &[u32],
    elements: usize,
    mem: Option<u32>,
) -> Result<(Duration, Duration), Error> {
    let (mut a, mut b, mut c) = (
        Array::new(elements, mem)?,
        Array::new(elements, mem)?,
        Array::new(elements, mem)?,
    );
    run(Kernel::Init, cpus, &mut a, &mut b, &mut c)?;
    let mut triad = Duration::MAX;
    let mut copy = Duration::MAX;
    for _ in 0..o.reps {
        triad = triad.min(run(
            Kernel::Triad { passes: o.passes },
            cpus,
            &mut a,
            &mut b,
            &mut c,
        )?);
        copy = copy.min(run(
            Kernel::Copy { passes: o.passes },
            cpus,
            &mut a,
            &mut b,
            &mut c,
        )?);
    }
    Ok((triad, copy))
}
