//! What an aggregation of samples gives and is asked by: how samples are grouped above the
//! call tree, which threads a selection admits, the per-node sums, and the cache of the last
//! few aggregates each index keeps. Below the index and the aggregation that use them.

use std::sync::{Arc, Mutex};

use kairos_model::Profile;

/// How samples are grouped above the call tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Function,
    Module,
    Thread,
    Process,
    Cpu,
}

impl Group {
    pub const NAMES: [&'static str; 5] = ["function", "module", "thread", "process", "cpu"];
    pub fn parse(s: &str) -> Group {
        match s {
            "module" => Group::Module,
            "thread" => Group::Thread,
            "process" => Group::Process,
            "cpu" => Group::Cpu,
            _ => Group::Function,
        }
    }
}

/// The distinct pids of a profile, sorted: process group ids index it.
pub fn pids(p: &Profile) -> Vec<i32> {
    let mut v: Vec<i32> = p.threads.iter().map(|t| t.pid).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Per tree node: self weight and count (samples whose leaf it is), and inclusive totals.
#[derive(Debug, Default)]
pub struct Agg {
    pub self_w: Vec<u64>,
    pub self_c: Vec<u64>,
    pub total_w: Vec<u64>,
    pub total_c: Vec<u64>,
    pub weight: u64,
    pub count: u64,
}

/// Which threads (indices into the profile's threads) a selection's `tids` admit.
pub struct ThreadMask(Option<Vec<bool>>);

impl ThreadMask {
    pub fn new(p: &Profile, tids: &Option<Vec<i32>>) -> ThreadMask {
        ThreadMask(
            tids.as_ref()
                .map(|t| p.threads.iter().map(|th| t.contains(&th.tid)).collect()),
        )
    }
    /// Every thread: no filter.
    pub fn all() -> ThreadMask {
        ThreadMask(None)
    }
    /// True when no thread is filtered out.
    pub fn is_all(&self) -> bool {
        self.0.is_none()
    }
    pub fn admits(&self, thread: u32) -> bool {
        self.0
            .as_ref()
            .is_none_or(|m| m.get(thread as usize).copied().unwrap_or(false))
    }
}

/// The last few aggregates of one index, by selection key.
#[derive(Default)]
pub struct Cache(Mutex<Vec<(String, Arc<Agg>)>>);

impl Cache {
    /// The aggregate kept under `key`, else `make`'s, kept (the oldest of four goes).
    pub fn get_or(&self, key: String, make: impl FnOnce() -> Agg) -> Arc<Agg> {
        if let Ok(c) = self.0.lock() {
            if let Some((_, a)) = c.iter().find(|(k, _)| *k == key) {
                return a.clone();
            }
        }
        let a = Arc::new(make());
        if let Ok(mut c) = self.0.lock() {
            if c.len() >= 4 {
                c.remove(0);
            }
            c.push((key, a.clone()));
        }
        a
    }
}
