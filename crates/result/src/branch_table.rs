//! `tables/branches.parquet`: the branch records (LBR entries) of the samples, one row per
//! record, newest first within a sample. Written only for results that have branch
//! records; a result without the file (older results, or no LBR) reads back with none.
//! How they were recorded (depth, filter, cycles, losses) is `branch_info` in the manifest.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{BooleanArray, StringArray, UInt16Array, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Schema};
use kairos_model::{BranchKind, BranchRecord, Profile};

use crate::dir::{ResultDir, TABLES_DIR};
use crate::error::Result;
use crate::manifest::TableInfo;
use crate::table_io::{f, read_table, slice, write_table, TableDef};
use kairos_table::opt;

pub const NAME: &str = "branches";

const BRANCHES: TableDef = TableDef {
    name: NAME,
    schema: || {
        Schema::new(vec![
            f("sample", DataType::UInt32, false),
            f("position", DataType::UInt16, false),
            f("from_address", DataType::UInt64, false),
            f("to_address", DataType::UInt64, false),
            f("from_frame", DataType::UInt32, true),
            f("to_frame", DataType::UInt32, true),
            f("kind", DataType::Utf8, false),
            f("cycles", DataType::UInt32, true),
            f("mispredicted", DataType::Boolean, false),
            f("is_new", DataType::Boolean, false),
        ])
    },
    dictionary: &["position", "kind", "cycles"],
    delta: &["sample"],
    uncompressed: &[],
};

/// Writes the table when the profile has branch records (or says how they were
/// recorded); otherwise removes a stale file left by an earlier write.
pub(crate) fn write(root: &Path, p: &Profile) -> Result<Option<TableInfo>> {
    if p.branches.is_empty() && p.branch_info.is_none() {
        let stale = root.join(TABLES_DIR).join(format!("{NAME}.parquet"));
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(crate::error::io_err(&stale))?;
        }
        return Ok(None);
    }
    let b = &p.branches;
    let info = write_table(root, &BRANCHES, b.len(), |r| {
        let s = slice(b, &r);
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.sample))),
            Arc::new(UInt16Array::from_iter_values(s.iter().map(|x| x.position))),
            Arc::new(UInt64Array::from_iter_values(
                s.iter().map(|x| x.from_address),
            )),
            Arc::new(UInt64Array::from_iter_values(
                s.iter().map(|x| x.to_address),
            )),
            Arc::new(UInt32Array::from_iter(s.iter().map(|x| x.from_frame))),
            Arc::new(UInt32Array::from_iter(s.iter().map(|x| x.to_frame))),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| x.kind.as_str()),
            )),
            Arc::new(UInt32Array::from_iter(s.iter().map(|x| x.cycles))),
            Arc::new(BooleanArray::from_iter(
                s.iter().map(|x| Some(x.mispredicted)),
            )),
            Arc::new(BooleanArray::from_iter(s.iter().map(|x| Some(x.is_new)))),
        ])
    })?;
    Ok(Some(info))
}

/// Reads the table into `p.branches` when the result has one, and `branch_info` from the
/// manifest. A manifest that lists the table while the file is gone is an error.
pub(crate) fn read(dir: &ResultDir, p: &mut Profile) -> Result<()> {
    p.branch_info = dir.manifest().branch_info.clone();
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
    read_table(dir, root, &BRANCHES, |c| {
        let (sample, position, from, to) = (
            c.u32("sample")?,
            c.u16("position")?,
            c.u64("from_address")?,
            c.u64("to_address")?,
        );
        let (from_frame, to_frame, kind, cycles) = (
            c.opt_u32("from_frame")?,
            c.opt_u32("to_frame")?,
            c.str("kind")?,
            c.opt_u32("cycles")?,
        );
        let (mispred, is_new) = (
            c.col::<BooleanArray>("mispredicted", false, "Boolean")?,
            c.col::<BooleanArray>("is_new", false, "Boolean")?,
        );
        p.branches.reserve(c.rows);
        for i in 0..c.rows {
            p.branches.push(BranchRecord {
                sample: sample.value(i),
                position: position.value(i),
                from_address: from.value(i),
                to_address: to.value(i),
                from_frame: opt(from_frame, i),
                to_frame: opt(to_frame, i),
                kind: BranchKind::parse(kind.value(i)),
                cycles: opt(cycles, i),
                mispredicted: mispred.value(i),
                is_new: is_new.value(i),
            });
        }
        Ok(())
    })
}

/// Every record points at an existing sample and frames. Errors start with the table name.
pub(crate) fn check(p: &Profile) -> std::result::Result<(), String> {
    for (i, b) in p.branches.iter().enumerate() {
        if b.sample as usize >= p.samples.len() {
            return Err(format!(
                "{NAME}: record {i} refers to sample {}, but there are {}",
                b.sample,
                p.samples.len()
            ));
        }
        for fr in [b.from_frame, b.to_frame].into_iter().flatten() {
            if fr as usize >= p.frames.len() {
                return Err(format!(
                    "{NAME}: record {i} refers to frame {fr}, but there are {}",
                    p.frames.len()
                ));
            }
        }
    }
    Ok(())
}
