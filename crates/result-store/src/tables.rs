//! The profile as Parquet tables under `tables/`, one per model vector, so any Parquet
//! reader (DuckDB, pandas, Polars, Spark) can query a result without Kairos. The schema
//! is documented in `docs/SCHEMA.md`; keep the two in step.
//!
//! Ids are row numbers (`id` = index in the model's vectors), stored explicitly so SQL can
//! join on them. Loss counts live in the manifest, not in a table.

use std::fs::{self, File};
use std::io::BufWriter;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Int32Array, Int64Array, PrimitiveArray, RecordBatch, StringArray, UInt16Array,
    UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use kairos_model::{Frame, Mode, Module, Profile, Stack, Thread};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

use crate::dir::{tmp_path, ResultDir, TABLES_DIR};
use crate::error::{io_err, Error, Result};
use crate::manifest::{Counts, TableInfo, FORMAT_VERSION};
use crate::sample_table;

/// Rows per Parquet row group: large enough for good compression and few footer entries,
/// small enough that a reader can skip through a long recording.
const ROW_GROUP_ROWS: usize = 1 << 20;
/// Rows per Arrow batch handed to the writer: bounds the extra memory used while writing
/// (the model's vectors are not copied whole).
const WRITE_BATCH_ROWS: usize = 1 << 17;
/// Rows per batch when reading.
const READ_BATCH_ROWS: usize = 1 << 16;

/// Table names, in the order they are written and read.
pub const TABLES: [&str; 5] = ["threads", "modules", "frames", "stacks", "samples"];

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

