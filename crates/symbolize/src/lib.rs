//! Address normalisation and symbolisation: ELF, DWARF lines and inlines, debug files,
//! perf maps, kallsyms.
//!
//! Two separate steps, as blazesym does it:
//! 1. *Normalisation* ([`file_offset_to_elf_vaddr`]): a sampled address is turned by the
//!    converter into a file offset (`addr - mapping.start + mapping.pgoff`), and here into
//!    the ELF virtual address that the symbol tables and DWARF speak.
//! 2. *Symbolisation* ([`Symbolizer::symbolize`]): ELF virtual addresses (or absolute
//!    addresses for the kernel and perf maps) become frames, outermost function first and
//!    inlined callees after it.
//!
//! Which file is read for a recorded binary (symfs, a running process's own root, the
//! path, perf's build-id caches, debuginfod) is decided by the [`Locator`] (`locate.rs`),
//! which the converter uses as well.
//!
//! Nothing here panics or fails on missing or corrupt files: the result is empty and
//! [`Symbolizer::notes`] says why, once per module.

mod addr_table;
mod blaze_frames;
pub mod buildid_cache;
mod debug_file;
mod debuginfod;
mod demangle;
mod elf_info;
pub mod kallsyms;
mod locate;
pub mod perf_map;
mod process_view;
mod symbolizer;
mod symtab_names;

pub use debuginfod::DebuginfodOptions;
pub use elf_info::{file_offset_to_elf_vaddr, ElfInfo, LoadSegment};
pub use locate::{Located, Locator, Origin, ProcessMapping};
pub use process_view::View;
pub use symbolizer::{Symbolizer, SymbolizerOptions};

/// Which object an address belongs to; decides how its addresses are read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModuleKey {
    /// An ELF file; addresses are ELF virtual addresses (see [`file_offset_to_elf_vaddr`]).
    /// `build_id` (hex), when known from the recording, is checked against the file.
    Elf {
        path: String,
        build_id: Option<String>,
    },
    /// An ELF file recorded as `path` that the converter already found elsewhere
    /// ([`Locator::binary`]: in a process's root, a build-id cache, debuginfod): `file` is
    /// read instead of searching again, checked against `build_id`; `root` is where the
    /// recorded path lives (for `.gnu_debuglink` targets beside it).
    ElfAt {
        path: String,
        build_id: Option<String>,
        file: std::path::PathBuf,
        root: Option<std::path::PathBuf>,
    },
    /// The kernel; absolute addresses, resolved through kallsyms.
    Kernel,
    /// JIT code of a process; absolute addresses, resolved through `perf-PID.map`.
    PerfMap { pid: i32 },
    /// Anonymous memory without a map file: never symbolised.
    Anonymous,
}

/// One function frame at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymFrame {
    /// Demangled function name.
    pub function: String,
    /// Source file (as recorded in DWARF, directory joined) when known.
    pub file: Option<String>,
    /// Source line when known.
    pub line: Option<u32>,
}

/// Errors of the few fallible public calls (opening an ELF file).
#[derive(Debug, thiserror::Error)]
pub enum SymbolizeError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid ELF file: {reason}")]
    BadElf { path: String, reason: String },
    #[error("cannot unpack {path}: {reason}")]
    Archive { path: String, reason: String },
}
