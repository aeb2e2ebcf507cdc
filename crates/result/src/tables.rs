//! The profile as Parquet tables under `tables/`, one per model vector, so any Parquet
//! reader (DuckDB, pandas, Polars, Spark) can query a result without Kairos. The schema
//! is documented in `docs/SCHEMA.md`; keep the two in step.
//!
//! Ids are row numbers (`id` = index in the model's vectors), stored explicitly so SQL can
//! join on them. Loss counts live in the manifest, not in a table.

use std::fs;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Int32Array, StringArray, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Schema};
use kairos_model::{Frame, Mode, Module, Profile, Stack, Thread};

use crate::dir::{ResultDir, TABLES_DIR};
use crate::error::{io_err, Error, Result};
use crate::manifest::{Counts, TableInfo};
use crate::sample_table::{self, thread_failed};
use crate::table_io::{f, read_table, slice, write_table, TableDef};
use kairos_table::opt;

/// Table names, in the order they are written and read.
pub const TABLES: [&str; 5] = ["threads", "modules", "frames", "stacks", "samples"];

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

/// Writes `profile` as the Parquet tables of `dir`, then records the tables and the
/// sample/loss counts in the manifest and saves it. Returns what was written.
///
/// Each table is written to a temporary file and renamed into place, so an existing
/// table is only replaced by a complete one. The profile's indices are checked first
/// ([`Error::InvalidProfile`]): a result that cannot be read back is worse than none.
pub fn write_profile(dir: &mut ResultDir, profile: &Profile) -> Result<Vec<TableInfo>> {
    check_profile(profile).map_err(Error::InvalidProfile)?;
    // Figures derived from the old tables must not outlive them.
    dir.clear_derived()
        .map_err(io_err(dir.path().join(crate::DERIVED_DIR)))?;
    let tables_dir = dir.tables_path();
    fs::create_dir_all(&tables_dir).map_err(io_err(&tables_dir))?;
    let root = dir.path().to_owned();
    let p = profile;
    // The samples table takes as long as all the others: it is written meanwhile.
    let (small, samples) = std::thread::scope(|scope| {
        let samples = std::thread::Builder::new()
            .name("kairos-write-samples".into())
            .spawn_scoped(scope, || sample_table::write(&root, p));
        let small = write_small_tables(&root, p);
        let samples = match samples {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(thread_failed(&root, "writing"))),
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
    m.tables.retain(|t| {
        !TABLES.contains(&t.name.as_str())
            && t.name != crate::branch_table::NAME
            && t.name != crate::call_table::NAME
    });
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
            .map(|(e, t)| crate::EventSummary {
                name: e.name.clone(),
                time: e.time,
                samples: t.samples,
                weight: t.weight,
            })
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
    let (mut p, samples) = read_tables(dir, || sample_table::read(dir, root))?;
    (p.samples, p.sample_events) = samples;
    checked(dir, p)
}

/// [`read_profile`] with the samples table left to `samples`, which reads it its own way
/// (into columns, say) on a thread of its own while the other tables are read. The
/// profile's samples stay empty, so its checks cannot see them: the caller checks what it
/// keeps. Branch records refer to samples, so a result with them fails the checks here;
/// read it with [`read_profile`].
pub fn read_profile_except_samples<S: Send>(
    dir: &ResultDir,
    samples: impl Fn() -> Result<S> + Sync,
) -> Result<(Profile, S)> {
    let (p, s) = read_tables(dir, samples)?;
    Ok((checked(dir, p)?, s))
}

/// Every table: the samples by `samples` on a thread of its own, the others meanwhile.
fn read_tables<S: Send>(
    dir: &ResultDir,
    samples: impl Fn() -> Result<S> + Sync,
) -> Result<(Profile, S)> {
    let root = dir.path();
    let m = dir.manifest();
    let mut p = Profile {
        losses: m.losses(),
        weight_event: m.weight_event.clone(),
        events: m
            .events
            .iter()
            .map(|e| kairos_model::EventDef {
                name: e.name.clone(),
                time: e.time,
            })
            .collect(),
        ..Default::default()
    };

    // The samples table is as much work as all the others: it is read meanwhile.
    let (small, samples) = std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("kairos-read-samples".into())
            .spawn_scoped(scope, &samples);
        let small = read_small_tables(dir, root, &mut p);
        let samples = match thread {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|_| Err(thread_failed(root, "reading"))),
            Err(_) => samples(),
        };
        (small, samples)
    });
    small?;
    let samples = samples?;
    crate::branch_table::read(dir, &mut p)?;
    crate::call_table::read(dir, &mut p)?;
    Ok((p, samples))
}

/// `p` when it passes [`check_profile`], else the error naming the table at fault.
fn checked(dir: &ResultDir, p: Profile) -> Result<Profile> {
    if let Err(e) = check_profile(&p) {
        let table = e.split(':').next().unwrap_or("samples").to_owned();
        let path = dir.path().join(TABLES_DIR).join(format!("{table}.parquet"));
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

fn ids(r: &Range<usize>) -> ArrayRef {
    // Profiles index with u32, and check_profile has verified every length fits.
    Arc::new(UInt32Array::from_iter_values(r.clone().map(|i| i as u32)))
}

/// Reads the profile and keeps the samples of one event: `name` (as perf names it, with
/// or without its `:u`-style modifiers; a hybrid CPU's `cycles` is both core types',
/// `cpu_core/cycles/` one's), or the default (see [`Profile::default_events`]).
pub fn read_profile_of_event(dir: &ResultDir, name: Option<&str>) -> Result<Profile> {
    let mut p = read_profile(dir)?;
    let event = match name {
        None => p.default_events().0,
        Some(n) => p.find_events(n).ok_or_else(|| Error::UnknownEvent {
            name: n.to_owned(),
            known: p.event_names(),
        })?,
    };
    p.select(&event);
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
    if let Some((i, e)) = p
        .sample_events
        .iter()
        .enumerate()
        .find(|(_, &e)| e as usize >= events)
    {
        return Err(format!(
            "samples: sample {i} refers to event {e}, but there are {events}"
        ));
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
