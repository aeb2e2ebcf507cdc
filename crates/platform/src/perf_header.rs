//! The platform a perf.data header describes, from the facts kairos-perf-data reads out of
//! its NUMA_TOPOLOGY feature (nodes with CPUs and memory) and CPU_TOPOLOGY feature
//! (sockets from the core-sibling lists, cores from the thread-sibling lists). A header
//! holds no devices, so `devices` is None.

use crate::numa::{parse_cpulist, Node};
use crate::sockets::{Platform, Socket};

/// One node as the header gives it: id, MemTotal in kB, CPUs as a cpulist.
pub struct HeaderNode<'a> {
    pub id: u32,
    pub mem_total_kb: u64,
    pub cpus: &'a str,
}

/// The header's nodes, by id; None when it lists none or a CPU list does not parse.
pub fn header_nodes(header: &[HeaderNode<'_>]) -> Option<Vec<Node>> {
    let mut out: Vec<Node> = header
        .iter()
        .map(|n| {
            Some(Node {
                id: n.id,
                cpus: parse_cpulist(n.cpus)?,
                mem_total_kb: Some(n.mem_total_kb),
                distances: Vec::new(),
            })
        })
        .collect::<Option<_>>()?;
    out.sort_by_key(|n| n.id);
    (!out.is_empty()).then_some(out)
}

fn sockets(core_siblings: &[String], thread_siblings: &[String]) -> Option<Vec<Socket>> {
    let lists = |v: &[String]| {
        v.iter()
            .map(|s| parse_cpulist(s))
            .collect::<Option<Vec<Vec<u32>>>>()
    };
    let (packages, threads) = (lists(core_siblings)?, lists(thread_siblings)?);
    let out: Vec<Socket> = packages
        .into_iter()
        .enumerate()
        .map(|(i, cpus)| {
            let cores = threads
                .iter()
                .filter(|t| t.first().is_some_and(|f| cpus.contains(f)))
                .count() as u32;
            Socket {
                id: i as u32,
                cpus,
                cores,
            }
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

impl Platform {
    /// The platform of a recording's header; None when it has neither topology feature.
    pub fn from_perf_header(
        header_nodes: &[HeaderNode<'_>],
        core_siblings: &[String],
        thread_siblings: &[String],
    ) -> Option<Platform> {
        let mut notes = vec!["a perf.data header lists no devices: devices unknown".to_string()];
        let nodes = self::header_nodes(header_nodes);
        let sockets = sockets(core_siblings, thread_siblings);
        if nodes.is_none() && sockets.is_none() {
            return None;
        }
        if nodes.is_none() {
            notes.push("the header has no NUMA_TOPOLOGY: nodes unknown".into());
        }
        notes.push("node distances are not in a perf.data header".into());
        Some(Platform {
            source: "perf.data header (NUMA_TOPOLOGY, CPU_TOPOLOGY)".into(),
            sockets: sockets.unwrap_or_default(),
            nodes: nodes.unwrap_or_default(),
            devices: None,
            notes,
        })
    }
}
