//! The platform of a perf.data file's header: its NUMA_TOPOLOGY feature (nodes with CPUs and
//! memory) and CPU_TOPOLOGY feature (sockets from the core-sibling lists, cores from the
//! thread-sibling lists). A header holds no devices, so `devices` is None.

use std::path::Path;

use crate::numa::{parse_cpulist, Node};
use crate::sockets::{Platform, PlatformError, Socket};

const MAGIC: &[u8; 8] = b"PERFILE2";
const HEADER_CPU_TOPOLOGY: u32 = 13;
const HEADER_NUMA_TOPOLOGY: u32 = 14;

struct Cur<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cur<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// perf's header string: a u32 length, then that many bytes, NUL padded.
    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        let raw = self.take(n)?;
        let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
        Some(String::from_utf8_lossy(&raw[..end]).into_owned())
    }
}

/// The bodies of features `bits` (Some per bit present) of a little-endian file-mode
/// perf.data, read through `at(offset, len)`; None for pipe mode, another format or a
/// truncated header. Only the header, the feature index and those sections are read: a
/// recording may be gigabytes.
fn sections(at: &dyn Fn(u64, usize) -> Option<Vec<u8>>, bits: &[u32]) -> Option<Vec<Option<Vec<u8>>>> {
    let head = at(0, 104)?;
    if head.get(..8)? != MAGIC {
        return None;
    }
    let mut c = Cur { b: &head, at: 40 };
    let (data_off, data_size) = (c.u64()?, c.u64()?);
    c.at = 72;
    let mut feats = [0u64; 4];
    for f in &mut feats {
        *f = c.u64()?;
    }
    let set = |bit: u32| feats[(bit / 64) as usize] >> (bit % 64) & 1 == 1;
    let index_base = data_off.checked_add(data_size)?;
    Some(
        bits.iter()
            .map(|&bit| {
                if !set(bit) {
                    return None;
                }
                let index = (0..bit).filter(|&b| set(b)).count() as u64;
                let entry = at(index_base.checked_add(index * 16)?, 16)?;
                let mut c = Cur { b: &entry, at: 0 };
                let (off, size) = (c.u64()?, usize::try_from(c.u64()?).ok()?);
                // A topology section is a few KiB; anything larger is damage.
                (size <= 1 << 24).then_some(())?;
                at(off, size)
            })
            .collect(),
    )
}

fn numa_nodes(b: &[u8]) -> Option<Vec<Node>> {
    let mut c = Cur { b, at: 0 };
    let n = c.u32()?;
    let mut out = Vec::new();
    for _ in 0..n.min(4096) {
        let id = c.u32()?;
        let mem_total_kb = c.u64()?;
        let _free = c.u64()?;
        let cpus = parse_cpulist(&c.string()?)?;
        out.push(Node { id, cpus, mem_total_kb: Some(mem_total_kb), distances: Vec::new() });
    }
    out.sort_by_key(|n| n.id);
    Some(out)
}

fn sockets(b: &[u8]) -> Option<Vec<Socket>> {
    let mut c = Cur { b, at: 0 };
    let lists = |c: &mut Cur<'_>| -> Option<Vec<Vec<u32>>> { (0..c.u32()?.min(1 << 16)).map(|_| parse_cpulist(&c.string()?)).collect() };
    let packages = lists(&mut c)?;
    let threads = lists(&mut c)?;
    Some(
        packages
            .into_iter()
            .enumerate()
            .map(|(i, cpus)| {
                let cores = threads.iter().filter(|t| t.first().is_some_and(|f| cpus.contains(f))).count() as u32;
                Socket { id: i as u32, cpus, cores }
            })
            .collect(),
    )
}

impl Platform {
    /// The platform the header of the perf.data file at `path` describes; Ok(None) when it
    /// has neither topology feature (or is not a file-mode perf.data).
    pub fn from_perf_data(path: &Path) -> Result<Option<Platform>, PlatformError> {
        use std::io::{Read, Seek, SeekFrom};
        let file = std::fs::File::open(path).map_err(|e| PlatformError::Read { path: path.display().to_string(), source: e })?;
        let at = |off: u64, len: usize| -> Option<Vec<u8>> {
            let mut f = &file;
            f.seek(SeekFrom::Start(off)).ok()?;
            let mut buf = vec![0u8; len];
            f.read_exact(&mut buf).ok()?;
            Some(buf)
        };
        Ok(Self::from_sections(sections(&at, &[HEADER_NUMA_TOPOLOGY, HEADER_CPU_TOPOLOGY])))
    }

    /// The same from the file's bytes in memory.
    pub fn from_perf_header(file: &[u8]) -> Option<Platform> {
        let at = |off: u64, len: usize| -> Option<Vec<u8>> {
            let off = usize::try_from(off).ok()?;
            file.get(off..off.checked_add(len)?).map(<[u8]>::to_vec)
        };
        Self::from_sections(sections(&at, &[HEADER_NUMA_TOPOLOGY, HEADER_CPU_TOPOLOGY]))
    }

    fn from_sections(secs: Option<Vec<Option<Vec<u8>>>>) -> Option<Platform> {
        let secs = secs?;
        let body = |i: usize| secs.get(i).and_then(|b| b.as_deref());
        let mut notes = vec!["a perf.data header lists no devices: devices unknown".to_string()];
        let nodes = body(0).and_then(numa_nodes);
        let sockets = body(1).and_then(sockets);
        if nodes.is_none() && sockets.is_none() {
            return None;
        }
        if nodes.is_none() {
            notes.push("the header has no NUMA_TOPOLOGY: nodes unknown".into());
        }
        notes.push("node distances are not in a perf.data header".into());
        Some(Platform { source: "perf.data header (NUMA_TOPOLOGY, CPU_TOPOLOGY)".into(), sockets: sockets.unwrap_or_default(), nodes: nodes.unwrap_or_default(), devices: None, notes })
    }
}
