//! For tests of resctrl and of its callers: copies of the recorded resctrl trees
//! (`shared/fixtures/resctrl/goresctrl`, or `KAIROS_RESCTRL_FIXTURES`) and a snapshot of a
//! tree that tells what a run left changed.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use crate::schemata::Schemata;

/// The folder of recorded trees, or a sentence saying where it was looked for.
pub fn dir() -> Result<PathBuf, String> {
    let d = std::env::var_os("KAIROS_RESCTRL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/fixtures/resctrl/goresctrl")
        });
    if d.is_dir() {
        Ok(d)
    } else {
        Err(format!(
            "resctrl fixtures not found at {}; set KAIROS_RESCTRL_FIXTURES",
            d.display()
        ))
    }
}

pub fn copy_dir(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t)?;
        } else {
            std::fs::copy(e.path(), &t)?;
        }
    }
    Ok(())
}

/// Every file under `dir` with its content; schemata normalised (the kernel reformats
/// them, so their meaning is what must be restored, not their spacing).
pub fn snapshot(dir: &Path) -> io::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let rel = p
            .strip_prefix(base)
            .map_err(io::Error::other)?
            .display()
            .to_string();
        if p.is_dir() {
            out.insert(rel.clone() + "/", String::new());
            walk(base, &p, out)?;
        } else {
            let t = std::fs::read_to_string(&p)?;
            let t = match rel.ends_with("schemata").then(|| Schemata::parse(&t)) {
                Some(Ok(s)) => s.render(),
                _ => t,
            };
            out.insert(rel, t);
        }
    }
    Ok(())
}
