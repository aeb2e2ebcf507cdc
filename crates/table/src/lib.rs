//! One writer and one reader of Kairos' Parquet tables; see the README.

mod parallel;

pub use parallel::{read_group, read_row_groups, row_groups, write_parallel};

use std::fs::{self, File};
use std::io::BufWriter;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, PrimitiveArray, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

/// Why a table could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{} is missing", path.display())]
    Missing { path: PathBuf },
    #[error("cannot write {}: {detail}", path.display())]
    Write { path: PathBuf, detail: String },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is damaged: {detail}", path.display())]
    Damaged { path: PathBuf, detail: String },
}

/// How a table is written.
#[derive(Debug, Clone)]
pub struct WriteOptions<'a> {
    /// Columns whose values repeat (ids, kinds, names): dictionary-encoded.
    pub dictionary: &'a [&'a str],
    /// Sorted integer columns (times, ids): delta-encoded.
    pub delta: &'a [&'a str],
    /// Columns left uncompressed: delta-encoded ones whose bit-packed deltas Snappy would
    /// not shrink, so compressing them only costs time.
    pub uncompressed: &'a [&'a str],
    /// Rows per batch handed to the writer: bounds the extra memory while writing.
    pub batch_rows: usize,
    pub row_group_rows: usize,
    /// Written as Parquet key/value metadata (e.g. the table's name and format version).
    pub metadata: Vec<(String, String)>,
    pub created_by: String,
}

impl Default for WriteOptions<'_> {
    fn default() -> Self {
        WriteOptions {
            dictionary: &[],
            delta: &[],
            uncompressed: &[],
            batch_rows: 1 << 17,
            row_group_rows: 1 << 20,
            metadata: Vec::new(),
            created_by: "kairos".into(),
        }
    }
}

impl WriteOptions<'_> {
    fn props(&self) -> WriterProperties {
        let mut b = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(self.row_group_rows))
            .set_dictionary_enabled(false)
            // Per column chunk: enough for readers to skip row groups; page statistics cost
            // a fifth of a write.
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_created_by(self.created_by.clone());
        if !self.metadata.is_empty() {
            b = b.set_key_value_metadata(Some(
                self.metadata
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                    .collect(),
            ));
        }
        for c in self.dictionary {
            b = b.set_column_dictionary_enabled(ColumnPath::from(*c), true);
        }
        for c in self.delta {
            b = b.set_column_encoding(ColumnPath::from(*c), Encoding::DELTA_BINARY_PACKED);
        }
        for c in self.uncompressed {
            b = b.set_column_compression(ColumnPath::from(*c), Compression::UNCOMPRESSED);
        }
        b.build()
    }
}

/// Writes `rows` rows to `path` in batches built by `columns`; returns the file's size.
pub fn write(
    path: &Path,
    schema: Schema,
    rows: usize,
    opts: &WriteOptions<'_>,
    columns: impl Fn(Range<usize>) -> Result<Vec<ArrayRef>, String>,
) -> Result<u64, TableError> {
    let fail = |detail: String| TableError::Write {
        path: path.to_path_buf(),
        detail,
    };
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    }
    let tmp = tmp_path(path);
    let schema: SchemaRef = Arc::new(schema);
    let out = BufWriter::with_capacity(
        1 << 20,
        File::create(&tmp).map_err(|e| fail(e.to_string()))?,
    );
    let mut w = ArrowWriter::try_new(out, schema.clone(), Some(opts.props()))
        .map_err(|e| fail(e.to_string()))?;
    let step = opts.batch_rows.max(1);
    let mut start = 0;
    while start < rows {
        let end = rows.min(start + step);
        let batch = RecordBatch::try_new(schema.clone(), columns(start..end).map_err(&fail)?)
            .map_err(|e| fail(e.to_string()))?;
        w.write(&batch).map_err(|e| fail(e.to_string()))?;
        start = end;
    }
    let mut out = w.into_inner().map_err(|e| fail(e.to_string()))?;
    std::io::Write::flush(&mut out).map_err(|e| fail(e.to_string()))?;
    drop(out);
    let bytes = fs::metadata(&tmp).map_err(|e| fail(e.to_string()))?.len();
    fs::rename(&tmp, path).map_err(|e| fail(e.to_string()))?;
    Ok(bytes)
}

/// One batch being read, with its path for errors.
pub struct Batch<'a> {
    pub path: &'a Path,
    pub batch: &'a RecordBatch,
    pub rows: usize,
}

impl<'a> Batch<'a> {
    pub fn damaged(&self, detail: impl Into<String>) -> TableError {
        TableError::Damaged {
            path: self.path.to_path_buf(),
            detail: detail.into(),
        }
    }

    /// Whether the batch has column `name` (columns added later are optional).
    pub fn has(&self, name: &str) -> bool {
        self.batch.column_by_name(name).is_some()
    }

