//! `tables/kernel_entries.parquet` (schema in docs/SCHEMA.md): written at collection or
//! import time, read back by the reports.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

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
    let werr = |d: String| Error::Write { path: path.display().to_string(), detail: d };
    std::fs::create_dir_all(tables_dir).map_err(|e| werr(e.to_string()))?;
    let file = File::create(&path).map_err(|e| werr(e.to_string()))?;
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let schema = Arc::new(schema());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.time_ns))),
        Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.duration_ns))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.cause.as_str()))),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.major)))),
        Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(r.completed)))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.thread))),
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.cpu))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.ip))),
        Arc::new(UInt32Array::from_iter(rows.iter().map(|r| r.stack))),
        Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.addr))),
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.object.as_deref()))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.object_start))),
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.object_end))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.detail))),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|e| werr(e.to_string()))?;
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| werr(e.to_string()))?;
    w.write(&batch).map_err(|e| werr(e.to_string()))?;
    w.close().map_err(|e| werr(e.to_string()))?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok((KERNEL_ENTRIES.to_string(), format!("tables/{KERNEL_ENTRIES}.parquet"), rows.len() as u64, bytes))
}

fn col<'a, T: 'static>(b: &'a RecordBatch, name: &str, path: &Path) -> Result<&'a T, Error> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| Error::Damaged { path: path.display().to_string(), detail: format!("column {name} is missing or of the wrong type") })
}

fn opt<T: arrow_array::ArrowPrimitiveType>(a: &arrow_array::PrimitiveArray<T>, i: usize) -> Option<T::Native> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// Reads the table from `tables_dir`.
pub fn read(tables_dir: &Path) -> Result<Vec<Entry>, Error> {
    let p = &tables_dir.join(format!("{KERNEL_ENTRIES}.parquet"));
    let damaged = |d: String| Error::Damaged { path: p.display().to_string(), detail: d };
    let file = File::open(p).map_err(|e| Error::Io { path: p.display().to_string(), source: e })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file).and_then(|b| b.build()).map_err(|e| damaged(e.to_string()))?;
    let mut out = Vec::new();
    for b in reader {
        let b = b.map_err(|e| damaged(e.to_string()))?;
        let time = col::<UInt64Array>(&b, "time_ns", p)?;
        let dur = col::<UInt64Array>(&b, "duration_ns", p)?;
        let cause = col::<StringArray>(&b, "cause", p)?;
        let major = col::<BooleanArray>(&b, "major", p)?;
        let completed = col::<BooleanArray>(&b, "completed", p)?;
        let thread = col::<UInt32Array>(&b, "thread", p)?;
        let cpu = col::<UInt32Array>(&b, "cpu", p)?;
        let ip = col::<UInt64Array>(&b, "ip", p)?;
        let stack = col::<UInt32Array>(&b, "stack", p)?;
        let addr = col::<UInt64Array>(&b, "addr", p)?;
        let object = col::<StringArray>(&b, "object", p)?;
        let ostart = col::<UInt64Array>(&b, "object_start", p)?;
        let oend = col::<UInt64Array>(&b, "object_end", p)?;
        let detail = col::<Int64Array>(&b, "detail", p)?;
        for i in 0..b.num_rows() {
            let c = Cause::parse(cause.value(i)).ok_or_else(|| damaged(format!("unknown cause '{}' in row {i}", cause.value(i))))?;
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
    }
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