pub(crate) fn f(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

const THREADS: TableDef = TableDef {
    name: "threads",
    schema: || {
        Schema::new(vec![
            f("id", DataType::UInt32, false),
            f("pid", DataType::Int32, false),
            f("tid", DataType::Int32, false),
            f("name", DataType::Utf8, false),
            f("process_name", DataType::Utf8, false),
        ])
    },
    dictionary: &["name", "process_name"],
    delta: &["id"],
    uncompressed: &[],
};

const MODULES: TableDef = TableDef {
    name: "modules",
    schema: || {
        Schema::new(vec![
            f("id", DataType::UInt32, false),
            f("path", DataType::Utf8, false),
            f("build_id", DataType::Utf8, false),
        ])
    },
    dictionary: &[],
    delta: &["id"],
    uncompressed: &[],
};

const FRAMES: TableDef = TableDef {
    name: "frames",
    schema: || {
        Schema::new(vec![
            f("id", DataType::UInt32, false),
            f("address", DataType::UInt64, false),
            f("module", DataType::UInt32, true),
            f("module_offset", DataType::UInt64, false),
            f("function", DataType::Utf8, false),
            f("file", DataType::Utf8, true),
            f("line", DataType::UInt32, true),
            f("inline_depth", DataType::UInt16, false),
            f("mode", DataType::Utf8, false),
        ])
    },
    dictionary: &["module", "function", "file", "inline_depth", "mode"],
    delta: &["id"],
    uncompressed: &[],
};

const STACKS: TableDef = TableDef {
    name: "stacks",
    schema: || {
        Schema::new(vec![
            f("id", DataType::UInt32, false),
            f("parent", DataType::UInt32, true),
            f("frame", DataType::UInt32, false),
        ])
    },
    dictionary: &[],
    delta: &["id"],
    uncompressed: &[],
};


impl TableDef {
    pub(crate) fn file(&self) -> String {
        format!("{TABLES_DIR}/{}.parquet", self.name)
    }

    fn props(&self) -> WriterProperties {
        let mut b = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_dictionary_enabled(false)
            .set_created_by(format!("kairos {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("kairos.table".to_owned(), self.name.to_owned()),
                KeyValue::new(
                    "kairos.format_version".to_owned(),
                    FORMAT_VERSION.to_string(),
                ),
            ]));
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

/// Writes `profile` as the Parquet tables of `dir`, then records the tables and the
/// sample/loss counts in the manifest and saves it. Returns what was written.
///
/// Each table is written to a temporary file and renamed into place, so an existing
/// table is only replaced by a complete one. The profile's indices are checked first
/// ([`Error::InvalidProfile`]): a result that cannot be read back is worse than none.
pub fn write_profile(dir: &mut ResultDir, profile: &Profile) -> Result<Vec<TableInfo>> {
    check_profile(profile).map_err(Error::InvalidProfile)?;
    let tables_dir = dir.tables_path();
    fs::create_dir_all(&tables_dir).map_err(io_err(&tables_dir))?;
    let root = dir.path().to_owned();
    let p = profile;
    // The samples table takes as long as all the others: it is written meanwhile.
    let (small, samples) = std::thread::scope(|scope| {
        let samples = std::thread::Builder::new().name("kairos-write-samples".into()).spawn_scoped(scope, || sample_table::write(&root, p));
        let small = write_small_tables(&root, p);
        let samples = match samples {
            Ok(thread) => thread.join().unwrap_or_else(|_| Err(thread_failed(&root, "writing"))),
            Err(_) => sample_table::write(&root, p),
        };
        (small, samples)
    });
    let mut infos = small?;
    infos.push(samples?);
    infos.extend(crate::branch_table::write(&root, p)?);
    infos.extend(crate::call_table::write(&root, p)?);
    update_manifest(dir, p, &infos);
    dir.save_manifest()?;
    Ok(infos)
}

fn thread_failed(root: &Path, what: &str) -> Error {
    Error::Io { path: root.join(sample_table::SAMPLES.file()), source: std::io::Error::other(format!("the thread {what} the samples table failed")) }
}

/// Threads, modules, frames and stacks, in this order.
fn write_small_tables(root: &Path, p: &Profile) -> Result<Vec<TableInfo>> {
    let mut infos = Vec::with_capacity(TABLES.len());
    infos.push(write_table(root, &THREADS, p.threads.len(), |r| {
        let t = slice(&p.threads, &r);
        Ok(vec![
            ids(&r),
            Arc::new(Int32Array::from_iter_values(t.iter().map(|t| t.pid))),
            Arc::new(Int32Array::from_iter_values(t.iter().map(|t| t.tid))),
            Arc::new(StringArray::from_iter_values(t.iter().map(|t| &t.name))),
            Arc::new(StringArray::from_iter_values(
                t.iter().map(|t| &t.process_name),
            )),
        ])
    })?);
    infos.push(write_table(root, &MODULES, p.modules.len(), |r| {
        let m = slice(&p.modules, &r);
        Ok(vec![
            ids(&r),
            Arc::new(StringArray::from_iter_values(m.iter().map(|m| &m.path))),
            Arc::new(StringArray::from_iter_values(m.iter().map(|m| &m.build_id))),
        ])
    })?);
    infos.push(write_table(root, &FRAMES, p.frames.len(), |r| {
        let fr = slice(&p.frames, &r);
        Ok(vec![
            ids(&r),
            Arc::new(UInt64Array::from_iter_values(fr.iter().map(|f| f.address))),
            Arc::new(UInt32Array::from_iter(fr.iter().map(|f| f.module))),
            Arc::new(UInt64Array::from_iter_values(
                fr.iter().map(|f| f.module_offset),
            )),
            Arc::new(StringArray::from_iter_values(
                fr.iter().map(|f| &f.function),
            )),
            Arc::new(StringArray::from_iter(fr.iter().map(|f| f.file.as_deref()))),
            Arc::new(UInt32Array::from_iter(fr.iter().map(|f| f.line))),
            Arc::new(UInt16Array::from_iter_values(
                fr.iter().map(|f| f.inline_depth),
            )),
            Arc::new(StringArray::from_iter_values(
                fr.iter().map(|f| f.mode.as_str()),
            )),
        ])
    })?);
    infos.push(write_table(root, &STACKS, p.stacks.len(), |r| {
        let s = slice(&p.stacks, &r);
        Ok(vec![
            ids(&r),
            Arc::new(UInt32Array::from_iter(s.iter().map(|s| s.parent))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|s| s.frame))),
        ])
    })?);
    Ok(infos)
}

