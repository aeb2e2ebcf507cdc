//! From decoded tracker files to rows and symbolised sites. Symbolisation happens here,
//! once, at collection time, so a result stays readable when the binaries are gone.

use std::collections::HashMap;

use kairos_symbolize::{
    file_offset_to_elf_vaddr, ElfInfo, ModuleKey, Symbolizer, SymbolizerOptions,
};

use crate::decode::{Mapping, Trace};
use crate::{MemoryData, Site};

/// One symbolised return address.
#[derive(Debug, Clone, Default)]
struct Frame {
    module: String,
    function: String,
    file: String,
    line: u32,
}

/// Flattens and symbolises a trace. Times become ns since the first process started.
pub fn build(trace: &Trace) -> MemoryData {
    let origin = trace.processes.iter().map(|p| p.inst).min().unwrap_or(0);
    let (sites, sym_notes) = sites(trace);
    let mut rows = Vec::new();
    let mut site0 = 0u32;
    for (pi, p) in trace.processes.iter().enumerate() {
        rows.reserve(p.events.len());
        for e in &p.events {
            rows.push(crate::stream::row_of(
                e, pi as u32, p.pid, e.tid, origin, site0,
            ));
        }
        site0 = site0.saturating_add(p.stacks.list.len() as u32);
    }
    rows.sort_by_key(|r| r.time_ns);
    let mut notes = trace.notes.clone();
    notes.extend(sym_notes);
    MemoryData { rows, sites, notes }
}

/// The trace's distinct stacks symbolised, process after process (site ids count on from
/// one process to the next), and the symboliser's notes.
pub fn sites(trace: &Trace) -> (Vec<Site>, Vec<String>) {
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    let mut elfs: HashMap<String, Option<ElfInfo>> = HashMap::new();
    let mut sites: Vec<Site> = Vec::new();
    for p in &trace.processes {
        let mut frame_cache: HashMap<u64, Frame> = HashMap::new();
        // Each distinct stack symbolised once, each address once per process.
        for stack in &p.stacks.list {
            let frames: Vec<Frame> = stack
                .iter()
                .map(|&a| {
                    frame_cache
                        .entry(a)
                        .or_insert_with(|| {
                            symbolize(a, &p.maps_exit, &p.maps_start, &mut sym, &mut elfs)
                        })
                        .clone()
                })
                .collect();
            let id = sites.len() as u32;
            sites.push(make_site(id, &frames));
        }
    }
    (sites, sym.notes())
}

fn find(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    maps.iter().find(|m| addr >= m.start && addr < m.end)
}

fn symbolize(
    addr: u64,
    exit: &[Mapping],
    start: &[Mapping],
    sym: &mut Symbolizer,
    elfs: &mut HashMap<String, Option<ElfInfo>>,
) -> Frame {
    let Some(m) = find(exit, addr).or_else(|| find(start, addr)) else {
        return Frame {
            function: format!("0x{addr:x}"),
            ..Default::default()
        };
    };
    let mut f = Frame {
        module: m.path.clone(),
        function: format!("0x{addr:x}"),
        ..Default::default()
    };
    if !m.path.starts_with('/') {
        return f;
    }
    let elf = elfs
        .entry(m.path.clone())
        .or_insert_with(|| ElfInfo::open(&m.path).ok());
    let Some(elf) = elf.as_ref() else { return f };
    // A return address points after the call; the call itself is one byte before.
    let off = addr
        .saturating_sub(1)
        .saturating_sub(m.start)
        .saturating_add(m.offset);
    let Some(vaddr) = file_offset_to_elf_vaddr(elf, off) else {
        return f;
    };
    let key = ModuleKey::Elf {
        path: m.path.clone(),
        build_id: elf.build_id.clone(),
    };
    if let Some(frames) = sym.symbolize(&key, &[vaddr]).into_iter().next() {
        // Innermost inlined function last: that is where the call is.
        if let Some(inner) = frames.last() {
            f.function = inner.function.clone();
            f.file = inner.file.clone().unwrap_or_default();
            f.line = inner.line.unwrap_or(0);
        }
    }
    f
}

/// Frames of allocator wrappers (operator new, libc helpers such as strdup): the site is
/// their caller, as a user thinks of it.
fn is_wrapper(f: &Frame) -> bool {
    let base = f.module.rsplit('/').next().unwrap_or("");
    base.starts_with("libstdc++")
        || base.starts_with("libc.so")
        || base.starts_with("libc++")
        || f.function.starts_with("operator new")
}

fn make_site(id: u32, frames: &[Frame]) -> Site {
    let pick = frames.iter().find(|f| !is_wrapper(f)).or(frames.first());
    let stack = frames
        .iter()
        .map(|f| {
            if f.file.is_empty() {
                f.function.clone()
            } else {
                let base = f.file.rsplit('/').next().unwrap_or(&f.file);
                format!("{} ({base}:{})", f.function, f.line)
            }
        })
        .collect::<Vec<_>>()
        .join(" <- ");
    match pick {
        Some(f) => Site {
            id,
            function: f.function.clone(),
            file: f.file.clone(),
            line: f.line,
            module: f.module.clone(),
            stack,
        },
        None => Site {
            id,
            stack,
            ..Default::default()
        },
    }
}
