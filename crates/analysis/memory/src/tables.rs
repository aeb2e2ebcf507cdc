//! `tables/allocations.parquet` and `tables/sites.parquet` (schema in docs/SCHEMA.md):
//! written at collection time, read back by the reports.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use kairos_table::{opt, Batch, WriteOptions};

use crate::{AllocRow, Error, Kind, MemoryData, Site};

pub const ALLOCATIONS: &str = "allocations";
pub const SITES: &str = "sites";

fn allocations_schema() -> Schema {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Schema::new(vec![
        f("time_ns", DataType::UInt64, false),
        f("release_time_ns", DataType::UInt64, true),
        f("process", DataType::UInt32, false),
        f("pid", DataType::UInt32, false),
        f("tid", DataType::UInt32, false),
        f("kind", DataType::Utf8, false),
        f("address", DataType::UInt64, false),
        f("size", DataType::UInt64, false),
        f("old_address", DataType::UInt64, true),
        f("old_size", DataType::UInt64, true),
        f("anonymous", DataType::Boolean, true),
        f("site", DataType::UInt32, true),
    ])
}

fn sites_schema() -> Schema {
    let f = |n: &str, t: DataType| Field::new(n, t, false);
    Schema::new(vec![
        f("id", DataType::UInt32),
        f("function", DataType::Utf8),
        f("file", DataType::Utf8),
        f("line", DataType::UInt32),
        f("module", DataType::Utf8),
        f("stack", DataType::Utf8),
    ])
}

/// Writes both tables into `tables_dir`; returns (name, file name relative to the result, rows, bytes).
pub fn write(
    tables_dir: &Path,
    data: &MemoryData,
) -> Result<Vec<(String, String, u64, u64)>, Error> {
    let mut out = Vec::new();
    let a = write_one(
        tables_dir,
        ALLOCATIONS,
        allocations_schema(),
        data.rows.len(),
        |r| {
            let s = &data.rows[r];
            Ok(vec![
                Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.time_ns))) as ArrayRef,
                Arc::new(UInt64Array::from_iter(s.iter().map(|x| x.release_time_ns))),
                Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.process))),
                Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.pid))),
                Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.tid))),
                Arc::new(StringArray::from_iter_values(
                    s.iter().map(|x| x.kind.as_str()),
                )),
                Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.address))),
                Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.size))),
                Arc::new(UInt64Array::from_iter(s.iter().map(|x| x.old_address))),
                Arc::new(UInt64Array::from_iter(s.iter().map(|x| x.old_size))),
                Arc::new(BooleanArray::from_iter(s.iter().map(|x| x.anonymous))),
                Arc::new(UInt32Array::from_iter(s.iter().map(|x| x.site))),
            ])
        },
    )?;
    out.push(a);
    let s = write_one(tables_dir, SITES, sites_schema(), data.sites.len(), |r| {
        let s = &data.sites[r];
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.id))) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| x.function.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| x.file.as_str()),
            )),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.line))),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| x.module.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| x.stack.as_str()),
            )),
        ])
    })?;
    out.push(s);
    Ok(out)
}

fn write_one(
    dir: &Path,
    name: &str,
    schema: Schema,
    rows: usize,
    cols: impl Fn(std::ops::Range<usize>) -> Result<Vec<ArrayRef>, Error>,
) -> Result<(String, String, u64, u64), Error> {
    // Dictionaries only where values repeat (kind, ids, sizes, sites).
    let opts = WriteOptions {
        dictionary: &[
            "kind", "process", "pid", "tid", "size", "site", "function", "file", "module",
        ],
        created_by: format!("kairos {}", env!("CARGO_PKG_VERSION")),
        ..WriteOptions::default()
    };
    let path = dir.join(format!("{name}.parquet"));
    let bytes = kairos_table::write(&path, schema, rows, &opts, |r| {
        cols(r).map_err(|e| e.to_string())
    })?;
    Ok((
        name.to_string(),
        format!("tables/{name}.parquet"),
        rows as u64,
        bytes,
    ))
}

/// Column `name` of batch `b`: nulls allowed, the schema says where they may be.
fn col<'a, T: Array + 'static>(
    b: &Batch<'a>,
    name: &str,
) -> Result<&'a T, kairos_table::TableError> {
    b.col::<T>(name, true)
}

