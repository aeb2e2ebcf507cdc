//! `tables/samples.parquet`, the one table of millions of rows. It is written and read on
//! a thread of its own while the other tables are (see `tables.rs`), and its encodings
//! are chosen for speed: every column is delta-encoded (time and ids are nearly sorted or
//! nearly constant, so the bit-packed deltas are small) and left uncompressed, which
//! costs no dictionary look-up or Snappy pass per value; about 5 bytes per sample.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, UInt16Array, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Schema};
use kairos_model::{Profile, Sample};

use crate::dir::ResultDir;
use crate::error::{Error, Result};
use crate::manifest::TableInfo;
use crate::table_io::{f, read_table, read_table_part, slice, Cols, TableDef};

/// Rows read by the threads into a vector filled up front at most; above it, and when the
/// row groups cannot be checked against the manifest, the table is read serially into a
/// vector reserved up to this and grown as usual.
const MAX_RESERVE: u64 = 1 << 24;

/// Rows per byte of the file at most: a delta-encoded column of equal values still costs
/// about five bytes per block of 128, so a file claiming more rows is damaged and must not
/// make us allocate for them.
const MAX_ROWS_PER_BYTE: u64 = 6;

const COLUMNS: &[&str] = &["time_ns", "thread", "cpu", "stack", "weight", "event"];

pub(crate) const SAMPLES: TableDef = TableDef {
    name: "samples",
    schema: || {
        Schema::new(vec![
            f("time_ns", DataType::UInt64, false),
            f("thread", DataType::UInt32, false),
            f("cpu", DataType::UInt32, false),
            // Int64 and nullable (null = no stack) so SQL joins see a plain signed id.
            f("stack", DataType::Int64, true),
            f("weight", DataType::UInt64, false),
            // Index into the manifest's `events`; absent in results of one event.
            f("event", DataType::UInt16, false),
        ])
    },
    dictionary: &[],
    delta: COLUMNS,
    uncompressed: COLUMNS,
};

/// Rows per row group of this table: small enough that a recording of a million samples
/// has several, which two threads write and read side by side.
const GROUP_ROWS: usize = 1 << 18;
/// Threads that encode and decode the row groups.
const THREADS: usize = 2;

pub(crate) fn write(root: &Path, p: &Profile) -> Result<TableInfo> {
    let rows = p.samples.len();
    let path = root.join(SAMPLES.file());
    let bytes = kairos_table::write_parallel(
        &path,
        (SAMPLES.schema)(),
        rows,
        &SAMPLES.options(GROUP_ROWS),
        THREADS,
        |r| {
            let s = slice(&p.samples, &r);
            Ok(vec![
                Arc::new(UInt64Array::from_iter_values(s.iter().map(|s| s.time_ns))) as ArrayRef,
                Arc::new(UInt32Array::from_iter_values(s.iter().map(|s| s.thread))),
                Arc::new(UInt32Array::from_iter_values(s.iter().map(|s| s.cpu))),
                Arc::new(Int64Array::from_iter(
                    s.iter().map(|s| s.stack.map(i64::from)),
                )),
                Arc::new(UInt64Array::from_iter_values(s.iter().map(|s| s.weight))),
                Arc::new(UInt16Array::from_iter_values(
                    r.clone().map(|i| p.event_of(i)),
                )),
            ])
        },
    )
    .map_err(|e| SAMPLES.error(e))?;
    Ok(SAMPLES.info(rows, bytes))
}

/// The samples and the event of each (empty when every sample is of event 0).
pub(crate) fn read(dir: &ResultDir, root: &Path) -> Result<(Vec<Sample>, Vec<u16>)> {
    let (samples, mut events) = match read_parallel(dir, root)? {
        Some(read) => read,
        None => read_serial(dir, root)?,
    };
    if events.iter().any(|&e| e != 0) {
        events.resize(samples.len(), 0);
    } else {
        // Freed rather than cleared: two bytes a sample of a large result.
        events = Vec::new();
    }
    Ok((samples, events))
}

