//! A step the caller runs on the target before it is measured: the launched program's pid
//! while it still waits before exec (its threads and children inherit what is done to
//! it), or each thread of an attached process. Used to run the target in a resctrl group.

use std::sync::Arc;

/// Called with a pid (a launched program) or thread id (each thread of `-p`); an error is
/// a sentence and fails the collection before anything is measured.
#[derive(Clone)]
pub struct TargetHook(pub Arc<dyn Fn(i32) -> Result<(), String> + Send + Sync>);

impl std::fmt::Debug for TargetHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TargetHook")
    }
}

/// The thread ids of process `pid` (just `pid` when /proc cannot list them).
pub(crate) fn threads(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if v.is_empty() {
        v.push(pid);
    }
    v.sort_unstable();
    v
}
