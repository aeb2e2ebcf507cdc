//! NUMA of an imported recording: no placement queries and no first-touch faults, but the
//! header may name the recording machine's nodes (NUMA_TOPOLOGY: each sample's CPU then has
//! a node) and its memory layout (MEM_TOPOLOGY: which node each block of physical memory is
//! on). Samples with a physical address (`perf record --phys-data`, PERF_SAMPLE_PHYS_ADDR)
//! then place their page on a node: the placement of the pages that were sampled, which is
//! what a remote-access estimate needs.

use kairos_convert::DataAccess;
use kairos_model::Profile;
use kairos_perf_data::Features;
use kairos_platform::numa::Topology;

use super::placement::Placement;
use super::{Recorded, PAGE};

/// The nodes of the header's NUMA_TOPOLOGY, read as the import's platform snapshot reads
/// them (None: the recording has none, or a CPU list that does not parse).
pub fn topology(f: &Features) -> Option<Topology> {
    let header = kairos_session::header_nodes(f);
    Some(Topology {
        nodes: kairos_platform::header_nodes(&header)?,
        source: "the recording's perf.data header (NUMA_TOPOLOGY)".into(),
    })
}

/// What an import knows: nodes from the header, and the sampled pages' nodes where the
/// samples carry physical addresses and the header maps them to nodes.
pub fn recorded(f: &Features, accesses: &[DataAccess], profile: &Profile) -> Recorded {
    let mut rec = Recorded {
        topology: topology(f),
        ..Recorded::default()
    };
    let with_phys = accesses
        .iter()
        .filter(|a| a.phys_addr.is_some_and(|p| p != 0))
        .count();
    match (&f.mem_topology, with_phys) {
        (_, 0) => rec.why_not = Some("an imported recording has no page placement queries and its samples no physical addresses (perf record --phys-data); with a PMU its data sources still say which accesses were remote".into()),
        (Some(mem), n) => {
            rec.placement = Some(placement(mem, accesses, profile, &mut rec.notes));
            rec.placement_from = Some(format!("physical addresses of {n} samples (MEM_TOPOLOGY)"));
        }
        (None, _) => rec.why_not = Some("an imported recording has no page placement queries, and its header no memory layout (MEM_TOPOLOGY) to place the sampled physical addresses by".into()),
    }
    rec
}

