//! Large tables written and read one row group per thread.
//!
//! A table of millions of rows costs tens of milliseconds to encode or decode, on one
//! thread, while the second CPU often waits. Row groups are independent in Parquet: each
//! is encoded on its own (the writer then appends them in order) and can be read alone.

use std::fs::{self, File};
use std::io::BufWriter;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowColumnWriter};
use parquet::arrow::ArrowWriter;

use crate::{panic_message, Batch, TableError, WriteOptions};

/// [`crate::write`] with the row groups encoded by `threads` threads (the calling one
/// among them). The file is the same as one written by [`crate::write`] with the same
/// options: same row groups, same encodings, same metadata.
pub fn write_parallel(
    path: &Path,
    schema: Schema,
    rows: usize,
    opts: &WriteOptions<'_>,
    threads: usize,
    columns: impl Fn(Range<usize>) -> Result<Vec<ArrayRef>, String> + Sync,
) -> Result<u64, TableError> {
    let fail = |detail: String| TableError::Write {
        path: path.to_path_buf(),
        detail,
    };
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    }
    let tmp = crate::tmp_path(path);
    let schema: SchemaRef = Arc::new(schema);
    let out = BufWriter::with_capacity(
        1 << 20,
        File::create(&tmp).map_err(|e| fail(e.to_string()))?,
    );
    // The high-level writer sets up the file (schema, Arrow metadata, properties); its
    // low-level parts then take the row groups encoded elsewhere.
    let w = ArrowWriter::try_new(out, schema.clone(), Some(opts.props()))
        .map_err(|e| fail(e.to_string()))?;
    let (mut file, factory) = w
        .into_serialized_writer()
        .map_err(|e| fail(e.to_string()))?;
    let group_rows = opts.row_group_rows.max(1);
    let groups: Vec<Range<usize>> = (0..rows.div_ceil(group_rows))
        .map(|g| g * group_rows..rows.min((g + 1) * group_rows))
        .collect();
    let mut writers = Vec::with_capacity(groups.len());
    for g in 0..groups.len() {
        writers.push(Some(
            factory
                .create_column_writers(g)
                .map_err(|e| fail(e.to_string()))?,
        ));
    }
    let threads = threads.clamp(1, groups.len().max(1));
    let step = opts.batch_rows.max(1);
    let encode =
        |g: usize, writers: Vec<ArrowColumnWriter>| -> Result<Vec<ArrowColumnChunk>, String> {
            encode_group(&schema, groups[g].clone(), step, writers, &columns)
        };
    std::thread::scope(|scope| -> Result<(), TableError> {
        let (done, finished) = mpsc::channel();
        // Thread k encodes groups k, k + threads, ...; the calling thread is thread 0 and
        // also appends the groups to the file in order as they become ready.
        let mut mine = Vec::new();
        for (g, w) in writers.iter_mut().enumerate() {
            let Some(w) = w.take() else { continue };
            if g % threads == 0 {
                mine.push((g, w));
                continue;
            }
            let (done, encode) = (done.clone(), &encode);
            let spawned = std::thread::Builder::new()
                .name("kairos-table".into())
                .spawn_scoped(scope, move || {
                    let _ = done.send((g, run(|| encode(g, w))));
                });
            if let Err(e) = spawned {
                return Err(fail(format!("cannot start a thread: {e}")));
            }
        }
        drop(done);
        let mut ready: Vec<Option<Vec<ArrowColumnChunk>>> =
            (0..groups.len()).map(|_| None).collect();
        let mut mine = mine.into_iter();
        for g in 0..groups.len() {
            while ready[g].is_none() {
                // Encode one of our own groups, or wait for a thread's.
                let (i, chunks) = match mine.next() {
                    Some((i, w)) => (i, run(|| encode(i, w))),
                    None => finished
                        .recv()
                        .map_err(|_| fail("an encoding thread stopped".into()))?,
                };
                ready[i] = Some(chunks.map_err(&fail)?);
            }
            let mut group = file.next_row_group().map_err(|e| fail(e.to_string()))?;
            for chunk in ready[g].take().unwrap_or_default() {
                chunk
                    .append_to_row_group(&mut group)
                    .map_err(|e| fail(e.to_string()))?;
            }
            group.close().map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    })?;
    let mut out = file.into_inner().map_err(|e| fail(e.to_string()))?;
    std::io::Write::flush(&mut out).map_err(|e| fail(e.to_string()))?;
    drop(out);
    let bytes = fs::metadata(&tmp).map_err(|e| fail(e.to_string()))?.len();
    fs::rename(&tmp, path).map_err(|e| fail(e.to_string()))?;
    Ok(bytes)
}

/// A panic of the encoder (or of `f`) becomes an error rather than a lost thread.
fn run<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(format!("Parquet encoder failed: {}", panic_message(&*p))))
}

fn encode_group(
    schema: &SchemaRef,
    rows: Range<usize>,
    step: usize,
    mut writers: Vec<ArrowColumnWriter>,
    columns: &(impl Fn(Range<usize>) -> Result<Vec<ArrayRef>, String> + Sync),
) -> Result<Vec<ArrowColumnChunk>, String> {
    let mut start = rows.start;
    while start < rows.end {
        let end = rows.end.min(start + step);
        let arrays = columns(start..end)?;
        // Checks lengths and types against the schema, as the high-level writer does.
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())?;
        let mut w = writers.iter_mut();
        for (array, field) in batch.columns().iter().zip(schema.fields()) {
            for leaf in compute_leaves(field, array).map_err(|e| e.to_string())? {
                w.next()
                    .ok_or("more leaf columns than writers")?
                    .write(&leaf)
                    .map_err(|e| e.to_string())?;
            }
        }
        start = end;
    }
    writers
        .into_iter()
        .map(|w| w.close().map_err(|e| e.to_string()))
        .collect()
}

