//! How the profile tables are stored, on top of the one Parquet writer and reader of
//! Kairos (crate kairos-table): each table's definition, writing and reading it in
//! batches, and its errors in the terms of this crate (the table's name and file). Every
//! table's file (`tables.rs`, `sample_table.rs`, `branch_table.rs`, `call_table.rs`)
//! stores its table through these, so they live here, one layer below all of them.

use std::ops::Range;
use std::path::Path;

use arrow_array::{
    Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, UInt16Array, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use kairos_table::{TableError, WriteOptions};

use crate::dir::ResultDir;
use crate::error::{Error, Result};
use crate::manifest::{TableInfo, FORMAT_VERSION};

/// Rows per Parquet row group: large enough for good compression and few footer entries,
/// small enough that a reader can skip through a long recording.
pub(crate) const ROW_GROUP_ROWS: usize = 1 << 20;
/// Rows per Arrow batch handed to the writer: bounds the extra memory used while writing
/// (the model's vectors are not copied whole).
pub(crate) const WRITE_BATCH_ROWS: usize = 1 << 17;
/// Rows per batch when reading.
pub(crate) const READ_BATCH_ROWS: usize = 1 << 16;

/// How one table is stored.
pub(crate) struct TableDef {
    pub(crate) name: &'static str,
    pub(crate) schema: fn() -> Schema,
    /// Columns with Parquet dictionary encoding: the strings (few distinct values repeated
    /// often, e.g. file names) and small-domain integers. Others are plain, since a
    /// dictionary of mostly distinct values only costs time before it falls back.
    pub(crate) dictionary: &'static [&'static str],
    /// Columns with delta encoding: sorted or nearly sorted integers (time, ids).
    pub(crate) delta: &'static [&'static str],
    /// Columns left uncompressed: delta-encoded ones whose bit-packed deltas Snappy
    /// would not shrink, so compressing them only costs time.
    pub(crate) uncompressed: &'static [&'static str],
}

/// The key-value metadata every Kairos table file carries (docs/SCHEMA.md): its name and
/// the format version. Tables written outside this crate (an analysis's own) use it too.
pub fn table_metadata(name: &str) -> Vec<(String, String)> {
    vec![
        ("kairos.table".to_owned(), name.to_owned()),
        (
            "kairos.format_version".to_owned(),
            FORMAT_VERSION.to_string(),
        ),
    ]
}

/// The `created_by` of Kairos's Parquet files.
pub fn created_by() -> String {
    format!("kairos {}", env!("CARGO_PKG_VERSION"))
}

pub(crate) fn f(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

/// The rows `r` of `v`, the batch [`write_table`] asks a table's columns for (none when
/// `r` is out of range).
pub(crate) fn slice<'a, T>(v: &'a [T], r: &Range<usize>) -> &'a [T] {
    v.get(r.clone()).unwrap_or(&[])
}

impl TableDef {
    pub(crate) fn file(&self) -> String {
        format!("{}/{}.parquet", crate::dir::TABLES_DIR, self.name)
    }

    pub(crate) fn options(&self, row_group_rows: usize) -> WriteOptions<'static> {
        WriteOptions {
            dictionary: self.dictionary,
            delta: self.delta,
            uncompressed: self.uncompressed,
            batch_rows: WRITE_BATCH_ROWS,
            row_group_rows,
            metadata: table_metadata(self.name),
            created_by: created_by(),
        }
    }

    /// A kairos-table error as this crate's, naming the table.
    pub(crate) fn error(&self, e: TableError) -> Error {
        table_error(self.name, e)
    }

    pub(crate) fn info(&self, rows: usize, bytes: u64) -> TableInfo {
        TableInfo {
            name: self.name.to_owned(),
            file: self.file(),
            rows: rows as u64,
            bytes,
        }
    }
}

/// Writes one table through a temporary file, in batches of [`WRITE_BATCH_ROWS`] built
/// by `columns`.
pub(crate) fn write_table(
    root: &Path,
    def: &TableDef,
    rows: usize,
    columns: impl Fn(Range<usize>) -> Result<Vec<ArrayRef>, String>,
) -> Result<TableInfo> {
    let bytes = kairos_table::write(
        &root.join(def.file()),
        (def.schema)(),
        rows,
        &def.options(ROW_GROUP_ROWS),
        columns,
    )
    .map_err(|e| def.error(e))?;
    Ok(def.info(rows, bytes))
}

/// Columns of one batch being read, with the table name and path for errors.
pub(crate) struct Cols<'a> {
    table: &'static str,
    path: &'a Path,
    batch: &'a RecordBatch,
    pub(crate) rows: usize,
}

impl<'a> Cols<'a> {
    pub(crate) fn damaged(&self, detail: impl Into<String>) -> Error {
        Error::DamagedTable {
            table: self.table.to_owned(),
            path: self.path.to_owned(),
            detail: detail.into(),
        }
    }

