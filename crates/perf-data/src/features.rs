//! Feature sections ("perf.data header features", after the data section): one
//! `{offset, size}` per bit set in `adds_features`, in bit order. A feature that is
//! malformed is skipped (listed in [`Features::malformed`]) rather than failing the
//! file: samples are still readable without a host name.

use crate::attr::EventAttr;
use crate::consts::*;
use crate::header::{FileHeader, FileSection};
use crate::reader::{c_string, Cursor, Short};

/// Fields of the header features this reader understands. Everything is optional:
/// old files have few features, unfinished ones none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// OSRELEASE (kernel release).
    pub os_release: Option<String>,
    /// VERSION (perf version).
    pub perf_version: Option<String>,
    /// ARCH.
    pub arch: Option<String>,
    /// NRCPUS: (available, online).
    pub nr_cpus: Option<(u32, u32)>,
    /// CPUDESC.
    pub cpu_desc: Option<String>,
    /// CPUID (for example "GenuineIntel,6,85,4").
    pub cpuid: Option<String>,
    /// TOTAL_MEM in KiB.
    pub total_mem_kib: Option<u64>,
    /// CMDLINE: perf's argv.
    pub cmdline: Option<Vec<String>>,
    /// EVENT_DESC: event names with their attrs and ids.
    pub event_desc: Vec<EventDesc>,
    /// BUILD_ID: build ids of the binaries that had samples.
    pub build_ids: Vec<BuildIdEntry>,
    /// CLOCKID: resolution of the clock in ns.
    pub clockid_res_ns: Option<u64>,
    /// NUMA_TOPOLOGY: the recording machine's nodes.
    pub numa_nodes: Vec<NumaNode>,
    /// CPU_TOPOLOGY: the CPU lists (`0-7,16-23`) of each package's cores, then of each
    /// core's hardware threads (perf's core and thread sibling lists).
    pub core_siblings: Vec<String>,
    pub thread_siblings: Vec<String>,
    /// MEM_TOPOLOGY: which node each block of physical memory is on.
    pub mem_topology: Option<MemTopology>,
    /// PMU_MAPPINGS: the PMU types of the recording machine's kernel and their names
    /// (`4: cpu_core`, `10: cpu_atom`, `8: ibs_op`), as (type, name).
    pub pmu_mappings: Vec<(u32, String)>,
    /// Every feature bit set in the header, known or not.
    pub present: Vec<u32>,
    /// Feature bits whose section was out of bounds or malformed (and skipped).
    pub malformed: Vec<u32>,
}

/// MEM_TOPOLOGY: physical memory in blocks of `block_size` bytes, each node a bitmap of
/// the blocks it holds (what `perf report --header -I` prints as "memory nodes").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemTopology {
    pub block_size: u64,
    pub nodes: Vec<MemNode>,
}

/// One node of [`MemTopology`]: bit `i` of `blocks` set when block `i` is on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemNode {
    pub id: u64,
    /// Bits in the bitmap (the highest block index + 1).
    pub bits: u64,
    pub blocks: Vec<u64>,
}

impl MemNode {
    /// Bytes of memory the node holds.
    pub fn bytes(&self, block_size: u64) -> u64 {
        let set: u64 = self.blocks.iter().map(|w| u64::from(w.count_ones())).sum();
        set.saturating_mul(block_size)
    }
}

impl MemTopology {
    /// The node holding physical address `phys` (None: in no block the header lists).
    pub fn node_of(&self, phys: u64) -> Option<u64> {
        let block = phys.checked_div(self.block_size)?;
        let (word, bit) = (usize::try_from(block / 64).ok()?, block % 64);
        self.nodes
            .iter()
            .find(|n| block < n.bits && n.blocks.get(word).is_some_and(|w| w >> bit & 1 == 1))
            .map(|n| n.id)
    }
}

/// One NUMA_TOPOLOGY entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    pub id: u32,
    pub mem_total_kb: u64,
    pub mem_free_kb: u64,
    /// Its CPUs as a cpulist (`0-7,16-23`).
    pub cpus: String,
}

/// One EVENT_DESC entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventDesc {
    /// The attr as stored in the feature.
    pub attr: EventAttr,
    /// Event name.
    pub name: String,
    /// Sample ids of the event.
    pub ids: Vec<u64>,
}

/// One BUILD_ID entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// Record misc bits (cpu mode of the binary).
    pub misc: u16,
    /// Process id (-1 for the kernel / all).
    pub pid: i32,
    /// Build id bytes (20 for SHA-1 ids unless the entry says otherwise).
    pub build_id: Vec<u8>,
    /// Path of the binary.
    pub filename: String,
}