    /// Column `name` as array type `T`; `nullable` false refuses nulls.
    pub fn col<T: Array + 'static>(&self, name: &str, nullable: bool) -> Result<&'a T, TableError> {
        let c = self
            .batch
            .column_by_name(name)
            .ok_or_else(|| self.damaged(format!("no column {name}")))?;
        let a = c
            .as_any()
            .downcast_ref::<T>()
            .ok_or_else(|| self.damaged(format!("column {name} has type {}", c.data_type())))?;
        if !nullable && a.null_count() > 0 {
            return Err(self.damaged(format!("column {name} has nulls")));
        }
        Ok(a)
    }
}

/// The value of row `i`, None when null.
pub fn opt<T: arrow_array::ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    i: usize,
) -> Option<T::Native> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// Reads `path` batch by batch into `each`; returns the rows read.
pub fn read(
    path: &Path,
    batch_rows: usize,
    each: impl FnMut(&Batch<'_>) -> Result<(), TableError>,
) -> Result<u64, TableError> {
    read_groups(path, batch_rows, None, each)
}

/// Where a table is written before it is renamed into place, so that an existing table is
/// only ever replaced by a complete one.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    PathBuf::from(tmp)
}

fn open(path: &Path) -> Result<File, TableError> {
    File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => TableError::Missing {
            path: path.to_path_buf(),
        },
        _ => TableError::Io {
            path: path.to_path_buf(),
            source: e,
        },
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("it panicked")
}

/// [`read`] of some row groups only (all when `groups` is `None`).
fn read_groups(
    path: &Path,
    batch_rows: usize,
    groups: Option<Vec<usize>>,
    mut each: impl FnMut(&Batch<'_>) -> Result<(), TableError>,
) -> Result<u64, TableError> {
    let damaged = |detail: String| TableError::Damaged {
        path: path.to_path_buf(),
        detail,
    };
    let file = open(path)?;
    // The parquet crate is not hardened against every malformed file: a panic inside it
    // must not take the program down.
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<u64, TableError> {
        let mut builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| damaged(format!("not a readable Parquet file ({e})")))?
            .with_batch_size(batch_rows.max(1));
        if let Some(groups) = groups {
            let n = builder.metadata().num_row_groups();
            if let Some(g) = groups.iter().find(|&&g| g >= n) {
                return Err(damaged(format!("no row group {g}; the file has {n}")));
            }
            builder = builder.with_row_groups(groups);
        }
        let reader = builder.build().map_err(|e| damaged(e.to_string()))?;
        let mut rows = 0u64;
        for batch in reader {
            let batch = batch.map_err(|e| damaged(e.to_string()))?;
            each(&Batch {
                path,
                batch: &batch,
                rows: batch.num_rows(),
            })?;
            rows += batch.num_rows() as u64;
        }
        Ok(rows)
    }));
    outcome.unwrap_or_else(|panic| {
        Err(damaged(format!(
            "Parquet decoder failed: {}",
            panic_message(&*panic)
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{StringArray, UInt64Array};
    use arrow_schema::{DataType, Field};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("t", DataType::UInt64, false),
            Field::new("s", DataType::Utf8, true),
        ])
    }

    #[test]
    fn round_trip_in_batches_and_damage_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tables/x.parquet");
        let n = 1000;
        let opts = WriteOptions {
            dictionary: &["s"],
            delta: &["t"],
            batch_rows: 64,
            ..WriteOptions::default()
        };
        let bytes = write(&path, schema(), n, &opts, |r| {
            Ok(vec![
                Arc::new(UInt64Array::from_iter_values(
                    r.clone().map(|i| i as u64 * 3),
                )) as ArrayRef,
                Arc::new(StringArray::from_iter(
                    r.map(|i| (i % 2 == 0).then(|| format!("s{}", i % 5))),
                )),
            ])
        })
        .expect("written");
        assert!(bytes > 0 && !dir.path().join("tables/x.parquet.tmp").exists());
        let (mut sum, mut nulls) = (0u64, 0usize);
        let rows = read(&path, 100, |b| {
            let t = b.col::<UInt64Array>("t", false)?;
            let s = b.col::<StringArray>("s", true)?;
            sum += t.values().iter().sum::<u64>();
            nulls += s.null_count();
            assert!(
                b.col::<UInt64Array>("s", true).is_err(),
                "wrong type is refused"
            );
            assert!(!b.has("nope"));
            Ok(())
        })
        .expect("read");
        assert_eq!(
            (rows, sum, nulls),
            (n as u64, 3 * (n as u64 - 1) * n as u64 / 2, n / 2)
        );
        std::fs::write(&path, b"PAR1 not really").expect("junk");
        assert!(matches!(
            read(&path, 100, |_| Ok(())),
            Err(TableError::Damaged { .. })
        ));
        assert!(matches!(
            read(&dir.path().join("none.parquet"), 100, |_| Ok(())),
            Err(TableError::Missing { .. })
        ));
    }
}