/// One 4 KiB page per sampled physical address, on the node whose memory block holds it.
fn placement(
    mem: &kairos_perf_data::MemTopology,
    accesses: &[DataAccess],
    profile: &Profile,
    notes: &mut Vec<String>,
) -> Placement {
    let mut p = Placement {
        stride: 1,
        ..Placement::default()
    };
    let (mut outside, mut placed) = (0u64, 0u64);
    for a in accesses {
        let Some(phys) = a.phys_addr.filter(|&p| p != 0) else {
            continue;
        };
        let Some(node) = mem.node_of(phys).and_then(|n| u32::try_from(n).ok()) else {
            outside += 1;
            continue;
        };
        let pid = profile
            .threads
            .get(a.thread as usize)
            .map_or(0, |t| t.pid.max(0) as u32);
        let page = a.addr & !(PAGE - 1);
        p.runs
            .entry(pid)
            .or_default()
            .insert(page, page + PAGE, node, a.time_ns);
        placed += 1;
    }
    notes.push(format!(
        "page placement from physical addresses: {placed} sampled accesses placed their page by the header's memory layout (MEM_TOPOLOGY, {} MiB blocks); only sampled pages are placed",
        mem.block_size >> 20
    ));
    if outside > 0 {
        notes.push(format!(
            "{outside} sampled physical addresses are in no memory block the header lists (device memory or a damaged header): their pages are not placed"
        ));
    }
    p
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kairos_convert::side::MemoryObject;
    use kairos_convert::AccessSource;
    use kairos_model::Thread;
    use kairos_perf_data::{MemNode, MemTopology, NumaNode};

    const BLOCK: u64 = 128 << 20;

    /// Two nodes: CPUs 0-1 and memory blocks 0-1 on node 0, CPUs 2-3 and blocks 2-3 on 1.
    fn header(mem: bool) -> Features {
        let node = |id: u32, cpus: &str| NumaNode {
            id,
            mem_total_kb: 1 << 20,
            mem_free_kb: 0,
            cpus: cpus.into(),
        };
        let blocks = |id: u64, word: u64| MemNode {
            id,
            bits: 4,
            blocks: vec![word],
        };
        Features {
            numa_nodes: vec![node(1, "2-3"), node(0, "0-1")],
            mem_topology: mem.then(|| MemTopology {
                block_size: BLOCK,
                nodes: vec![blocks(0, 0b0011), blocks(1, 0b1100)],
            }),
            ..Features::default()
        }
    }

    fn access(addr: u64, phys: Option<u64>) -> DataAccess {
        DataAccess {
            attr: 0,
            time_ns: 1,
            thread: 0,
            cpu: 0,
            ip: 0,
            stack: None,
            source: AccessSource::Pmu,
            addr,
            size: 0,
            direction: None,
            period: 1,
            data_src: None,
            latency: None,
            phys_addr: phys,
            sp: None,
            static_var: None,
            mapping: MemoryObject {
                name: "[anon]".into(),
                start: 0,
                end: u64::MAX,
            },
        }
    }

    fn profile() -> Profile {
        let t = Thread {
            pid: 10,
            tid: 11,
            name: "t".into(),
            process_name: "p".into(),
        };
        Profile {
            threads: vec![t],
            ..Profile::default()
        }
    }

    #[test]
    fn sampled_physical_addresses_place_their_pages_on_the_headers_nodes() {
        let acc = [
            access(0x7000_1234, Some(2 * BLOCK + 0x5000)),
            access(0x7000_9000, Some(BLOCK - 1)),
            access(0x7001_0000, None),
            access(0x7002_0000, Some(9 * BLOCK)),
        ];
        let rec = recorded(&header(true), &acc, &profile());
        let t = rec.topology.as_ref().unwrap();
        assert_eq!(
            t.nodes
                .iter()
                .map(|n| (n.id, n.cpus.clone()))
                .collect::<Vec<_>>(),
            [(0, vec![0, 1]), (1, vec![2, 3])]
        );
        assert!(rec.why_not.is_none());
        let p = rec.placement.as_ref().unwrap();
        assert_eq!(p.node(10, 0x7000_1000), Some(1));
        assert_eq!(p.node(10, 0x7000_9fff), Some(0));
        assert_eq!(
            p.node(10, 0x7001_0000),
            None,
            "no physical address: not placed"
        );
        assert_eq!(
            p.node(10, 0x7002_0000),
            None,
            "outside every block: not placed"
        );
        assert_eq!(
            rec.placement_from.as_deref(),
            Some("physical addresses of 3 samples (MEM_TOPOLOGY)")
        );
        assert!(
            rec.notes
                .iter()
                .any(|n| n.starts_with("1 sampled physical addresses are in no memory block")),
            "{:?}",
            rec.notes
        );
    }

    #[test]
    fn without_a_memory_layout_or_physical_addresses_it_says_which_is_missing() {
        let acc = [access(0x7000_1234, Some(2 * BLOCK))];
        let no_layout = recorded(&header(false), &acc, &profile());
        assert!(no_layout.placement.is_none() && no_layout.topology.is_some());
        assert!(no_layout.why_not.unwrap().contains("MEM_TOPOLOGY"));
        let no_phys = recorded(&header(true), &[access(0x7000_1234, None)], &profile());
        assert!(no_phys.why_not.unwrap().contains("--phys-data"));
        assert!(recorded(&Features::default(), &acc, &profile())
            .topology
            .is_none());
    }
}
