//! The set-up `kairos run --hugepages` and `kairos collect --hugepages` share: the pool
//! raised for the program (restored when the set-up is dropped or [`Setup::restore`]d),
//! the warning when malloc will find no pool page, and the tunables the program gets.

use kairos_analysis_hugepages::pool::PoolCounts;

use super::pool::{self, meminfo, pool_now, PoolGuard};
use super::{tunables_for_target, Mode};
use crate::{Error, Notice, Sink};

/// Huge pages set up for one program.
pub(crate) struct Setup {
    pub(crate) mode: Mode,
    /// `--reserve N`.
    pub(crate) reserved: Option<u64>,
    /// GLIBC_TUNABLES for the program (None: malloc left as it is).
    pub(crate) tunables: Option<String>,
    guard: Option<PoolGuard>,
    /// The pool just before the program starts.
    pub(crate) pool_before: PoolCounts,
}

impl Setup {
    /// Reserves the pool (when asked) and works out the program's tunables.
    pub(crate) fn start(mode: Mode, reserved: Option<u64>, sink: &Sink) -> Result<Setup, Error> {
        let guard = match reserved {
            Some(n) => pool::reserve(n, sink)?,
            None => None,
        };
        if mode == Mode::Hugetlb
            && reserved.is_none()
            && meminfo("HugePages_Free").unwrap_or(0) == 0
        {
            sink(&Notice::PoolEmpty);
        }
        let tunables = tunables_for_target(mode);
        if let Some(v) = &tunables {
            sink(&Notice::Tunables(v.clone()));
        }
        Ok(Setup {
            mode,
            reserved,
            tunables,
            guard,
            pool_before: pool_now().unwrap_or_default(),
        })
    }

    /// Nothing to set up: huge pages asked for by the user's own GLIBC_TUNABLES, which the
    /// program inherits. They are watched all the same.
    pub(crate) fn inherited(mode: Mode, tunables: String) -> Setup {
        Setup {
            mode,
            reserved: None,
            tunables: Some(tunables),
            guard: None,
            pool_before: pool_now().unwrap_or_default(),
        }
    }

    /// Puts the pool back (told to the sink); nothing when it was not changed.
    pub(crate) fn restore(&mut self) {
        self.guard.take();
    }
}
