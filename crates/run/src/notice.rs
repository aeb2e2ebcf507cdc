//! What a run tells its caller while it goes on, in the order it happens: the caller
//! prints each notice (a run's own output must come before the program's, and the pool's
//! restoration when it happens), this crate never does.

use std::path::PathBuf;
use std::sync::Arc;

/// Where notices go. Shared, because the huge-page pool's guard tells its restoration
/// whenever it is dropped.
pub type Sink = Arc<dyn Fn(&Notice) + Send + Sync>;

/// One thing that happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// `--reserve N`: enough 2 MiB pages were free already; the pool is left as it is.
    PoolFreeAlready { free: u64, nr_hugepages: u64 },
    /// The pool was raised so that `reserved` pages are free for the program.
    PoolRaised { from: u64, to: u64, reserved: u64 },
    /// hugetlb without `--reserve`, and the pool has no free page: malloc will fall back.
    PoolEmpty,
    /// The GLIBC_TUNABLES the program gets.
    Tunables(String),
    /// The pool was put back to `pages` pages.
    PoolRestored { file: String, pages: u64 },
    /// The pool could not be put back: the user has to.
    PoolNotRestored {
        file: String,
        pages: u64,
        error: String,
    },
    /// Where the new cache group's ways are: one notice per distinct placement.
    Placement(Placement),
    /// The kernel refused its exclusive mode for the group (the reason).
    Shareable(String),
    /// These CPUs (a resctrl CPU list) joined the group.
    CpusJoined(String),
    /// The program started (in the cache group at `group`, when it runs in one).
    Started {
        program: String,
        pid: i32,
        group: Option<PathBuf>,
    },
}

/// The ways a new group holds in some of its domains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub group: String,
    /// Schemata resources written: `[L3]`, or `[L3CODE, L3DATA]` under CDP.
    pub resources: Vec<String>,
    /// The domains with this placement, as a resctrl list (`0-3`).
    pub domains: String,
    /// The ways, as a list (`0-3`).
    pub ways: String,
    /// The ways as a capacity bit mask, as schemata write it (`0000f`).
    pub mask: String,
    /// Default-group masks shrunk to make room.
    pub shrunk: Vec<Shrink>,
}

/// One default-group mask shrunk: resource, old mask, new mask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shrink {
    pub resource: String,
    pub from: String,
    pub to: String,
}