/// Records the tables, counts and events in the manifest (saved by the caller).
fn update_manifest(dir: &mut ResultDir, p: &Profile, infos: &[TableInfo]) {
    let m = dir.manifest_mut();
    m.tables.retain(|t| !TABLES.contains(&t.name.as_str()) && t.name != crate::branch_table::NAME && t.name != crate::call_table::NAME);
    m.tables.extend(infos.iter().cloned());
    m.branch_info = p.branch_info.clone();
    m.counts = Some(Counts::new(p.samples.len() as u64, p.losses));
    m.weight_event = p.weight_event.clone();
    if !p.events.is_empty() {
        let totals = p.event_totals();
        m.events = p
            .events
            .iter()
            .zip(totals)
            .map(|(e, t)| crate::EventSummary { name: e.name.clone(), time: e.time, samples: t.samples, weight: t.weight })
            .collect();
    }
}

/// Reads the profile back from the tables of `dir` (loss counts from the manifest).
///
/// Every table is checked: present, a readable Parquet file, the expected columns and
/// types, no nulls where the model has none, ids equal to row numbers, row counts as the
/// manifest recorded, and every index pointing at an existing row (stack parents before
/// their children, so walking a stack always ends). Any failure is
/// [`Error::MissingTable`] or [`Error::DamagedTable`] naming the table.
pub fn read_profile(dir: &ResultDir) -> Result<Profile> {
    let root = dir.path();
    let m = dir.manifest();
    let mut p = Profile {
        losses: m.losses(),
        weight_event: m.weight_event.clone(),
        events: m.events.iter().map(|e| kairos_model::EventDef { name: e.name.clone(), time: e.time }).collect(),
        ..Default::default()
    };

    // The samples table is as much work as all the others: it is read meanwhile.
    let (small, samples) = std::thread::scope(|scope| {
        let samples = std::thread::Builder::new().name("kairos-read-samples".into()).spawn_scoped(scope, || sample_table::read(dir, root));
        let small = read_small_tables(dir, root, &mut p);
        let samples = match samples {
            Ok(thread) => thread.join().unwrap_or_else(|_| Err(thread_failed(root, "reading"))),
            Err(_) => sample_table::read(dir, root),
        };
        (small, samples)
    });
    small?;
    (p.samples, p.sample_events) = samples?;
    crate::branch_table::read(dir, &mut p)?;
    crate::call_table::read(dir, &mut p)?;

    if let Err(e) = check_profile(&p) {
        let table = e.split(':').next().unwrap_or("samples").to_owned();
        let path = root.join(TABLES_DIR).join(format!("{table}.parquet"));
        return Err(Error::DamagedTable {
            table,
            path,
            detail: e,
        });
    }
    Ok(p)
}