impl Features {
    /// The name of PMU type `type_` in PMU_MAPPINGS (`cpu_core`), if the header has it.
    pub fn pmu_name(&self, type_: u32) -> Option<&str> {
        self.pmu_mappings
            .iter()
            .find(|(t, _)| *t == type_)
            .map(|(_, n)| n.as_str())
    }

    pub(crate) fn parse(file: &[u8], header: &FileHeader) -> Features {
        let mut f = Features {
            present: (0u32..256).filter(|&b| header.has_feature(b)).collect(),
            ..Features::default()
        };
        // An unfinished recording (data size 0) has no feature table after the data.
        if header.data.size == 0 {
            return f;
        }
        let table_at = header.data.offset.saturating_add(header.data.size);
        let table = usize::try_from(table_at)
            .ok()
            .and_then(|o| file.get(o..))
            .unwrap_or(&[]);
        let mut c = Cursor::new(table);
        for bit in f.present.clone() {
            let section = FileSection::read(&mut c);
            let body = section.and_then(|s| s.slice(file, "feature").ok());
            let ok = match body {
                Some(b) => f.parse_one(bit, b).is_ok(),
                None => false,
            };
            if !ok {
                f.malformed.push(bit);
            }
        }
        f
    }

    /// A feature that arrived as a HEADER_FEATURE record (pipe mode).
    pub(crate) fn add_section(&mut self, bit: u32, body: &[u8]) {
        if !self.present.contains(&bit) {
            self.present.push(bit);
        }
        if self.parse_one(bit, body).is_err() {
            self.malformed.push(bit);
        }
    }

    /// One HEADER_BUILD_ID record of a pipe-mode stream.
    pub(crate) fn add_build_id_record(&mut self, rec: &[u8]) {
        self.build_ids.extend(build_ids(rec));
    }

    fn parse_one(&mut self, bit: u32, b: &[u8]) -> Result<(), Short> {
        let mut c = Cursor::new(b);
        match bit {
            HEADER_HOSTNAME => self.hostname = Some(string(&mut c)?),
            HEADER_OSRELEASE => self.os_release = Some(string(&mut c)?),
            HEADER_VERSION => self.perf_version = Some(string(&mut c)?),
            HEADER_ARCH => self.arch = Some(string(&mut c)?),
            HEADER_CPUDESC => self.cpu_desc = Some(string(&mut c)?),
            HEADER_CPUID => self.cpuid = Some(string(&mut c)?),
            HEADER_NRCPUS => self.nr_cpus = Some((c.u32()?, c.u32()?)),
            HEADER_TOTAL_MEM => self.total_mem_kib = Some(c.u64()?),
            HEADER_CLOCKID => self.clockid_res_ns = Some(c.u64()?),
            HEADER_CMDLINE => {
                let n = c.u32()?;
                let mut v = Vec::new();
                for _ in 0..n {
                    v.push(string(&mut c)?);
                }
                self.cmdline = Some(v);
            }
            HEADER_EVENT_DESC => self.event_desc = event_desc(&mut c)?,
            HEADER_BUILD_ID => self.build_ids = build_ids(b),
            HEADER_NUMA_TOPOLOGY => {
                let n = c.u32()?;
                let mut nodes = Vec::new();
                for _ in 0..n {
                    nodes.push(NumaNode {
                        id: c.u32()?,
                        mem_total_kb: c.u64()?,
                        mem_free_kb: c.u64()?,
                        cpus: string(&mut c)?,
                    });
                }
                self.numa_nodes = nodes;
            }
            HEADER_MEM_TOPOLOGY => self.mem_topology = Some(mem_topology(&mut c)?),
            HEADER_PMU_MAPPINGS => {
                let n = c.u32()?;
                let mut v = Vec::new();
                for _ in 0..n {
                    v.push((c.u32()?, string(&mut c)?));
                }
                self.pmu_mappings = v;
            }
            HEADER_CPU_TOPOLOGY => {
                // Later perf versions append core and die ids; the sibling lists come first.
                let mut lists = || -> Result<Vec<String>, Short> {
                    (0..c.u32()?).map(|_| string(&mut c)).collect()
                };
                let cores = lists()?;
                self.thread_siblings = lists()?;
                self.core_siblings = cores;
            }
            _ => {}
        }
        Ok(())
    }
}

/// perf's header string: u32 length (with NUL padding), then the bytes.
fn string(c: &mut Cursor<'_>) -> Result<String, Short> {
    let len = c.u32()?;
    Ok(c_string(c.bytes(len as usize)?))
}

