//! The instruction of a live sample, for [`crate::live`]: its function's bytes read from
//! the running process, so that `Site::decode` can take the access from the instruction
//! that just ran (a timer sample lands after the load it waited on), and follow the whole
//! function where that instruction overwrote its address register, as the converter
//! does. The function comes from the ELF symbols of the file mapped at the IP; without
//! one, the instruction at the IP alone is decoded.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use kairos_procfs::maps::Mapping;
use kairos_x86_access::{Bitness, Site, MAX_INSTRUCTION_BYTES};
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

/// Functions longer than this are not walked (as in the converter).
const LONGEST_WALK: u64 = 1 << 16;
const REREAD: Duration = Duration::from_millis(100);

/// One file's functions and load segments, in ELF addresses.
#[derive(Default)]
struct Elf {
    /// (start, size), sorted by start.
    functions: Vec<(u64, u64)>,
    /// (file offset, file size, vaddr).
    segments: Vec<(u64, u64, u64)>,
}

impl Elf {
    fn read(path: &str) -> Elf {
        let Ok(data) = std::fs::read(path) else {
            return Elf::default();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return Elf::default();
        };
        let mut functions: Vec<(u64, u64)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && !s.is_undefined())
            .map(|s| (s.address(), s.size()))
            .collect();
        functions.sort_unstable();
        functions.dedup();
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        Elf {
            functions,
            segments,
        }
    }

    /// The ELF address of a file offset, through the segment holding it.
    fn vaddr(&self, offset: u64) -> Option<u64> {
        let &(off, _, vaddr) = self
            .segments
            .iter()
            .find(|&&(off, size, _)| offset >= off && offset - off < size)?;
        Some(vaddr + (offset - off))
    }

    /// The (start, size) of the function holding ELF address `a`.
    fn function(&self, a: u64) -> Option<(u64, u64)> {
        let i = self.functions.partition_point(|&(start, _)| start <= a);
        self.functions[..i]
            .iter()
            .rev()
            .take(8)
            .find(|&&(start, size)| a - start < size)
            .copied()
    }
}

/// Code of the live processes, cached per file.
#[derive(Default)]
pub(crate) struct LiveCode {
    elves: HashMap<String, Elf>,
    mem: HashMap<i32, Option<File>>,
    /// Per process: its executable mappings and when they were read.
    maps: HashMap<i32, (Vec<Mapping>, Instant)>,
}

impl LiveCode {
    /// The decoded site at `ip` of `pid`, or None when its code cannot be read or decoded.
    pub(crate) fn site(&mut self, pid: i32, ip: u64, bitness: Bitness) -> Option<Site> {
        // Runtime start and size of the function around ip, when a symbol says.
        let function = self
            .function(pid, ip)
            .filter(|&(s, _)| ip - s < LONGEST_WALK);
        let file = self
            .mem
            .entry(pid)
            .or_insert_with(|| File::open(format!("/proc/{pid}/mem")).ok())
            .as_ref()?;
        let (from, size) = function.unwrap_or((ip, 0));
        let len =
            ((ip - from) as usize + MAX_INSTRUCTION_BYTES).max(size.min(LONGEST_WALK) as usize);
        let mut bytes = vec![0u8; len];
        let n = file
            .read_at(&mut bytes, from)
            .ok()
            .filter(|&n| n as u64 > ip - from)?;
        match function {
            Some((s, size)) => Site::decode(&bytes[..n], s, size, ip, bitness).ok(),
            None => Site::lone(&bytes[..n], ip, bitness).ok(),
        }
    }

    /// The runtime (start, size) of the function holding `ip`.
    fn function(&mut self, pid: i32, ip: u64) -> Option<(u64, u64)> {
        let find = |m: &[Mapping]| kairos_procfs::maps::find(m, ip).cloned();
        let (maps, read_at) = self
            .maps
            .entry(pid)
            .or_insert_with(|| (read_maps(pid), Instant::now()));
        // A library loaded since the last reading (the first samples may come before the
        // dynamic loader is done): read again, at most every REREAD.
        if find(maps).is_none() && read_at.elapsed() >= REREAD {
            (*maps, *read_at) = (read_maps(pid), Instant::now());
        }
        let m = find(maps)?;
        let elf = self
            .elves
            .entry(m.path.clone())
            .or_insert_with(|| Elf::read(&m.path));
        let a = elf.vaddr(ip - m.start + m.offset)?;
        let (f, size) = elf.function(a)?;
        Some((ip - (a - f), size))
    }
}

/// The file-backed executable mappings of a process (through the one maps parser, which
/// keeps paths with spaces whole).
fn read_maps(pid: i32) -> Vec<Mapping> {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    kairos_procfs::maps::parse(&text)
        .into_iter()
        .filter(|m| m.executable && m.path.starts_with('/'))
        .collect()
}