/// Threads, modules, frames and stacks, in this order.
fn read_small_tables(dir: &ResultDir, root: &Path, p: &mut Profile) -> Result<()> {
    read_table(dir, root, &THREADS, |c| {
        let (id, pid, tid) = (c.u32("id")?, c.i32("pid")?, c.i32("tid")?);
        let (name, pname) = (c.str("name")?, c.str("process_name")?);
        c.check_ids(id, p.threads.len())?;
        for i in 0..c.rows {
            p.threads.push(Thread {
                pid: pid.value(i),
                tid: tid.value(i),
                name: name.value(i).to_owned(),
                process_name: pname.value(i).to_owned(),
            });
        }
        Ok(())
    })?;
    read_table(dir, root, &MODULES, |c| {
        let (id, path, build_id) = (c.u32("id")?, c.str("path")?, c.str("build_id")?);
        c.check_ids(id, p.modules.len())?;
        for i in 0..c.rows {
            p.modules.push(Module {
                path: path.value(i).to_owned(),
                build_id: build_id.value(i).to_owned(),
            });
        }
        Ok(())
    })?;
    read_table(dir, root, &FRAMES, |c| {
        let (id, address, module, module_offset) = (
            c.u32("id")?,
            c.u64("address")?,
            c.opt_u32("module")?,
            c.u64("module_offset")?,
        );
        let (function, file, line) = (c.str("function")?, c.opt_str("file")?, c.opt_u32("line")?);
        let (inline_depth, mode) = (c.u16("inline_depth")?, c.str("mode")?);
        c.check_ids(id, p.frames.len())?;
        for i in 0..c.rows {
            p.frames.push(Frame {
                address: address.value(i),
                module: opt(module, i),
                module_offset: module_offset.value(i),
                function: function.value(i).to_owned(),
                file: (!file.is_null(i)).then(|| file.value(i).to_owned()),
                line: opt(line, i),
                inline_depth: inline_depth.value(i),
                mode: Mode::parse(mode.value(i)),
            });
        }
        Ok(())
    })?;
    read_table(dir, root, &STACKS, |c| {
        let (id, parent, frame) = (c.u32("id")?, c.opt_u32("parent")?, c.u32("frame")?);
        c.check_ids(id, p.stacks.len())?;
        for i in 0..c.rows {
            p.stacks.push(Stack {
                parent: opt(parent, i),
                frame: frame.value(i),
            });
        }
        Ok(())
    })
}

pub(crate) fn slice<'a, T>(v: &'a [T], r: &Range<usize>) -> &'a [T] {
    v.get(r.clone()).unwrap_or(&[])
}

fn ids(r: &Range<usize>) -> ArrayRef {
    // Profiles index with u32, and check_profile has verified every length fits.
    Arc::new(UInt32Array::from_iter_values(r.clone().map(|i| i as u32)))
}

pub(crate) fn opt<T: arrow_array::ArrowPrimitiveType>(a: &PrimitiveArray<T>, i: usize) -> Option<T::Native> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// Writes one table through a temporary file, in batches of [`WRITE_BATCH_ROWS`] built
/// by `columns`.
pub(crate) fn write_table(
    root: &Path,
    def: &TableDef,
    rows: usize,
    columns: impl Fn(Range<usize>) -> Result<Vec<ArrayRef>, String>,
) -> Result<TableInfo> {
    let file = def.file();
    let path = root.join(&file);
    let tmp = tmp_path(&path);
    let fail = |detail: String| Error::Io {
        path: path.clone(),
        source: std::io::Error::other(detail),
    };

    let schema: SchemaRef = Arc::new((def.schema)());
    let out = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io_err(&tmp))?);
    let mut w = ArrowWriter::try_new(out, schema.clone(), Some(def.props()))
        .map_err(|e| fail(e.to_string()))?;
    let mut start = 0;
    while start < rows {
        let end = rows.min(start + WRITE_BATCH_ROWS);
        let batch = RecordBatch::try_new(schema.clone(), columns(start..end).map_err(&fail)?)
            .map_err(|e| fail(e.to_string()))?;
        w.write(&batch).map_err(|e| fail(e.to_string()))?;
        start = end;
    }
    let mut out = w.into_inner().map_err(|e| fail(e.to_string()))?;
    std::io::Write::flush(&mut out).map_err(io_err(&tmp))?;
    drop(out);
    let bytes = fs::metadata(&tmp).map_err(io_err(&tmp))?.len();
    fs::rename(&tmp, &path).map_err(io_err(&path))?;
    Ok(TableInfo {
        name: def.name.to_owned(),
        file,
        rows: rows as u64,
        bytes,
    })
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

    pub(crate) fn col<T: Array + 'static>(&self, name: &str, nullable: bool, want: &str) -> Result<&'a T> {
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
    fn check_ids(&self, id: &UInt32Array, first: usize) -> Result<()> {
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
    mut each: impl FnMut(&Cols<'_>) -> Result<()>,
) -> Result<()> {
    let path: PathBuf = root.join(def.file());
    let damaged = |detail: String| Error::DamagedTable {
        table: def.name.to_owned(),
        path: path.clone(),
        detail,
    };
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::MissingTable {
                table: def.name.to_owned(),
                path,
            })
        }
        Err(e) => return Err(Error::Io { path, source: e }),
    };
    // The parquet crate is not hardened against every malformed file; a panic inside it
    // must not take the whole program down, so it is turned into an error here.
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<u64> {
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| damaged(format!("not a readable Parquet file ({e})")))?
            .with_batch_size(READ_BATCH_ROWS)
            .build()
            .map_err(|e| damaged(e.to_string()))?;
        let mut rows = 0u64;
        for batch in reader {
            let batch = batch.map_err(|e| damaged(e.to_string()))?;
            let cols = Cols {
                table: def.name,
                path: &path,
                batch: &batch,
                rows: batch.num_rows(),
            };
            each(&cols)?;
            rows += batch.num_rows() as u64;
        }
        Ok(rows)
    }));
    let rows = match outcome {
        Ok(r) => r?,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("decoder panicked");
            return Err(damaged(format!("Parquet decoder failed: {msg}")));
        }
    };
    if let Some(t) = dir.manifest().table(def.name) {
        if t.rows != rows {
            return Err(damaged(format!(
                "{rows} rows, but the manifest records {}",
                t.rows
            )));
        }
    }
    Ok(())
}

