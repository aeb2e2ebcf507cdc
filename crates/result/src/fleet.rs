//! The fleet layout: results of many hosts in one tree that query engines partition on,
//! Hive style, so that DuckDB, Spark or a Kairos query read one table over every host and
//! day by listing one folder, and skip hosts and days by the paths alone:
//!
//! ```text
//! ROOT/samples/host=web-1/date=2026-11-29/result=r000hs-20261129T101500Z/samples.parquet
//! ROOT/stacks/host=web-1/date=2026-11-29/result=r000hs-20261129T101500Z/stacks.parquet
//! ROOT/manifests/host=web-1/date=2026-11-29/result=r000hs-20261129T101500Z/manifest.json
//! ```
//!
//! Each table of a result (`tables/*.parquet`) goes to the folder of its name; the indices
//! inside a result's tables (stack, frame, thread) are the result's own, so a query joins
//! on `result` as well. Nothing is ever overwritten: a result already published says so.
//! Documented in docs/SCHEMA.md.

use std::path::{Path, PathBuf};

use crate::dir::{tmp_path, ResultDir, MANIFEST_FILE, TABLES_DIR};
use crate::error::{io_err, Error, Result};

/// The folder of the manifests, beside the tables'.
pub const MANIFESTS: &str = "manifests";

/// Where a result went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub host: String,
    pub date: String,
    /// The `result=` value: the directory's name and its start time.
    pub result: String,
    /// The tables copied, by name.
    pub tables: Vec<String>,
}

/// A partition value as every engine reads it from a path: letters, digits, `.`, `_`, `-`.
fn partition_value(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if v.is_empty() {
        "unknown".into()
    } else {
        v
    }
}

/// The partition folders of a result: `host=H/date=D/result=R`.
pub fn partition(dir: &ResultDir) -> (String, String, String) {
    let m = dir.manifest();
    let host = partition_value(
        m.host
            .as_ref()
            .and_then(|h| h.name.as_deref())
            .unwrap_or("unknown-host"),
    );
    let start = m.start_time.as_deref().unwrap_or("");
    let date = if start.len() >= 10 {
        partition_value(&start[..10])
    } else {
        "unknown-date".into()
    };
    let name = dir
        .path()
        .file_name()
        .map_or_else(|| "result".into(), |n| n.to_string_lossy().into_owned());
    let stamp: String = start
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let result = if stamp.is_empty() {
        partition_value(&name)
    } else {
        partition_value(&format!("{name}-{stamp}Z"))
    };
    (host, date, result)
}

/// Copies a result's tables and manifest into the fleet layout under `root`.
pub fn publish(dir: &ResultDir, root: &Path) -> Result<Published> {
    let (host, date, result) = partition(dir);
    let part = |folder: &str| -> PathBuf {
        root.join(folder)
            .join(format!("host={host}"))
            .join(format!("date={date}"))
            .join(format!("result={result}"))
    };
    let manifest_dir = part(MANIFESTS);
    if manifest_dir.exists() {
        return Err(Error::AlreadyExists { path: manifest_dir });
    }
    let tables_dir = dir.path().join(TABLES_DIR);
    let mut tables: Vec<PathBuf> = std::fs::read_dir(&tables_dir)
        .map_err(io_err(&tables_dir))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    tables.sort();
    let mut names = Vec::new();
    for t in &tables {
        let Some(name) = t.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
            continue;
        };
        copy(t, &part(&name).join(format!("{name}.parquet")))?;
        names.push(name);
    }
    // The manifest last: its presence says the result is there whole.
    copy(
        &dir.path().join(MANIFEST_FILE),
        &manifest_dir.join(MANIFEST_FILE),
    )?;
    Ok(Published {
        host,
        date,
        result,
        tables: names,
    })
}

/// Copies next to the destination's name and renames, so that a reader never sees half
/// a file.
fn copy(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    let tmp = tmp_path(to);
    std::fs::copy(from, &tmp).map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, to).map_err(io_err(to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_are_path_safe() {
        assert_eq!(partition_value("web-1.example"), "web-1.example");
        assert_eq!(partition_value("a/b=c d"), "a_b_c_d");
        assert_eq!(partition_value(""), "unknown");
    }
}
