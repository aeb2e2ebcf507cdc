//! `tables/samples.parquet`, the one table of millions of rows. It is written and read on
//! a thread of its own while the other tables are (see `tables.rs`), and its encodings
//! are chosen for speed: every column is delta-encoded (time and ids are nearly sorted or
//! nearly constant, so the bit-packed deltas are small) and left uncompressed, which
//! costs no dictionary look-up or Snappy pass per value; about 5 bytes per sample.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, Int64Array, UInt16Array, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Schema};
use kairos_model::{Profile, Sample};

use crate::dir::ResultDir;
use crate::error::Result;
use crate::manifest::TableInfo;
use crate::tables::{f, read_table, slice, write_table, TableDef};

/// Rows reserved up front at most (the vector grows past it as usual).
const MAX_RESERVE: u64 = 1 << 24;

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

pub(crate) fn write(root: &Path, p: &Profile) -> Result<TableInfo> {
    write_table(root, &SAMPLES, p.samples.len(), |r| {
        let s = slice(&p.samples, &r);
        Ok(vec![
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|s| s.time_ns))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|s| s.thread))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|s| s.cpu))),
            Arc::new(Int64Array::from_iter(s.iter().map(|s| s.stack.map(i64::from)))),
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|s| s.weight))),
            Arc::new(UInt16Array::from_iter_values(r.clone().map(|i| p.event_of(i)))),
        ])
    })
}

/// The samples and the event of each (empty when every sample is of event 0).
pub(crate) fn read(dir: &ResultDir, root: &Path) -> Result<(Vec<Sample>, Vec<u16>)> {
    // One allocation of the right size: the manifest's count (checked after reading),
    // bounded so that a damaged manifest cannot ask for an absurd amount.
    let expected = dir.manifest().table(SAMPLES.name).map_or(0, |t| t.rows).min(MAX_RESERVE) as usize;
    let mut samples: Vec<Sample> = Vec::with_capacity(expected);
    let mut events: Vec<u16> = Vec::new();
    read_table(dir, root, &SAMPLES, |c| {
        let (time, thread, cpu, weight) = (c.u64("time_ns")?, c.u32("thread")?, c.u32("cpu")?, c.u64("weight")?);
        let stack = c.opt_i64("stack")?;
        samples.reserve(c.rows);
        // Slices rather than value(i): this is the one table that is millions of rows.
        let (time, thread, cpu, weight) = (time.values(), thread.values(), cpu.values(), weight.values());
        let stack_vals = stack.values();
        // Results written before events were kept apart have no event column: all event 0.
        if c.has("event") {
            events.extend_from_slice(c.u16("event")?.values());
        }
        let nulls = stack.nulls().filter(|n| n.null_count() > 0);
        for i in 0..c.rows {
            let st = if nulls.is_some_and(|n| n.is_null(i)) {
                None
            } else {
                let v = stack_vals[i];
                Some(u32::try_from(v).map_err(|_| c.damaged(format!("stack {v} is not a valid stack id")))?)
            };
            samples.push(Sample { time_ns: time[i], thread: thread[i], cpu: cpu[i], stack: st, weight: weight[i] });
        }
        Ok(())
    })?;
    if events.iter().any(|&e| e != 0) {
        events.resize(samples.len(), 0);
    } else {
        events.clear();
    }
    Ok((samples, events))
}