/// Reads the profile and keeps the samples of one event: `name` (as perf names it, with
/// or without its `:u`-style modifiers), or the first event that has samples.
pub fn read_profile_of_event(dir: &ResultDir, name: Option<&str>) -> Result<Profile> {
    let mut p = read_profile(dir)?;
    let event = match name {
        None => p.default_event(),
        Some(n) => p.find_event(n).ok_or_else(|| Error::UnknownEvent {
            name: n.to_owned(),
            known: p.events.iter().map(|e| e.name.clone()).collect(),
        })?,
    };
    p.select_event(event);
    Ok(p)
}

/// Checks that every index of `p` points at an existing row, that stack parents come
/// before their children (so stack walks end), and that the vectors fit u32 indices.
/// The error starts with the table name and a colon.
pub(crate) fn check_profile(p: &Profile) -> Result<(), String> {
    let fits = |n: usize, t: &str| {
        if n > u32::MAX as usize {
            Err(format!("{t}: {n} rows do not fit 32-bit ids"))
        } else {
            Ok(())
        }
    };
    fits(p.threads.len(), "threads")?;
    fits(p.modules.len(), "modules")?;
    fits(p.frames.len(), "frames")?;
    fits(p.stacks.len(), "stacks")?;
    for (i, f) in p.frames.iter().enumerate() {
        if let Some(m) = f.module.filter(|&m| m as usize >= p.modules.len()) {
            return Err(format!(
                "frames: frame {i} refers to module {m}, but there are {}",
                p.modules.len()
            ));
        }
    }
    for (i, s) in p.stacks.iter().enumerate() {
        if s.frame as usize >= p.frames.len() {
            return Err(format!(
                "stacks: stack {i} refers to frame {}, but there are {}",
                s.frame,
                p.frames.len()
            ));
        }
        if let Some(parent) = s.parent.filter(|&q| q as usize >= i) {
            return Err(format!(
                "stacks: stack {i} has parent {parent}; parents must come before their children"
            ));
        }
    }
    crate::branch_table::check(p)?;
    crate::call_table::check(p)?;
    let events = p.events.len().max(1);
    if let Some((i, e)) = p.sample_events.iter().enumerate().find(|(_, &e)| e as usize >= events) {
        return Err(format!("samples: sample {i} refers to event {e}, but there are {events}"));
    }
    for (i, s) in p.samples.iter().enumerate() {
        if s.thread as usize >= p.threads.len() {
            return Err(format!(
                "samples: sample {i} refers to thread {}, but there are {}",
                s.thread,
                p.threads.len()
            ));
        }
        if let Some(st) = s.stack.filter(|&st| st as usize >= p.stacks.len()) {
            return Err(format!(
                "samples: sample {i} refers to stack {st}, but there are {}",
                p.stacks.len()
            ));
        }
    }
    Ok(())
}
