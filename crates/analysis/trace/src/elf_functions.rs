//! What the tracer needs from the program's ELF file: its functions (to probe with
//! uprobes) and whether it was built with -finstrument-functions.

use std::path::Path;

use object::{Object, ObjectSymbol, SymbolKind};

use crate::TraceError;

/// A function symbol of an ELF file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfFunction {
    pub name: String,
    pub vaddr: u64,
    pub size: u64,
    /// Offset of the first instruction in the file (what a uprobe is placed at).
    pub file_offset: u64,
}

/// What the tracer learns from one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfTraceInfo {
    /// Defined functions (STT_FUNC, size > 0) by address; aliases at one address appear once.
    pub functions: Vec<ElfFunction>,
    /// Calls `__cyg_profile_func_enter`: compiled with -finstrument-functions.
    pub instrumented: bool,
    /// Contains the Kairos runtime itself (linked with libkairos_trace.a): no preload needed.
    pub has_runtime: bool,
    /// The function at the ELF entry point (`_start`), left out of `functions`: it is
    /// jumped to, not called, so the word a return probe would replace is argc, and
    /// probing its return corrupts the program's arguments.
    pub entry_function: Option<String>,
}

fn read(path: &Path) -> Result<memmap2::Mmap, TraceError> {
    let io = |source| TraceError::Io {
        path: path.display().to_string(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    // SAFETY: read-only map, dropped before returning to the caller's caller; binaries are
    // replaced, not rewritten in place, by linkers and package managers.
    unsafe { memmap2::Mmap::map(&f) }.map_err(io)
}

/// Reads the functions and instrumentation markers of the ELF file at `path`.
pub fn inspect(path: &Path) -> Result<ElfTraceInfo, TraceError> {
    let data = read(path)?;
    let bad = |reason: String| TraceError::BadFile {
        path: path.display().to_string(),
        reason,
    };
    let file = object::File::parse(&*data).map_err(|e| bad(format!("not an ELF file ({e})")))?;
    let info = kairos_symbolize::ElfInfo::parse(&data)
        .map_err(|e| bad(format!("not an ELF file ({e})")))?;
    let mut out = ElfTraceInfo::default();
    for s in file.symbols().chain(file.dynamic_symbols()) {
        let name = s.name().unwrap_or("");
        if name == "__cyg_profile_func_enter" {
            out.instrumented = true;
        }
        if name == "kairos_trace_runtime_version" && s.is_definition() {
            out.has_runtime = true;
        }
        if s.kind() != SymbolKind::Text || s.size() == 0 || !s.is_definition() || name.is_empty() {
            continue;
        }
        let vaddr = s.address();
        let Some(seg) = info
            .load_segments
            .iter()
            .find(|g| vaddr >= g.vaddr && vaddr - g.vaddr < g.filesz)
        else {
            continue;
        };
        out.functions.push(ElfFunction {
            name: name.to_string(),
            vaddr,
            size: s.size(),
            file_offset: vaddr - seg.vaddr + seg.offset,
        });
    }
    out.functions.sort_by_key(|f| f.vaddr);
    out.functions.dedup_by_key(|f| f.vaddr);
    let entry = file.entry();
    if let Some(pos) = out.functions.iter().position(|f| f.vaddr == entry) {
        out.entry_function = Some(out.functions.remove(pos).name);
    }
    Ok(out)
}
