//! Cache allocation and monitoring through the kernel's resctrl file system
//! (Documentation/arch/x86/resctrl.rst): read what the machine offers ([`Tree`]), show
//! which cache ways each CPU may fill ([`avail`]), plan N exclusive ways for a program
//! ([`plan`]), apply the plan with a journal that undoes every change ([`write`]), and
//! read the occupancy and bandwidth counters ([`monitor`]).
//!
//! Everything takes the resctrl root as a path, so tests point it at copies of recorded
//! trees. Nothing here panics on bad input: malformed files are [`Error::Parse`].

pub mod avail;
pub mod info;
pub mod mask;
pub mod monitor;
pub mod plan;
pub mod report;
pub mod schemata;
pub mod topology;
pub mod tree;
pub mod why;
pub mod write;

#[cfg(any(test, feature = "fake-kernel"))]
pub mod fake;
#[cfg(any(test, feature = "fake-kernel"))]
pub mod fixtures;

pub use info::{CacheResource, Caps, MbResource, MonInfo};
pub use tree::{Group, RootKind, Tree};

use std::path::PathBuf;

/// The default mount point.
pub const DEFAULT_ROOT: &str = "/sys/fs/resctrl";
/// `statfs().f_type` of a resctrl mount (RDTGROUP_SUPER_MAGIC in the kernel's magic.h).
pub const RESCTRL_MAGIC: i64 = 0x7655821;

/// What went wrong, as a sentence a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The root has no `info` directory: not a resctrl mount (or not mounted).
    #[error("{} is not a resctrl file system (no info/ directory there)", .0.display())]
    NotResctrl(PathBuf),
    /// A file's content is not what the kernel writes.
    #[error("resctrl: {0}")]
    Parse(String),
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The request cannot be met on this machine; the sentence says why.
    #[error("{0}")]
    Refused(String),
    /// The kernel rejected a write; `status` is info/last_cmd_status.
    #[error("the kernel refused to {what}: {status}")]
    Kernel { what: String, status: String },
}

impl Error {
    pub(crate) fn io(
        what: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Error {
        Error::Io {
            what,
            path: path.into(),
            source,
        }
    }
}
