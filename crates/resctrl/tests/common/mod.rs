//! Copies of the recorded resctrl trees (../shared/fixtures/resctrl/goresctrl) in temp
//! directories, and a comparison that tells what a test run left changed.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    let d = std::env::var_os("KAIROS_RESCTRL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/resctrl/goresctrl"));
    assert!(d.is_dir(), "resctrl fixtures not found at {}; set KAIROS_RESCTRL_FIXTURES", d.display());
    d
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A copy of fixture tree `name` (e.g. "resctrl.l2") in a fresh temp dir.
pub fn tree_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new().prefix("kairos-resctrl-").tempdir().unwrap();
    let root = tmp.path().join(name);
    copy_dir(&fixtures().join(name), &root);
    (tmp, root)
}

/// Every file under `dir` with its content; schemata files normalised (the kernel
/// reformats them, so their meaning is what must be restored, not their spacing).
pub fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let rel = p.strip_prefix(base).unwrap().display().to_string();
        if p.is_dir() {
            out.insert(rel.clone() + "/", String::new());
            walk(base, &p, out);
        } else {
            let t = std::fs::read_to_string(&p).unwrap();
            let t = if rel.ends_with("schemata") { kairos_resctrl::schemata::Schemata::parse(&t).unwrap().render() } else { t };
            out.insert(rel, t);
        }
    }
}