    pub(crate) fn col<T: Array + 'static>(
        &self,
        name: &str,
        nullable: bool,
        want: &str,
    ) -> Result<&'a T> {
        let c = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| self.damaged(format!("no column {name}")))?;
        let a = c.as_any().downcast_ref::<T>().ok_or_else(|| {
            self.damaged(format!(
                "column {name} has type {}, expected {want}",
                c.data_type()
            ))
        })?;
        if !nullable && a.null_count() > 0 {
            return Err(self.damaged(format!("column {name} has nulls")));
        }
        Ok(a)
    }

    /// Whether the batch has column `name` (columns added later are optional).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.batch.column_by_name(name).is_some()
    }

    pub(crate) fn u64(&self, n: &str) -> Result<&'a UInt64Array> {
        self.col(n, false, "UInt64")
    }
    pub(crate) fn u32(&self, n: &str) -> Result<&'a UInt32Array> {
        self.col(n, false, "UInt32")
    }
    pub(crate) fn opt_u32(&self, n: &str) -> Result<&'a UInt32Array> {
        self.col(n, true, "UInt32")
    }
    pub(crate) fn u16(&self, n: &str) -> Result<&'a UInt16Array> {
        self.col(n, false, "UInt16")
    }
    pub(crate) fn i32(&self, n: &str) -> Result<&'a Int32Array> {
        self.col(n, false, "Int32")
    }
    pub(crate) fn opt_i64(&self, n: &str) -> Result<&'a Int64Array> {
        self.col(n, true, "Int64")
    }
    pub(crate) fn str(&self, n: &str) -> Result<&'a StringArray> {
        self.col(n, false, "Utf8")
    }
    pub(crate) fn opt_str(&self, n: &str) -> Result<&'a StringArray> {
        self.col(n, true, "Utf8")
    }

    /// Ids must be the row numbers, because the model indexes by position.
    pub(crate) fn check_ids(&self, id: &UInt32Array, first: usize) -> Result<()> {
        for (i, &v) in id.values().iter().enumerate() {
            if v as usize != first + i {
                return Err(self.damaged(format!(
                    "row {} has id {v}; ids must be the row numbers",
                    first + i
                )));
            }
        }
        Ok(())
    }
}

/// Reads one table batch by batch into `each`, and checks its row count against the
/// manifest. Panics of the Parquet decoder on crafted input become [`Error::DamagedTable`].
pub(crate) fn read_table(
    dir: &ResultDir,
    root: &Path,
    def: &TableDef,
    each: impl FnMut(&Cols<'_>) -> Result<()>,
) -> Result<()> {
    read_table_part(dir, root, def, None, each).map(|_| ())
}

/// [`read_table`] of one row group only (`Some(group)`), without the check of the row
/// count; returns the rows read.
pub(crate) fn read_table_part(
    dir: &ResultDir,
    root: &Path,
    def: &TableDef,
    group: Option<usize>,
    mut each: impl FnMut(&Cols<'_>) -> Result<()>,
) -> Result<u64> {
    let path = root.join(def.file());
    // Errors of `each` are this crate's: they travel out of kairos-table's reader aside.
    let mut failed: Option<Error> = None;
    let mut visit = |b: &kairos_table::Batch<'_>| {
        let cols = Cols {
            table: def.name,
            path: &path,
            batch: b.batch,
            rows: b.rows,
        };
        each(&cols).map_err(|e| {
            failed = Some(e);
            TableError::Damaged {
                path: path.clone(),
                detail: String::new(),
            }
        })
    };
    let read = match group {
        Some(g) => kairos_table::read_group(&path, g, READ_BATCH_ROWS, &mut visit),
        None => kairos_table::read(&path, READ_BATCH_ROWS, &mut visit),
    };
    let rows = match (read, failed) {
        (_, Some(e)) => return Err(e),
        (r, None) => r.map_err(|e| def.error(e))?,
    };
    if group.is_none() {
        if let Some(t) = dir.manifest().table(def.name) {
            if t.rows != rows {
                return Err(Error::DamagedTable {
                    table: def.name.to_owned(),
                    path,
                    detail: format!("{rows} rows, but the manifest records {}", t.rows),
                });
            }
        }
    }
    Ok(rows)
}

/// A kairos-table error as this crate's, naming `table` (for readers of the result's
/// tables outside this crate, such as the page's column loader).
pub fn table_error(table: &str, e: TableError) -> Error {
    let table = table.to_owned();
    match e {
        TableError::Missing { path } => Error::MissingTable { table, path },
        TableError::Damaged { path, detail } => Error::DamagedTable {
            table,
            path,
            detail,
        },
        TableError::Io { path, source } => Error::Io { path, source },
        TableError::Write { path, detail } => Error::Io {
            path,
            source: std::io::Error::other(detail),
        },
    }
}