/// The row groups read by [`THREADS`] threads into their parts of one vector. `None`
/// (read it in one go instead) when the manifest does not say how many rows to expect or
/// the file's row groups do not add up to that.
fn read_parallel(dir: &ResultDir, root: &Path) -> Result<Option<(Vec<Sample>, Vec<u16>)>> {
    let Some(expected) = dir.manifest().table(SAMPLES.name).map(|t| t.rows) else {
        return Ok(None);
    };
    let path = root.join(SAMPLES.file());
    // Above MAX_RESERVE the serial read is faster: filling the whole vector before the
    // threads start costs a pass of page faults on one core (measured at 100M rows),
    // whereas a growing vector is moved by remapping, not copied. The file's size bounds
    // the claim too, so a damaged manifest cannot make us allocate for absurd counts.
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    if expected > MAX_RESERVE || expected > bytes.saturating_mul(MAX_ROWS_PER_BYTE) {
        return Ok(None);
    }
    let groups = kairos_table::row_groups(&path).map_err(|e| SAMPLES.error(e))?;
    if groups.len() < 2 || groups.iter().try_fold(0u64, |a, &n| a.checked_add(n)) != Some(expected)
    {
        return Ok(None);
    }
    let n = expected as usize;
    // A size the machine cannot hold is said, not a stop.
    let mut samples: Vec<Sample> = Vec::new();
    let mut events: Vec<u16> = Vec::new();
    if samples.try_reserve_exact(n).is_err() || events.try_reserve_exact(n).is_err() {
        return Err(SAMPLES.error(kairos_table::TableError::Damaged {
            path,
            detail: format!("it claims {n} samples, more than this machine can hold in memory"),
        }));
    }
    samples.resize(n, Sample::default());
    events.resize(n, 0);
    let mut parts: Vec<Part<'_>> = (0..THREADS).map(|_| Vec::new()).collect();
    let (mut s_rest, mut e_rest) = (samples.as_mut_slice(), events.as_mut_slice());
    for (g, &rows) in groups.iter().enumerate() {
        let (s, s_after) = std::mem::take(&mut s_rest).split_at_mut(rows as usize);
        let (e, e_after) = std::mem::take(&mut e_rest).split_at_mut(rows as usize);
        (s_rest, e_rest) = (s_after, e_after);
        parts[g % THREADS].push((g, s, e));
    }
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let mut parts = parts.into_iter();
        let mine = parts.next().unwrap_or_default();
        let others: Vec<_> = parts
            .map(|part| {
                std::thread::Builder::new()
                    .name("kairos-read-samples".into())
                    .spawn_scoped(scope, move || read_groups(dir, root, part))
            })
            .collect();
        let mut results = vec![read_groups(dir, root, mine)];
        for t in others {
            results.push(match t {
                Ok(t) => t
                    .join()
                    .unwrap_or_else(|_| Err(thread_failed(root, "reading"))),
                Err(_) => Err(thread_failed(root, "reading")),
            });
        }
        results
    });
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(Some((samples, events)))
}

/// Row groups of one thread: each with its part of the samples and of their events.
type Part<'a> = Vec<(usize, &'a mut [Sample], &'a mut [u16])>;

/// Reads each row group into its slices, which must hold exactly its rows.
fn read_groups(dir: &ResultDir, root: &Path, part: Part<'_>) -> Result<()> {
    for (g, samples, events) in part {
        let mut at = 0usize;
        let rows = read_table_part(dir, root, &SAMPLES, Some(g), |c| {
            let end = at + c.rows;
            let (Some(s), Some(e)) = (samples.get_mut(at..end), events.get_mut(at..end)) else {
                return Err(c.damaged(format!("row group {g} has more rows than its footer says")));
            };
            fill(c, s, e)?;
            at = end;
            Ok(())
        })?;
        if rows as usize != samples.len() {
            return Err(SAMPLES.error(kairos_table::TableError::Damaged {
                path: root.join(SAMPLES.file()),
                detail: format!(
                    "row group {g} has {rows} rows, but its footer says {}",
                    samples.len()
                ),
            }));
        }
    }
    Ok(())
}

/// One batch into `samples` and `events` (of the batch's length).
fn fill(c: &Cols<'_>, samples: &mut [Sample], events: &mut [u16]) -> Result<()> {
    let (time, thread, cpu, weight) = (
        c.u64("time_ns")?,
        c.u32("thread")?,
        c.u32("cpu")?,
        c.u64("weight")?,
    );
    let stack = c.opt_i64("stack")?;
    // Slices rather than value(i): this is the one table that is millions of rows.
    let (time, thread, cpu, weight, stack_vals) = (
        time.values(),
        thread.values(),
        cpu.values(),
        weight.values(),
        stack.values(),
    );
    // Results written before events were kept apart have no event column: all event 0.
    if c.has("event") {
        events.copy_from_slice(c.u16("event")?.values());
    }
    let nulls = stack.nulls().filter(|n| n.null_count() > 0);
    for (i, out) in samples.iter_mut().enumerate() {
        let st = if nulls.is_some_and(|n| n.is_null(i)) {
            None
        } else {
            let v = stack_vals[i];
            Some(
                u32::try_from(v)
                    .map_err(|_| c.damaged(format!("stack {v} is not a valid stack id")))?,
            )
        };
        *out = Sample {
            time_ns: time[i],
            thread: thread[i],
            cpu: cpu[i],
            stack: st,
            weight: weight[i],
        };
    }
    Ok(())
}

/// The whole table in one go, on this thread.
fn read_serial(dir: &ResultDir, root: &Path) -> Result<(Vec<Sample>, Vec<u16>)> {
    // One allocation of the right size: the manifest's count (checked after reading),
    // bounded so that a damaged manifest cannot ask for an absurd amount.
    let expected = dir
        .manifest()
        .table(SAMPLES.name)
        .map_or(0, |t| t.rows)
        .min(MAX_RESERVE) as usize;
    let mut samples: Vec<Sample> = Vec::with_capacity(expected);
    let mut events: Vec<u16> = Vec::with_capacity(expected);
    read_table(dir, root, &SAMPLES, |c| {
        let start = samples.len();
        samples.resize(start + c.rows, Sample::default());
        events.resize(start + c.rows, 0);
        fill(c, &mut samples[start..], &mut events[start..])
    })?;
    Ok((samples, events))
}

/// The error of a thread writing or reading the samples table that did not come back: the
/// samples table's file, and what the thread was doing.
pub(crate) fn thread_failed(root: &Path, what: &str) -> Error {
    Error::Io {
        path: root.join(SAMPLES.file()),
        source: std::io::Error::other(format!("the thread {what} the samples table failed")),
    }
}
