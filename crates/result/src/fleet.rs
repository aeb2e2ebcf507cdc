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
//! Each table of a result (`tables/*.parquet`) goes to the folder of its name, and a
//! `results` table of one row made from the manifest beside them; the indices
//! inside a result's tables (stack, frame, thread) are the result's own, so a query joins
//! on `result` as well. Nothing is ever overwritten: a result already published says so.
//! Documented in docs/SCHEMA.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Schema};

use crate::dir::{tmp_path, ResultDir, MANIFEST_FILE, TABLES_DIR};
use crate::error::{io_err, Error, Result};
use crate::table_io::{f, TableDef, ROW_GROUP_ROWS};

/// The folder of the manifests, beside the tables'.
pub const MANIFESTS: &str = "manifests";
/// The table of one row per result, made from the manifests when publishing.
pub const RESULTS: &str = "results";

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

/// One file of a published result, under the root: where it goes and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path under the root, `/`-separated: `TABLE/host=H/date=D/result=R/TABLE.parquet`.
    pub key: String,
    pub content: Content,
}

/// What an [`Entry`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A file of the result, copied unchanged (its tables, its manifest).
    Copy(PathBuf),
    /// The one-row `results` table, made from the manifest ([`write_results_table`]).
    ResultsRow,
}

/// Where each file of a result goes in the fleet layout, the manifest last (its presence
/// says the result is there whole). Local and object-storage publishing both follow it.
pub fn plan(dir: &ResultDir) -> Result<(Published, Vec<Entry>)> {
    let (host, date, result) = partition(dir);
    let key = |folder: &str, file: &str| {
        format!("{folder}/host={host}/date={date}/result={result}/{file}")
    };
    let tables_dir = dir.path().join(TABLES_DIR);
    let mut tables: Vec<PathBuf> = std::fs::read_dir(&tables_dir)
        .map_err(io_err(&tables_dir))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    tables.sort();
    let mut names = Vec::new();
    let mut entries = Vec::new();
    for t in tables {
        let Some(name) = t.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
            continue;
        };
        if name == RESULTS {
            continue;
        }
        entries.push(Entry {
            key: key(&name, &format!("{name}.parquet")),
            content: Content::Copy(t),
        });
        names.push(name);
    }
    entries.push(Entry {
        key: key(RESULTS, &format!("{RESULTS}.parquet")),
        content: Content::ResultsRow,
    });
    names.push(RESULTS.to_owned());
    entries.push(Entry {
        key: key(MANIFESTS, MANIFEST_FILE),
        content: Content::Copy(dir.path().join(MANIFEST_FILE)),
    });
    let published = Published {
        host,
        date,
        result,
        tables: names,
    };
    Ok((published, entries))
}

/// Copies a result's tables and manifest into the fleet layout under `root`, with its
/// `results` row; refuses a result already there.
pub fn publish(dir: &ResultDir, root: &Path) -> Result<Published> {
    let (published, entries) = plan(dir)?;
    // The manifest, last in the plan, says whether the result is there already.
    if let Some(manifest) = entries.last().map(|e| root.join(&e.key)) {
        if manifest.exists() {
            let path = manifest
                .parent()
                .map_or(manifest.clone(), Path::to_path_buf);
            return Err(Error::AlreadyExists { path });
        }
    }
    for e in &entries {
        let to = root.join(&e.key);
        match &e.content {
            Content::Copy(from) => copy(from, &to)?,
            Content::ResultsRow => write_results_table(dir, &to)?,
        }
    }
    Ok(published)
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

/// The `results` table of the layout: one row per result from its manifest, so that a
/// query can join on what each result was (kind, start, host) and turn sample times into
/// Unix times (`time_ns + clock_offset_ns`).
const RESULTS_TABLE: TableDef = TableDef {
    name: RESULTS,
    schema: results_schema,
    dictionary: &[],
    delta: &[],
    uncompressed: &[],
};

fn results_schema() -> Schema {
    Schema::new(vec![
        f("kind", DataType::Utf8, true),
        f("start_time", DataType::Utf8, true),
        f("clock_offset_ns", DataType::Int64, true),
        f("duration_secs", DataType::Float64, true),
        f("host_name", DataType::Utf8, true),
        f("cpu_model", DataType::Utf8, true),
        f("kernel_release", DataType::Utf8, true),
        f("nr_cpus", DataType::UInt32, true),
        f("command_line", DataType::Utf8, true),
        f("event", DataType::Utf8, true),
        f("samples", DataType::UInt64, true),
        f("lost_records", DataType::UInt64, true),
    ])
}

/// Writes the `results` row of `dir` to the file `to` (through a temporary file).
pub fn write_results_table(dir: &ResultDir, to: &Path) -> Result<()> {
    let m = dir.manifest();
    let host = m.host.clone().unwrap_or_default();
    let s = |v: Option<String>| -> ArrayRef { Arc::new(StringArray::from(vec![v])) };
    let columns: Vec<ArrayRef> = vec![
        s(m.kind.clone()),
        s(m.start_time.clone()),
        Arc::new(Int64Array::from(vec![m.clock_offset_ns])),
        Arc::new(Float64Array::from(vec![m.duration_secs])),
        s(host.name),
        s(host.cpu_model),
        s(host.kernel_release),
        Arc::new(UInt32Array::from(vec![host.nr_cpus])),
        s(m.command_line.as_ref().map(|c| c.join(" "))),
        s(m.event.as_ref().map(|e| e.name.clone())),
        Arc::new(UInt64Array::from(vec![m.counts.map(|c| c.samples)])),
        Arc::new(UInt64Array::from(vec![m.counts.map(|c| c.lost_records)])),
    ];
    kairos_table::write(
        to,
        (RESULTS_TABLE.schema)(),
        1,
        &RESULTS_TABLE.options(ROW_GROUP_ROWS),
        |_| Ok(columns.clone()),
    )
    .map_err(|e| RESULTS_TABLE.error(e))?;
    Ok(())
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
