//! `tables/allocations.parquet` and `tables/sites.parquet` (schema in docs/SCHEMA.md):
//! written at collection time, read back by the reports.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use kairos_table::{opt, WriteOptions};

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

/// Rows per batch handed to the Parquet writer (and per [`Batch`] of [`write_allocations`]).
pub const BATCH_ROWS: usize = 1 << 16;

/// A written table: name, file name relative to the result, rows, bytes.
pub type Written = (String, String, u64, u64);

/// Writes both tables into `tables_dir`.
pub fn write(tables_dir: &Path, data: &MemoryData) -> Result<Vec<Written>, Error> {
    let a = write_one(
        tables_dir,
        ALLOCATIONS,
        allocations_schema(),
        data.rows.len(),
        |r| {
            let rows = data.rows.get(r).unwrap_or(&[]);
            let mut b = Batch::with_capacity(rows.len());
            rows.iter().for_each(|x| b.push(x));
            Ok(b.columns())
        },
    )?;
    Ok(vec![a, write_sites(tables_dir, &data.sites)?])
}

/// Rows of the `allocations` table gathered column by column, as the Parquet writer takes
/// them (the columns become its arrays without a copy). What most rows leave empty or
/// share with the row before is kept apart (per thread, per row that has it) and spread
/// into whole columns by [`Batch::columns`], on the writer's thread.
#[derive(Debug, Default)]
pub struct Batch {
    time: Vec<u64>,
    kind: Vec<Kind>,
    address: Vec<u64>,
    size: Vec<u64>,
    site: Vec<u32>,
    site_valid: Vec<bool>,
    /// First row of each stretch of one thread: (row, process, pid, tid).
    threads: Vec<(usize, u32, u32, u32)>,
    /// Rows with a release time, an old block or an mmap flag.
    extra: Vec<(usize, Extra)>,
}

/// The columns of a row that only realloc, mmap, munmap and mremap fill.
#[derive(Debug, Clone, Copy)]
struct Extra {
    release: Option<u64>,
    old_address: Option<u64>,
    old_size: Option<u64>,
    anonymous: Option<bool>,
}

impl Batch {
    pub fn with_capacity(n: usize) -> Batch {
        Batch {
            time: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            address: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            site: Vec::with_capacity(n),
            site_valid: Vec::with_capacity(n),
            threads: Vec::new(),
            extra: Vec::new(),
        }
    }

    #[inline]
    pub fn push(&mut self, r: &AllocRow) {
        let row = self.time.len();
        self.time.push(r.time_ns);
        self.kind.push(r.kind);
        self.address.push(r.address);
        self.size.push(r.size);
        self.site.push(r.site.unwrap_or(0));
        self.site_valid.push(r.site.is_some());
        let thread = (r.process, r.pid, r.tid);
        if self
            .threads
            .last()
            .is_none_or(|t| (t.1, t.2, t.3) != thread)
        {
            self.threads.push((row, r.process, r.pid, r.tid));
        }
        let extra = Extra {
            release: r.release_time_ns,
            old_address: r.old_address,
            old_size: r.old_size,
            anonymous: r.anonymous,
        };
        if extra.release.is_some()
            || extra.old_address.is_some()
            || extra.old_size.is_some()
            || extra.anonymous.is_some()
        {
            self.extra.push((row, extra));
        }
    }

