//! Memory consumption analysis: what `kairos collect memory-consumption` records with its
//! allocation tracker (runtime/memtrack), turned into tables and reports.
//!
//! Stages: `collect` runs the program with the tracker preloaded, `finish` turns its files
//! into the result, `run_report` (and `hugepages_report`) print the reports of a result;
//! [`SPEC`] ties them to the registry.
//!
//! Pipeline: [`decode::read_dir`] reads the tracker's files, [`build::build`] symbolises
//! the allocation stacks into [`Site`]s and flattens the events into [`AllocRow`]s,
//! [`tables`] stores both as Parquet (schema in docs/SCHEMA.md), [`replay::replay`]
//! walks the events in time order (live blocks, peak, leaks, histogram, timeline) and
//! [`reports`] renders what it found. A collection does not hold the events: [`stream`]
//! reads them twice through small windows and hands them over in time order, to the
//! replay ([`replay::Replayer`]) and to the table writer on a thread of its own.
//!
//! Nothing here panics on any input: damaged files give notes or typed [`Error`]s.

pub mod build;
mod collect;
mod compare;
pub mod decode;
mod finish;
mod hugepages_report;
mod loadable;
pub mod replay;
pub mod reports;
mod run_report;
mod spec;
pub mod stream;
/// For analyses that run the tracker in their own collection (memory-access).
pub use collect::tracker_lib;
pub use decode::RAW_DIR;
pub use loadable::check_loadable;
pub use spec::SPEC;
pub mod tables;

/// One call the tracker intercepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Malloc,
    Calloc,
    Realloc,
    Free,
    PosixMemalign,
    AlignedAlloc,
    Memalign,
    Valloc,
    Pvalloc,
    Mmap,
    Munmap,
    Mremap,
}

impl Kind {
    /// The tracker's numeric code (runtime/memtrack/memtrack.c `enum kind`).
    pub fn from_code(c: u8) -> Option<Kind> {
        use Kind::*;
        Some(match c {
            1 => Malloc,
            2 => Calloc,
            3 => Realloc,
            4 => Free,
            5 => PosixMemalign,
            6 => AlignedAlloc,
            7 => Memalign,
            8 => Valloc,
            9 => Pvalloc,
            10 => Mmap,
            11 => Munmap,
            12 => Mremap,
            _ => return None,
        })
    }

    /// The C function name, as stored in the `kind` column.
    pub fn as_str(self) -> &'static str {
        use Kind::*;
        match self {
            Malloc => "malloc",
            Calloc => "calloc",
            Realloc => "realloc",
            Free => "free",
            PosixMemalign => "posix_memalign",
            AlignedAlloc => "aligned_alloc",
            Memalign => "memalign",
            Valloc => "valloc",
            Pvalloc => "pvalloc",
            Mmap => "mmap",
            Munmap => "munmap",
            Mremap => "mremap",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        (1..=12)
            .filter_map(Kind::from_code)
            .find(|k| k.as_str() == s)
    }

    /// Calls that hand out a new heap block (realloc is handled apart).
    pub fn is_heap_alloc(self) -> bool {
        use Kind::*;
        matches!(
            self,
            Malloc | Calloc | PosixMemalign | AlignedAlloc | Memalign | Valloc | Pvalloc
        )
    }
}

/// One row of the `allocations` table: one intercepted call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocRow {
    /// ns since the start of the collection (the first tracked process's start).
    pub time_ns: u64,
    /// realloc, munmap, mremap: ns (same origin) just before the call, when the old block
    /// was released.
    pub release_time_ns: Option<u64>,
    /// Index of the process image (a PID, or the same PID after exec or fork).
    pub process: u32,
    pub pid: u32,
    pub tid: u32,
    pub kind: Kind,
    /// Block returned; the block freed for free and munmap. 0 for realloc(p, 0).
    pub address: u64,
    /// Requested bytes (new size for realloc and mremap); unmapped length for munmap.
    pub size: u64,
    /// realloc and mremap: the old block.
    pub old_address: Option<u64>,
    /// mremap: the old length.
    pub old_size: Option<u64>,
    /// mmap: anonymous memory (not a file mapping).
    pub anonymous: Option<bool>,
    /// Allocation site (row of `sites`); none for free and for blocks below min-object-size.
    pub site: Option<u32>,
}

/// One row of the `sites` table: a distinct allocation call stack.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Site {
    pub id: u32,
    /// Function of the allocation site: the first caller outside the allocator
    /// (operator new, libc wrappers are skipped).
    pub function: String,
    /// Source file (base name as in DWARF) and line; empty and 0 when unknown.
    pub file: String,
    pub line: u32,
    /// Binary holding the site.
    pub module: String,
    /// The whole stack, innermost first: `function (file:line)` per frame, joined by " <- ".
    pub stack: String,
}

impl Site {
    /// `file:line` as VTune names memory objects, or the function (or module) when the
    /// line is unknown.
    pub fn location(&self) -> String {
        if !self.file.is_empty() && self.line > 0 {
            let base = self.file.rsplit('/').next().unwrap_or(&self.file);
            format!("{base}:{}", self.line)
        } else if !self.function.is_empty() {
            self.function.clone()
        } else if !self.module.is_empty() {
            self.module
                .rsplit('/')
                .next()
                .unwrap_or(&self.module)
                .to_string()
        } else {
            "[unknown]".into()
        }
    }
}

/// A memory-consumption result: the two tables and what was noticed on the way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryData {
    pub rows: Vec<AllocRow>,
    pub sites: Vec<Site>,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The tables read back but do not fit together.
    #[error("table {path} is damaged: {detail}")]
    Damaged { path: String, detail: String },
    /// Writing or reading a Parquet table (kairos-table's own sentence).
    #[error(transparent)]
    Table(#[from] kairos_table::TableError),
}
