//! `tables/kernel_entries.parquet` (schema in docs/SCHEMA.md): written at collection or
//! import time, read back by the reports.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Int64Array, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use kairos_table::{opt, Batch, WriteOptions};

use crate::{Cause, Entry, Error};

pub const KERNEL_ENTRIES: &str = "kernel_entries";

fn schema() -> Schema {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Schema::new(vec![
        f("time_ns", DataType::UInt64, false),
        f("duration_ns", DataType::UInt64, true),
        f("cause", DataType::Utf8, false),
        f("major", DataType::Boolean, false),
        f("completed", DataType::Boolean, false),
        f("thread", DataType::UInt32, false),
        f("cpu", DataType::UInt32, false),
        f("ip", DataType::UInt64, false),
        f("stack", DataType::UInt32, true),
        f("addr", DataType::UInt64, true),
        f("object", DataType::Utf8, true),
        f("object_start", DataType::UInt64, false),
        f("object_end", DataType::UInt64, false),
        f("detail", DataType::Int64, true),
    ])
}

/// Writes the table into `tables_dir`; returns (name, file relative to the result, rows, bytes).
pub fn write(tables_dir: &Path, rows: &[Entry]) -> Result<(String, String, u64, u64), Error> {
    let path = tables_dir.join(format!("{KERNEL_ENTRIES}.parquet"));
    let opts = WriteOptions {
        dictionary: &["cause", "thread", "cpu", "object"],
        created_by: format!("kairos {}", env!("CARGO_PKG_VERSION")),
        ..WriteOptions::default()
    };
    let bytes = kairos_table::write(&path, schema(), rows.len(), &opts, |r| {
        let rows = &rows[r];
        Ok(vec![
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.time_ns),
            )) as ArrayRef,
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.duration_ns))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.cause.as_str()),
            )),
            Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.major)))),
            Arc::new(BooleanArray::from_iter(
                rows.iter().map(|r| Some(r.completed)),
            )),
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.thread))),
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.cpu))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.ip))),
            Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.stack))),
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.addr))),
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.object.as_deref()),
            )),
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.object_start),
            )),
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|r| r.object_end),
            )),
            Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.detail))),
        ])
    })?;
    Ok((
        KERNEL_ENTRIES.to_string(),
        format!("tables/{KERNEL_ENTRIES}.parquet"),
        rows.len() as u64,
        bytes,
    ))
}

/// Column `name` of batch `b`: nulls allowed, the schema says where they may be.
fn col<'a, T: Array + 'static>(
    b: &Batch<'a>,
    name: &str,
) -> Result<&'a T, kairos_table::TableError> {
    b.col::<T>(name, true)
}

/// Reads the table from `tables_dir`.
pub fn read(tables_dir: &Path) -> Result<Vec<Entry>, Error> {
    let p = tables_dir.join(format!("{KERNEL_ENTRIES}.parquet"));
    let mut out = Vec::new();
    kairos_table::read(&p, 1 << 16, |b| {
        let time = col::<UInt64Array>(b, "time_ns")?;
        let dur = col::<UInt64Array>(b, "duration_ns")?;
        let cause = col::<StringArray>(b, "cause")?;
        let major = col::<BooleanArray>(b, "major")?;
        let completed = col::<BooleanArray>(b, "completed")?;
        let thread = col::<UInt32Array>(b, "thread")?;
        let cpu = col::<UInt32Array>(b, "cpu")?;
        let ip = col::<UInt64Array>(b, "ip")?;
        let stack = col::<UInt32Array>(b, "stack")?;
        let addr = col::<UInt64Array>(b, "addr")?;
        let object = col::<StringArray>(b, "object")?;
        let ostart = col::<UInt64Array>(b, "object_start")?;
        let oend = col::<UInt64Array>(b, "object_end")?;
        let detail = col::<Int64Array>(b, "detail")?;
        for i in 0..b.rows {
            let c = Cause::parse(cause.value(i)).ok_or_else(|| {
                b.damaged(format!("unknown cause '{}' in row {i}", cause.value(i)))
            })?;
            out.push(Entry {
                time_ns: time.value(i),
                duration_ns: opt(dur, i),
                cause: c,
                major: !major.is_null(i) && major.value(i),
                completed: !completed.is_null(i) && completed.value(i),
                thread: thread.value(i),
                cpu: cpu.value(i),
                ip: ip.value(i),
                stack: opt(stack, i),
                addr: opt(addr, i),
                object: (!object.is_null(i)).then(|| object.value(i).to_string()),
                object_start: ostart.value(i),
                object_end: oend.value(i),
                detail: opt(detail, i),
            });
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = Entry {
            time_ns: 5,
            duration_ns: Some(3),
            cause: Cause::UserFault,
            major: false,
            completed: true,
            thread: 0,
            cpu: 1,
            ip: 0x401000,
            stack: Some(2),
            addr: Some(0x7000),
            object: Some("[heap]".into()),
            object_start: 0x6000,
            object_end: 0x9000,
            detail: None,
        };
        write(d.path(), std::slice::from_ref(&e)).expect("write");
        assert_eq!(read(d.path()).expect("read"), vec![e]);
    }
}
