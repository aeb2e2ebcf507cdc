//! `tables/calls.parquet`: the exactly traced function calls of a trace result
//! (`kairos collect trace`), one row per call, sorted by start time. Written only when the
//! profile has calls; a result without the file (older or sampled results) reads back
//! with none.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{UInt16Array, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Schema};
use kairos_model::{Call, Profile};

use crate::dir::{ResultDir, TABLES_DIR};
use crate::error::Result;
use crate::manifest::TableInfo;
use crate::table_io::{f, read_table, slice, write_table, TableDef};

pub const NAME: &str = "calls";

const CALLS: TableDef = TableDef {
    name: NAME,
    schema: || {
        Schema::new(vec![
            f("thread", DataType::UInt32, false),
            f("frame", DataType::UInt32, false),
            f("start_ns", DataType::UInt64, false),
            f("end_ns", DataType::UInt64, false),
            f("depth", DataType::UInt16, false),
        ])
    },
    dictionary: &["thread", "depth"],
    delta: &["start_ns"],
    uncompressed: &[],
};

/// Writes the table when the profile has calls; otherwise removes a stale file.
pub(crate) fn write(root: &Path, p: &Profile) -> Result<Option<TableInfo>> {
    if p.calls.is_empty() {
        let stale = root.join(TABLES_DIR).join(format!("{NAME}.parquet"));
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(crate::error::io_err(&stale))?;
        }
        return Ok(None);
    }
    let c = &p.calls;
    let info = write_table(root, &CALLS, c.len(), |r| {
        let s = slice(c, &r);
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.thread))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.frame))),
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.start_ns))),
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.end_ns))),
            Arc::new(UInt16Array::from_iter_values(s.iter().map(|x| x.depth))),
        ])
    })?;
    Ok(Some(info))
}

/// Reads the table into `p.calls` when the result has one. A manifest that lists the
/// table while the file is gone is an error.
pub(crate) fn read(dir: &ResultDir, p: &mut Profile) -> Result<()> {
    let root = dir.path();
    let listed = dir.manifest().table(NAME).is_some();
    if !listed
        && !root
            .join(TABLES_DIR)
            .join(format!("{NAME}.parquet"))
            .exists()
    {
        return Ok(());
    }
    read_table(dir, root, &CALLS, |c| {
        let (thread, frame, start, end, depth) = (
            c.u32("thread")?,
            c.u32("frame")?,
            c.u64("start_ns")?,
            c.u64("end_ns")?,
            c.u16("depth")?,
        );
        p.calls.reserve(c.rows);
        for i in 0..c.rows {
            p.calls.push(Call {
                thread: thread.value(i),
                frame: frame.value(i),
                start_ns: start.value(i),
                end_ns: end.value(i),
                depth: depth.value(i),
            });
        }
        Ok(())
    })
}

/// Every call's thread and frame exist and it does not end before it starts. The error
/// starts with the table name, as check_profile's do.
pub(crate) fn check(p: &Profile) -> std::result::Result<(), String> {
    for (i, c) in p.calls.iter().enumerate() {
        if c.thread as usize >= p.threads.len() {
            return Err(format!(
                "calls: call {i} refers to thread {}, but there are {}",
                c.thread,
                p.threads.len()
            ));
        }
        if c.frame as usize >= p.frames.len() {
            return Err(format!(
                "calls: call {i} refers to frame {}, but there are {}",
                c.frame,
                p.frames.len()
            ));
        }
        if c.end_ns < c.start_ns {
            return Err(format!(
                "calls: call {i} ends at {} before it starts at {}",
                c.end_ns, c.start_ns
            ));
        }
    }
    Ok(())
}