    pub fn len(&self) -> usize {
        self.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// The table's columns, in its schema's order.
    pub fn columns(self) -> Vec<ArrayRef> {
        let n = self.time.len();
        let mut ids = [vec![0u32; n], vec![0u32; n], vec![0u32; n]];
        for (i, &(row, process, pid, tid)) in self.threads.iter().enumerate() {
            let end = self.threads.get(i + 1).map_or(n, |t| t.0);
            for (col, v) in ids.iter_mut().zip([process, pid, tid]) {
                if let Some(s) = col.get_mut(row..end) {
                    s.fill(v);
                }
            }
        }
        let [process, pid, tid] = ids;
        let sparse_u64 = |get: fn(&Extra) -> Option<u64>| {
            let mut values = vec![0u64; n];
            let mut valid = vec![false; n];
            let mut any = 0;
            for (row, e) in &self.extra {
                if let (Some(v), Some(x), Some(ok)) =
                    (get(e), values.get_mut(*row), valid.get_mut(*row))
                {
                    (*x, *ok) = (v, true);
                    any += 1;
                }
            }
            let nulls = (any < n).then(|| valid.into());
            Arc::new(UInt64Array::new(values.into(), nulls)) as ArrayRef
        };
        let anonymous = {
            let mut values = vec![false; n];
            let mut valid = vec![false; n];
            let mut any = 0;
            for (row, e) in &self.extra {
                if let (Some(v), Some(x), Some(ok)) =
                    (e.anonymous, values.get_mut(*row), valid.get_mut(*row))
                {
                    (*x, *ok) = (v, true);
                    any += 1;
                }
            }
            let nulls = (any < n).then(|| valid.into());
            Arc::new(BooleanArray::new(values.into(), nulls)) as ArrayRef
        };
        let site_nulls = self
            .site_valid
            .iter()
            .any(|v| !v)
            .then(|| self.site_valid.into());
        vec![
            Arc::new(UInt64Array::from(self.time)) as ArrayRef,
            sparse_u64(|e| e.release),
            Arc::new(UInt32Array::from(process)),
            Arc::new(UInt32Array::from(pid)),
            Arc::new(UInt32Array::from(tid)),
            Arc::new(StringArray::from_iter_values(
                self.kind.iter().map(|k| k.as_str()),
            )),
            Arc::new(UInt64Array::from(self.address)),
            Arc::new(UInt64Array::from(self.size)),
            sparse_u64(|e| e.old_address),
            sparse_u64(|e| e.old_size),
            anonymous,
            Arc::new(UInt32Array::new(self.site.into(), site_nulls)),
        ]
    }
}

/// Writes the `allocations` table of `rows` rows that come in batches: `next` is asked
/// for each batch in turn ([`BATCH_ROWS`] rows, fewer for the last) and hands it over.
pub fn write_allocations(
    tables_dir: &Path,
    rows: usize,
    next: impl FnMut() -> Result<Batch, String>,
) -> Result<Written, Error> {
    let next = std::cell::RefCell::new(next);
    write_one(tables_dir, ALLOCATIONS, allocations_schema(), rows, |r| {
        let batch = (*next.borrow_mut())().map_err(|e| Error::Damaged {
            path: ALLOCATIONS.into(),
            detail: e,
        })?;
        if batch.len() != r.len() {
            return Err(Error::Damaged {
                path: ALLOCATIONS.into(),
                detail: format!(
                    "a batch of {} rows came for rows {}..{}",
                    batch.len(),
                    r.start,
                    r.end
                ),
            });
        }
        Ok(batch.columns())
    })
}

/// Writes the `sites` table.
pub fn write_sites(tables_dir: &Path, sites: &[Site]) -> Result<Written, Error> {
    write_one(tables_dir, SITES, sites_schema(), sites.len(), |r| {
        let s = sites.get(r).unwrap_or(&[]);
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
    })
}

fn write_one(
    dir: &Path,
    name: &str,
    schema: Schema,
    rows: usize,
    cols: impl Fn(std::ops::Range<usize>) -> Result<Vec<ArrayRef>, Error>,
) -> Result<Written, Error> {
    // Dictionaries only where values repeat (kind, ids, sizes, sites). Times are sorted:
    // their deltas are small, and Snappy would not shrink them further.
    let opts = WriteOptions {
        dictionary: &[
            "kind", "process", "pid", "tid", "size", "site", "function", "file", "module",
        ],
        delta: &["time_ns"],
        uncompressed: &["time_ns"],
        batch_rows: BATCH_ROWS,
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
    b: &kairos_table::Batch<'a>,
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