/// Rows of each row group of `path`, from its footer.
pub fn row_groups(path: &Path) -> Result<Vec<u64>, TableError> {
    let damaged = |detail: String| TableError::Damaged {
        path: path.to_path_buf(),
        detail,
    };
    let file = crate::open(path)?;
    let meta = catch_unwind(AssertUnwindSafe(|| {
        ParquetRecordBatchReaderBuilder::try_new(file).map(|b| b.metadata().clone())
    }))
    .map_err(|p| damaged(format!("Parquet decoder failed: {}", panic_message(&*p))))?
    .map_err(|e| damaged(format!("not a readable Parquet file ({e})")))?;
    Ok(meta
        .row_groups()
        .iter()
        .map(|g| u64::try_from(g.num_rows()).unwrap_or(0))
        .collect())
}

/// Reads row group `group` of `path` batch by batch into `each`; returns the rows read.
pub fn read_group(
    path: &Path,
    group: usize,
    batch_rows: usize,
    each: impl FnMut(&Batch<'_>) -> Result<(), TableError>,
) -> Result<u64, TableError> {
    crate::read_groups(path, batch_rows, Some(vec![group]), each)
}

/// Reads row groups `groups` (ascending) of `path` batch by batch into `each`, with one
/// look at the footer for all of them; returns the rows read.
pub fn read_row_groups(
    path: &Path,
    groups: Vec<usize>,
    batch_rows: usize,
    each: impl FnMut(&Batch<'_>) -> Result<(), TableError>,
) -> Result<u64, TableError> {
    if groups.is_empty() {
        return Ok(0);
    }
    crate::read_groups(path, batch_rows, Some(groups), each)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read, write};
    use arrow_array::{Array, Int64Array, UInt64Array};
    use arrow_schema::{DataType, Field};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("t", DataType::UInt64, false),
            Field::new("s", DataType::Int64, true),
        ])
    }

    fn columns(r: Range<usize>) -> Result<Vec<ArrayRef>, String> {
        Ok(vec![
            Arc::new(UInt64Array::from_iter_values(
                r.clone().map(|i| i as u64 * 7),
            )) as ArrayRef,
            Arc::new(Int64Array::from_iter(
                r.map(|i| (i % 3 != 0).then_some(i as i64 % 11)),
            )),
        ])
    }

    fn contents(path: &Path) -> Vec<(u64, Option<i64>)> {
        let mut out = Vec::new();
        read(path, 97, |b| {
            let (t, s) = (
                b.col::<UInt64Array>("t", false)?,
                b.col::<Int64Array>("s", true)?,
            );
            out.extend((0..b.rows).map(|i| (t.value(i), (!s.is_null(i)).then(|| s.value(i)))));
            Ok(())
        })
        .expect("read");
        out
    }

    #[test]
    fn same_table_as_the_one_thread_writer_and_groups_read_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = WriteOptions {
            delta: &["t", "s"],
            uncompressed: &["t"],
            batch_rows: 100,
            row_group_rows: 250,
            ..WriteOptions::default()
        };
        for rows in [0, 1, 250, 1001] {
            let (one, many) = (
                dir.path().join(format!("one{rows}.parquet")),
                dir.path().join(format!("many{rows}.parquet")),
            );
            write(&one, schema(), rows, &opts, columns).expect("one thread");
            for threads in [1, 2, 3] {
                write_parallel(&many, schema(), rows, &opts, threads, columns).expect("threads");
                assert_eq!(
                    contents(&many),
                    contents(&one),
                    "{rows} rows, {threads} threads"
                );
                let groups = row_groups(&many).expect("groups");
                assert_eq!(groups, row_groups(&one).expect("groups"));
                let mut first = 0;
                for (g, &n) in groups.iter().enumerate() {
                    let mut got = Vec::new();
                    let read = read_group(&many, g, 64, |b| {
                        got.extend(b.col::<UInt64Array>("t", false)?.values().iter().copied());
                        Ok(())
                    });
                    assert_eq!(read.expect("group"), n);
                    assert_eq!(got, (first..first + n).map(|i| i * 7).collect::<Vec<_>>());
                    first += n;
                }
                assert!(matches!(
                    read_group(&many, groups.len(), 64, |_| Ok(())),
                    Err(TableError::Damaged { .. })
                ));
            }
        }
    }

    #[test]
    fn a_failing_column_builder_is_an_error_and_leaves_no_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.parquet");
        let opts = WriteOptions {
            row_group_rows: 10,
            ..WriteOptions::default()
        };
        let r = write_parallel(&path, schema(), 100, &opts, 2, |r| {
            if r.start >= 50 {
                Err("no".into())
            } else {
                columns(r)
            }
        });
        assert!(matches!(r, Err(TableError::Write { .. })));
        assert!(!path.exists());
    }

    /// Several row groups read in one go are those groups' rows, in order.
    #[test]
    fn some_row_groups_read_in_one_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = WriteOptions {
            batch_rows: 100,
            row_group_rows: 250,
            ..WriteOptions::default()
        };
        let path = dir.path().join("t.parquet");
        write_parallel(&path, schema(), 1001, &opts, 2, columns).expect("write");
        let all = contents(&path);
        let mut got = Vec::new();
        let rows = read_row_groups(&path, vec![1, 2], 64, |b| {
            got.extend(b.col::<UInt64Array>("t", false)?.values().iter().copied());
            Ok(())
        })
        .expect("read");
        assert_eq!(rows, 500);
        let want: Vec<u64> = all[250..750].iter().map(|r| r.0).collect();
        assert_eq!(got, want);
        assert_eq!(
            read_row_groups(&path, vec![], 64, |_| Ok(())).expect("none"),
            0
        );
    }
}