/// u64 version, block size, node count; per node its id, then a bitmap as perf writes
/// one: the bit count (twice: the node's size, then the bitmap's own) and the u64 words.
fn mem_topology(c: &mut Cursor<'_>) -> Result<MemTopology, Short> {
    let (_version, block_size, nr) = (c.u64()?, c.u64()?, c.u64()?);
    let mut nodes = Vec::new();
    for _ in 0..nr {
        let (id, _size, bits) = (c.u64()?, c.u64()?, c.u64()?);
        let blocks = c.u64s(bits.div_ceil(64))?;
        nodes.push(MemNode { id, bits, blocks });
    }
    Ok(MemTopology { block_size, nodes })
}

fn event_desc(c: &mut Cursor<'_>) -> Result<Vec<EventDesc>, Short> {
    let nr = c.u32()?;
    let attr_size = c.u32()? as usize;
    let mut out = Vec::new();
    for _ in 0..nr {
        let attr_bytes = c.bytes(attr_size)?;
        let (attr, _) = EventAttr::parse_sized(attr_bytes, attr_size);
        let nr_ids = c.u32()?;
        let name = string(c)?;
        let ids = c.u64s(u64::from(nr_ids))?;
        out.push(EventDesc { attr, name, ids });
    }
    Ok(out)
}

/// A sequence of `perf_record_header_build_id` records, each sized by its header.
fn build_ids(b: &[u8]) -> Vec<BuildIdEntry> {
    let mut out = Vec::new();
    let mut rest = b;
    while rest.len() >= 8 {
        let mut c = Cursor::new(rest);
        let (_type, misc, size) = match (c.u32(), c.u16(), c.u16()) {
            (Ok(t), Ok(m), Ok(s)) => (t, m, s as usize),
            _ => break,
        };
        let Some(rec) = rest.get(..size).filter(|_| size >= 8) else {
            break;
        };
        rest = rest.get(size..).unwrap_or(&[]);
        let mut c = Cursor::new(rec);
        let _ = c.bytes(8);
        let (Ok(pid), Ok(id)) = (c.i32(), c.bytes(24)) else {
            continue;
        };
        // With MISC_BUILD_ID_SIZE byte 20 holds the id length; otherwise 20 (SHA-1).
        let len = if misc & PERF_RECORD_MISC_BUILD_ID_SIZE != 0 {
            id.get(20).map_or(20, |&l| l as usize)
        } else {
            20
        };
        let build_id = id.get(..len.min(20)).unwrap_or(id).to_vec();
        out.push(BuildIdEntry {
            misc: misc & !PERF_RECORD_MISC_BUILD_ID_SIZE,
            pid,
            build_id,
            filename: c_string(c.rest()),
        });
    }
    out
}

#[cfg(test)]
mod mem_topology_tests {
    use super::*;

    fn words(v: &[u64]) -> Vec<u8> {
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// Two nodes of 128 MiB blocks as perf writes them: node 0 blocks 0-2, node 1 blocks 3-4
    /// and 70 (a second bitmap word); block 5 is a hole.
    #[test]
    fn physical_addresses_find_their_node_by_block() {
        let bs = 128 << 20;
        let body = words(&[1, bs, 2, 0, 3, 3, 0b111, 1, 71, 71, 0b11000, 1 << 6]);
        let mut f = Features::default();
        f.parse_one(HEADER_MEM_TOPOLOGY, &body).unwrap();
        let m = f.mem_topology.unwrap();
        assert_eq!((m.block_size, m.nodes.len()), (bs, 2));
        assert_eq!(m.node_of(0), Some(0));
        assert_eq!(m.node_of(3 * bs - 1), Some(0));
        assert_eq!(m.node_of(3 * bs), Some(1));
        assert_eq!(m.node_of(70 * bs + 5), Some(1));
        assert_eq!(m.node_of(5 * bs), None, "a hole");
        assert_eq!(m.node_of(71 * bs), None, "past the last block");
        assert_eq!(m.nodes[1].bytes(bs), 3 * bs);
        // Cut short: an error, not a panic or a huge allocation.
        let mut g = Features::default();
        assert!(g
            .parse_one(
                HEADER_MEM_TOPOLOGY,
                &words(&[1, bs, u64::MAX, 0, 9, u64::MAX])
            )
            .is_err());
        let zero = MemTopology {
            block_size: 0,
            nodes: m.nodes.clone(),
        };
        assert_eq!(zero.node_of(4096), None);
    }
}