/// Reads both tables from `tables_dir`.
pub fn read(tables_dir: &Path) -> Result<MemoryData, Error> {
    let mut data = MemoryData::default();
    let apath = tables_dir.join(format!("{ALLOCATIONS}.parquet"));
    kairos_table::read(&apath, 1 << 16, |b| {
        let time = col::<UInt64Array>(b, "time_ns")?;
        let rel = col::<UInt64Array>(b, "release_time_ns")?;
        let process = col::<UInt32Array>(b, "process")?;
        let pid = col::<UInt32Array>(b, "pid")?;
        let tid = col::<UInt32Array>(b, "tid")?;
        let kind = col::<StringArray>(b, "kind")?;
        let addr = col::<UInt64Array>(b, "address")?;
        let size = col::<UInt64Array>(b, "size")?;
        let old = col::<UInt64Array>(b, "old_address")?;
        let old_size = col::<UInt64Array>(b, "old_size")?;
        let anon = col::<BooleanArray>(b, "anonymous")?;
        let site = col::<UInt32Array>(b, "site")?;
        for i in 0..b.rows {
            let k = Kind::parse(kind.value(i))
                .ok_or_else(|| b.damaged(format!("unknown kind '{}' in row {i}", kind.value(i))))?;
            data.rows.push(AllocRow {
                time_ns: time.value(i),
                release_time_ns: opt(rel, i),
                process: process.value(i),
                pid: pid.value(i),
                tid: tid.value(i),
                kind: k,
                address: addr.value(i),
                size: size.value(i),
                old_address: opt(old, i),
                old_size: opt(old_size, i),
                anonymous: (!anon.is_null(i)).then(|| anon.value(i)),
                site: opt(site, i),
            });
        }
        Ok(())
    })?;
    let spath = tables_dir.join(format!("{SITES}.parquet"));
    kairos_table::read(&spath, 1 << 16, |b| {
        let id = col::<UInt32Array>(b, "id")?;
        let function = col::<StringArray>(b, "function")?;
        let file = col::<StringArray>(b, "file")?;
        let line = col::<UInt32Array>(b, "line")?;
        let module = col::<StringArray>(b, "module")?;
        let stack = col::<StringArray>(b, "stack")?;
        for i in 0..b.rows {
            data.sites.push(Site {
                id: id.value(i),
                function: function.value(i).to_string(),
                file: file.value(i).to_string(),
                line: line.value(i),
                module: module.value(i).to_string(),
                stack: stack.value(i).to_string(),
            });
        }
        Ok(())
    })?;
    // Site ids are row numbers; anything else is a damaged table.
    if data
        .sites
        .iter()
        .enumerate()
        .any(|(i, s)| s.id as usize != i)
    {
        return Err(Error::Damaged {
            path: spath.display().to_string(),
            detail: "site ids are not row numbers".into(),
        });
    }
    if let Some(r) = data
        .rows
        .iter()
        .find(|r| r.site.is_some_and(|s| s as usize >= data.sites.len()))
    {
        return Err(Error::Damaged {
            path: apath.display().to_string(),
            detail: format!("site {:?} does not exist", r.site),
        });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = MemoryData {
            rows: vec![AllocRow {
                time_ns: 5,
                release_time_ns: Some(4),
                process: 0,
                pid: 7,
                tid: 8,
                kind: Kind::Realloc,
                address: 0x10,
                size: 9,
                old_address: Some(0x20),
                old_size: None,
                anonymous: None,
                site: Some(0),
            }],
            sites: vec![Site {
                id: 0,
                function: "f".into(),
                file: "a.c".into(),
                line: 3,
                module: "/bin/x".into(),
                stack: "f (a.c:3)".into(),
            }],
            notes: vec![],
        };
        write(dir.path(), &data).expect("write");
        let back = read(dir.path()).expect("read");
        assert_eq!(back.rows, data.rows);
        assert_eq!(back.sites, data.sites);
        std::fs::write(dir.path().join("sites.parquet"), b"junk").expect("write junk");
        assert!(read(dir.path()).is_err());
    }
}
