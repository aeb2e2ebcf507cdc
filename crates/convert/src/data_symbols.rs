//! Symbols of mapped binaries at their run-time addresses: static variables (data symbols
//! of `.data`, `.bss`, `.rodata`), so that a sampled data address can be named
//! `counter (8 B)`, and function bounds, so that the instruction before a sampled IP can be
//! found by walking its function.

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
use rustc_hash::FxHashMap as HashMap;

use crate::code::CodeReader;
use crate::elf_cache::ElfCache;
use crate::processes::Mapping;

/// A static variable that holds an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticVar {
    pub name: String,
    /// Run-time start address.
    pub start: u64,
    pub size: u64,
    /// The binary.
    pub module: String,
}

/// Sorted symbols: (link-time address, size, name).
type Table = Vec<(u64, u64, String)>;

struct Tables {
    data: Table,
    functions: Table,
}

#[derive(Default)]
pub struct DataSymbols {
    files: HashMap<String, Option<Tables>>,
}

/// A function around an address: its run-time start and the file offset of that start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionBounds {
    pub start: u64,
    pub size: u64,
}

impl DataSymbols {
    /// The static variable of `m`'s binary containing `addr`, where `m` is the mapping of
    /// that binary at or below `addr` (`.bss` continues past the file into anonymous memory).
    pub fn find(
        &mut self,
        elves: &mut ElfCache,
        code: &mut CodeReader,
        m: &Mapping,
        addr: u64,
    ) -> Option<StaticVar> {
        let (bias, tables) = self.tables(elves, code, m)?;
        let (start, size, name) = lookup(&tables.data, addr.wrapping_sub(bias))?;
        Some(StaticVar {
            name: name.to_string(),
            start: start.wrapping_add(bias),
            size,
            module: m.path.clone(),
        })
    }

    /// The function of `m`'s binary containing the instruction at `ip`.
    pub fn function(
        &mut self,
        elves: &mut ElfCache,
        code: &mut CodeReader,
        m: &Mapping,
        ip: u64,
    ) -> Option<FunctionBounds> {
        let (bias, tables) = self.tables(elves, code, m)?;
        let (start, size, _) = lookup(&tables.functions, ip.wrapping_sub(bias))?;
        Some(FunctionBounds {
            start: start.wrapping_add(bias),
            size,
        })
    }

    /// The load bias of `m`'s binary and its symbol tables.
    fn tables(
        &mut self,
        elves: &mut ElfCache,
        code: &mut CodeReader,
        m: &Mapping,
    ) -> Option<(u64, &Tables)> {
        if m.path.is_empty() || m.path.starts_with('[') || m.path.starts_with("//") {
            return None;
        }
        // The load bias from a segment that this mapping maps: file offset f is at
        // start + (f - pgoff), and segment address v at file offset offset + (v - vaddr).
        let len = m.end - m.start;
        let seg = elves
            .get(&m.path)?
            .load_segments
            .iter()
            .copied()
            .find(|s| {
                s.offset < m.pgoff.saturating_add(len)
                    && m.pgoff < s.offset.saturating_add(s.filesz.max(1))
            })?;
        let bias = m
            .start
            .wrapping_add(seg.offset)
            .wrapping_sub(seg.vaddr)
            .wrapping_sub(m.pgoff);
        if !self.files.contains_key(&m.path) {
            let tables = code.file(elves, &m.path).and_then(read_tables);
            self.files.insert(m.path.clone(), tables);
        }
        Some((bias, self.files.get(&m.path)?.as_ref()?))
    }
}

fn lookup(table: &Table, v: u64) -> Option<(u64, u64, &str)> {
    let i = table.partition_point(|&(a, _, _)| a <= v);
    let (a, size, name) = table.get(i.checked_sub(1)?)?;
    (v - a < *size).then_some((*a, *size, name.as_str()))
}

fn read_tables(bytes: &[u8]) -> Option<Tables> {
    let file = object::File::parse(bytes).ok()?;
    let data_section = |i| {
        file.section_by_index(i).is_ok_and(|s| {
            matches!(
                s.kind(),
                SectionKind::Data
                    | SectionKind::UninitializedData
                    | SectionKind::ReadOnlyData
                    | SectionKind::ReadOnlyDataWithRel
            )
        })
    };
    let table = |kind: SymbolKind, in_data: bool| {
        let mut t: Table = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| {
                s.kind() == kind
                    && s.size() > 0
                    && (!in_data || s.section_index().is_some_and(data_section))
            })
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        t.sort_unstable();
        t.dedup_by_key(|e| e.0);
        t
    };
    Some(Tables {
        data: table(SymbolKind::Data, true),
        functions: table(SymbolKind::Text, false),
    })
}
