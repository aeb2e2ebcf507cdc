//! Why a run was refused or failed. Each error's text is one sentence that says what to do
//! and what was changed (nothing, or everything restored, or what was not); the CLI adds
//! only its exit status, from [`Error::is_usage`].

use std::fmt;
use std::path::PathBuf;

use kairos_analysis_api::Failure;
use kairos_resctrl::why::STILL_WORKS;

/// The command a cache group is made for: the sentences name what runs in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// `kairos run --cache-ways`: "the program".
    Run,
    /// `kairos collect -k cache-group=...`: "the target".
    Collect,
}

impl Caller {
    fn who(self) -> &'static str {
        match self {
            Caller::Run => "program",
            Caller::Collect => "target",
        }
    }

    fn without_resctrl(self) -> &'static str {
        match self {
            Caller::Run => "cannot give the program cache ways",
            Caller::Collect => "cannot run the target in a cache group",
        }
    }

    fn what_ran(self) -> &'static str {
        match self {
            Caller::Run => "the program ran",
            Caller::Collect => "the collection ran",
        }
    }
}

/// What undoing a cache group's changes after a failure left behind (empty: nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    pub left: Vec<String>,
    pub caller: Caller,
}

impl fmt::Display for Undone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.left.is_empty(), self.caller) {
            (true, Caller::Run) => f.write_str("everything Kairos changed was restored"),
            (true, Caller::Collect) => f.write_str("everything was restored"),
            (false, _) => write!(f, "NOT restored: {}", self.left.join("; ")),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("--hugepages '{0}' is not a mode; give hugetlb (the 2 MiB pool), thp (transparent huge pages) or none")]
    UnknownMode(String),
    #[error("--reserve '{0}' must be a number of 2 MiB pages from 1 to 16777216, e.g. --reserve 52 (see `kairos report hugepages`)")]
    BadReserve(String),
    #[error("--reserve applies to --hugepages=hugetlb only: transparent huge pages need no pool")]
    ReserveNeedsHugetlb,
    #[error("--hugepages applies to a program Kairos launches (after `--`): malloc reads its tunable when a process starts, so a running process (-p) or the whole system (-a) cannot be switched")]
    HugepagesNeedLaunch,
    #[error(
        "glibc {0} has no glibc.malloc.hugetlb tunable (it needs 2.35 or newer; libhugetlbfs's HUGETLB_MORECORE does nothing \
         since 2.34), so Kairos cannot switch malloc to huge pages here; see `kairos report hugepages` for what works"
    )]
    OldGlibc(String),
    #[error("cannot read {0}: this kernel has no hugetlbfs pool; nothing was changed")]
    NoPool(String),
    #[error("cannot reserve {pages} huge pages: writing {want} to {file} failed ({why}); nothing was changed")]
    CannotReserve {
        pages: u64,
        want: u64,
        file: String,
        why: String,
    },
    #[error(
        "cannot reserve {pages} huge pages: the kernel gave {got} of the {asked} pages asked for (free memory {free_memory}, too little \
         or too fragmented for 2 MiB pages; try `echo 3 > /proc/sys/vm/drop_caches` or a smaller N); the pool was put back to {old}"
    )]
    PoolShort {
        pages: u64,
        got: u64,
        asked: u64,
        free_memory: String,
        old: u64,
    },
    #[error("nothing to run: give a program after `--`, e.g. `{example}`")]
    NothingToRun { example: &'static str },
    #[error("program '{0}' was not found; give a path to an executable or a command on PATH; nothing was changed")]
    ProgramNotFound(String),
    #[error("'{program}' cannot be started ({source}); check the path and its execute bit; nothing else was changed")]
    CannotStart {
        program: String,
        source: std::io::Error,
    },
    #[error("--cache-ways '{0}' must be a number of cache ways from 1 to 64, e.g. --cache-ways 4 (see `kairos cache`)")]
    BadWays(String),
    #[error("--cpus '{0}' is not a CPU list like 2 or 0-3,8")]
    BadCpus(String),
    #[error("--lock needs --cpus LIST: a region is locked in one cache instance, the one the first of those CPUs uses")]
    LockNeedsCpus,
    #[error("{}: resctrl is not available here: {causes}; nothing was changed ({STILL_WORKS})", .caller.without_resctrl())]
    NoResctrl { caller: Caller, causes: String },
    #[error("{} is not a resctrl tree (it has no info/ directory); give the mount point, normally {}", .0.display(), kairos_resctrl::DEFAULT_ROOT)]
    NotResctrl(PathBuf),
    #[error("cannot read the resctrl tree at {}: {source}", .root.display())]
    CannotRead {
        root: PathBuf,
        source: kairos_resctrl::Error,
    },
    #[error("--cpus: CPU {cpu} is not one of this machine's CPUs ({known}); nothing was changed")]
    UnknownCpu { cpu: u32, known: String },
    #[error("--cpus {cpus}: CPUs {group_cpus} belong to group {group}, and Kairos takes CPUs only from the default group; pick others; nothing was changed")]
    CpusInGroup {
        cpus: String,
        group_cpus: String,
        group: String,
    },
    #[error("which L{level} cache CPU {cpu} uses is unknown (no cpu{cpu}/cache/indexK/id of level {level}); nothing was changed")]
    UnknownDomain { level: u8, cpu: u32 },
    #[error("cannot give the {} {ways} exclusive {level} ways: {source}; nothing was changed", .caller.who())]
    Refused {
        caller: Caller,
        ways: u32,
        level: String,
        source: kairos_resctrl::Error,
    },
    #[error("cannot set up the cache group: {source}; {undone}")]
    SetUp {
        source: kairos_resctrl::Error,
        undone: Undone,
    },
    #[error("cannot assign CPUs {cpus} to the group: {source}; {undone}")]
    AssignCpus {
        cpus: String,
        source: kairos_resctrl::Error,
        undone: Undone,
    },
    #[error("'{program}' cannot be started in the cache group ({source}); {undone}")]
    StartInGroup {
        program: String,
        source: std::io::Error,
        undone: Undone,
    },
    #[error("the resctrl root path holds a NUL byte")]
    NulInPath,
    #[error("-k cache-group cannot be used with -a: a group holds tasks, not the whole machine; give a program or -p PID")]
    SystemWideGroup,
    #[error("there is no resctrl group '{name}' (groups: {groups}); give one of them, or -k cache-group=new -k cache-ways=N")]
    NoSuchGroup { name: String, groups: String },
    #[error("{}, but Kairos could not restore everything: {}", .caller.what_ran(), .left.join("; "))]
    NotRestored { caller: Caller, left: Vec<String> },
    #[error("cannot add the {what} to {}: {source}", .dir.display())]
    CannotRecord {
        what: &'static str,
        dir: PathBuf,
        source: kairos_result::Error,
    },
    /// The result directory could not be made or written (the sentence is the session's).
    #[error(transparent)]
    Session(#[from] Failure),
}

impl Error {
    /// The request itself is wrong (exit status 2), not the machine or the program.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::UnknownMode(_)
                | Error::BadReserve(_)
                | Error::ReserveNeedsHugetlb
                | Error::HugepagesNeedLaunch
                | Error::NothingToRun { .. }
                | Error::BadWays(_)
                | Error::BadCpus(_)
                | Error::LockNeedsCpus
                | Error::UnknownCpu { .. }
                | Error::SystemWideGroup
        ) || matches!(self, Error::Session(f) if f.is_usage())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undone_says_what_was_restored_in_the_callers_words() {
        let all = |caller| Undone {
            left: Vec::new(),
            caller,
        };
        assert_eq!(
            all(Caller::Run).to_string(),
            "everything Kairos changed was restored"
        );
        assert_eq!(all(Caller::Collect).to_string(), "everything was restored");
        let some = Undone {
            left: vec!["a".into(), "b".into()],
            caller: Caller::Run,
        };
        assert_eq!(some.to_string(), "NOT restored: a; b");
    }

    #[test]
    fn usage_errors_are_told_apart_from_failures() {
        assert!(Error::NothingToRun { example: "x" }.is_usage());
        assert!(Error::Session(Failure::usage("u")).is_usage());
        assert!(!Error::Session(Failure::failed("f")).is_usage());
        assert!(!Error::NoPool("f".into()).is_usage());
        assert_eq!(
            Error::Session(Failure::failed("as is")).to_string(),
            "as is"
        );
        let e = Error::NotRestored {
            caller: Caller::Collect,
            left: vec!["x".into()],
        };
        assert_eq!(
            e.to_string(),
            "the collection ran, but Kairos could not restore everything: x"
        );
    }
}
