//! Figures derived from a result's tables and kept beside them (`derived/NAME.json`), so
//! that a report asked for again does not read and aggregate every sample again: the
//! import or collection that has the profile in memory computes them once.
//!
//! A derived file names the tables it was computed from (name, rows, bytes); it is
//! used only while the manifest lists exactly those tables, and [`crate::write_profile`]
//! removes the folder before it writes new ones. Anything unreadable counts as absent:
//! the caller computes the figures from the tables as if nothing had been kept.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::dir::ResultDir;
use crate::manifest::TableInfo;

/// Folder of the derived files inside a result directory.
pub const DERIVED_DIR: &str = "derived";

#[derive(Serialize, Deserialize)]
struct Stored<T> {
    /// What the manifest listed when `value` was computed.
    tables: Vec<(String, u64, u64)>,
    value: T,
}

fn fingerprint(dir: &ResultDir) -> Vec<(String, u64, u64)> {
    dir.manifest()
        .tables
        .iter()
        .map(|t: &TableInfo| (t.name.clone(), t.rows, t.bytes))
        .collect()
}

impl ResultDir {
    fn derived_file(&self, name: &str) -> PathBuf {
        self.path().join(DERIVED_DIR).join(format!("{name}.json"))
    }

    /// Keeps `value` as `derived/NAME.json` for the tables the manifest lists now. Written
    /// to a temporary file and renamed, so a reader sees a whole file or none.
    pub fn save_derived<T: Serialize>(&self, name: &str, value: &T) -> std::io::Result<()> {
        let path = self.derived_file(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let stored = Stored {
            tables: fingerprint(self),
            value,
        };
        let tmp = path.with_extension("json.tmp");
        let mut f = std::io::BufWriter::new(fs::File::create(&tmp)?);
        serde_json::to_writer(&mut f, &stored).map_err(std::io::Error::other)?;
        f.flush()?;
        drop(f);
        fs::rename(&tmp, &path)
    }

    /// The value kept as `derived/NAME.json`, if there is one computed from the tables
    /// the manifest lists now.
    pub fn load_derived<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        let bytes = fs::read(self.derived_file(name)).ok()?;
        let stored: Stored<T> = serde_json::from_slice(&bytes).ok()?;
        (!self.manifest().tables.is_empty() && stored.tables == fingerprint(self))
            .then_some(stored.value)
    }

    /// Forgets every derived file (the tables are about to change).
    pub(crate) fn clear_derived(&self) -> std::io::Result<()> {
        match fs::remove_dir_all(self.path().join(DERIVED_DIR)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with_tables(root: &std::path::Path, rows: u64) -> ResultDir {
        let mut d = ResultDir::create(root.join("r000hs")).expect("result dir");
        d.manifest_mut().tables = vec![TableInfo {
            name: "samples".into(),
            file: "tables/samples.parquet".into(),
            rows,
            bytes: 100,
        }];
        d
    }

    #[test]
    fn kept_only_for_the_tables_it_was_computed_from() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = dir_with_tables(tmp.path(), 5);
        assert_eq!(d.load_derived::<Vec<u32>>("x"), None);
        d.save_derived("x", &vec![1u32, 2]).expect("saved");
        assert_eq!(d.load_derived::<Vec<u32>>("x"), Some(vec![1, 2]));
        // Another type than was kept, or other tables: absent.
        assert_eq!(d.load_derived::<String>("x"), None);
        let mut other = d.clone();
        other.manifest_mut().tables[0].rows = 6;
        assert_eq!(other.load_derived::<Vec<u32>>("x"), None);
        // A damaged file is absent too.
        fs::write(d.derived_file("x"), b"{\"tables\":").expect("write");
        assert_eq!(d.load_derived::<Vec<u32>>("x"), None);
        d.save_derived("x", &vec![3u32]).expect("saved");
        d.clear_derived().expect("cleared");
        assert_eq!(d.load_derived::<Vec<u32>>("x"), None);
        d.clear_derived().expect("clearing nothing is fine");
    }
}
