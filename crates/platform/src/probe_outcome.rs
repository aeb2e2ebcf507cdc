//! What a probe answered and what that means in words: the perf_event_open experiments
//! (`probe`) and the move_pages(2) placement query (`numa`) both answer with a
//! [`ProbeOutcome`], and the capabilities built from either say why with the same errno
//! words. The prober calls the placement query, so the answer lives here, one layer below
//! both.

use serde::{Deserialize, Serialize};

/// What the kernel answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProbeOutcome {
    /// The event was created (and closed again).
    Opened,
    /// perf_event_open failed with this errno.
    Failed { errno: i32 },
    /// Not tried, for the reason given.
    NotTried(String),
}

impl ProbeOutcome {
    pub fn is_opened(&self) -> bool {
        matches!(self, ProbeOutcome::Opened)
    }
}

/// Symbolic name of an errno value.
pub fn errno_name(errno: i32) -> String {
    let n = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::E2BIG => "E2BIG",
        libc::EFAULT => "EFAULT",
        libc::ENOSPC => "ENOSPC",
        _ => return format!("errno {errno}"),
    };
    n.to_string()
}

/// What a perf_event_open errno means, in plain words.
pub fn errno_meaning(errno: i32) -> &'static str {
    match errno {
        libc::ENOENT => "the kernel has no such event here: no hardware PMU driver for this CPU (typical in a VM without a virtual PMU) or the event is unknown",
        libc::ENODEV => "no such PMU device on this machine",
        libc::EOPNOTSUPP => "the PMU exists but does not support this kind of event (for example sampling, branch stacks or precise sampling)",
        libc::EACCES | libc::EPERM => "not permitted: kernel.perf_event_paranoid forbids it for this user; run as root, grant CAP_PERFMON, or lower the setting",
        libc::EINVAL => "the kernel rejected the event's attributes (feature not supported by this kernel or CPU)",
        libc::EBUSY => "the counters are taken by someone else (another profiler, the NMI watchdog)",
        libc::EMFILE => "too many open files",
        libc::ENOSYS => "the kernel was built without perf events",
        libc::E2BIG => "the kernel does not understand this perf_event_attr size",
        libc::ENOSPC => "no free counter or breakpoint slot",
        _ => "perf_event_open failed",
    }
}

/// `EOPNOTSUPP (meaning)` or `not tried: why`.
pub fn describe_outcome(o: &ProbeOutcome) -> String {
    match o {
        ProbeOutcome::Opened => "perf_event_open succeeded".to_string(),
        ProbeOutcome::Failed { errno } => {
            format!(
                "perf_event_open: {} ({})",
                errno_name(*errno),
                errno_meaning(*errno)
            )
        }
        ProbeOutcome::NotTried(why) => format!("not tried: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_text() {
        assert_eq!(errno_name(libc::ENOENT), "ENOENT");
        assert_eq!(errno_name(9999), "errno 9999");
        assert!(errno_meaning(libc::ENOENT).contains("PMU"));
    }
}
