//! Copies of the recorded resctrl trees in temp directories, through the crate's own
//! fixture helpers (shared with the callers' tests).
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kairos_resctrl::fixtures;

pub fn fixtures() -> PathBuf {
    fixtures::dir().unwrap_or_else(|e| panic!("{e}"))
}

pub fn copy_dir(from: &Path, to: &Path) {
    fixtures::copy_dir(from, to).unwrap();
}

/// A copy of fixture tree `name` (e.g. "resctrl.l2") in a fresh temp dir.
pub fn tree_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("kairos-resctrl-")
        .tempdir()
        .unwrap();
    let root = tmp.path().join(name);
    copy_dir(&fixtures().join(name), &root);
    (tmp, root)
}

pub fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fixtures::snapshot(dir).unwrap()
}
