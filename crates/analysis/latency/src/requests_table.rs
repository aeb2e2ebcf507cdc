//! `tables/requests.parquet` (schema in docs/SCHEMA.md): the requests of a latency result
//! as a table, one row per request kept in detail, so that query engines read them over
//! many hosts' results beside the profile tables. Written with `latency.json` every time
//! a result is saved, and listed in the manifest.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use kairos_analysis_api::Failure;
use kairos_result::{ResultDir, TableInfo, TABLES_DIR};
use kairos_session as session;
use kairos_table::{TableError, WriteOptions};

use crate::model::{LatencyResult, Parts, Request};

/// The table's name, in the manifest and in its file name.
pub const NAME: &str = "requests";

/// The table's file, relative to the result directory.
pub fn file() -> String {
    format!("{TABLES_DIR}/{NAME}.parquet")
}

/// The columns: the request, its time by part (`Parts::KEYS`, each `<key>_ns`), its cause
/// and the function it spent most sampled time in.
pub fn schema() -> Schema {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    let mut fields = vec![
        f("id", DataType::UInt64, false),
        f("tid", DataType::UInt32, false),
        f("thread_name", DataType::Utf8, false),
        f("start_ns", DataType::UInt64, false),
        f("duration_ns", DataType::UInt64, false),
        f("slow", DataType::Boolean, false),
        f("samples", DataType::UInt32, false),
        f("faults", DataType::UInt32, false),
    ];
    fields.extend(
        Parts::KEYS
            .iter()
            .map(|k| f(&format!("{k}_ns"), DataType::UInt64, false)),
    );
    fields.extend([
        f("cause_kind", DataType::Utf8, false),
        f("cause", DataType::Utf8, false),
        f("top_function", DataType::Utf8, true),
    ]);
    Schema::new(fields)
}

fn options() -> WriteOptions<'static> {
    WriteOptions {
        // Names and kinds repeat from request to request; ids and starts are sorted.
        dictionary: &["tid", "thread_name", "cause_kind", "top_function"],
        delta: &["id", "start_ns"],
        metadata: kairos_result::table_metadata(NAME),
        created_by: kairos_result::created_by(),
        ..WriteOptions::default()
    }
}

/// The columns of `requests`, in the schema's order.
fn columns(result: &LatencyResult, requests: &[Request]) -> Vec<ArrayRef> {
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(requests.iter().map(|q| q.id))),
        Arc::new(UInt32Array::from_iter_values(
            requests.iter().map(|q| q.tid),
        )),
        Arc::new(StringArray::from_iter_values(
            requests.iter().map(|q| q.thread_name.as_str()),
        )),
        Arc::new(UInt64Array::from_iter_values(
            requests.iter().map(|q| q.start_ns),
        )),
        Arc::new(UInt64Array::from_iter_values(
            requests.iter().map(|q| q.duration_ns),
        )),
        Arc::new(BooleanArray::from_iter(
            requests.iter().map(|q| Some(q.slow)),
        )),
        Arc::new(UInt32Array::from_iter_values(
            requests.iter().map(|q| q.samples),
        )),
        Arc::new(UInt32Array::from_iter_values(
            requests.iter().map(|q| q.faults),
        )),
    ];
    for k in 0..Parts::KEYS.len() {
        cols.push(Arc::new(UInt64Array::from_iter_values(
            requests
                .iter()
                .map(|q| q.parts.values().get(k).copied().unwrap_or(0)),
        )));
    }
    cols.push(Arc::new(StringArray::from_iter_values(
        requests.iter().map(|q| q.cause_kind.as_str()),
    )));
    cols.push(Arc::new(StringArray::from_iter_values(
        requests.iter().map(|q| q.cause.as_str()),
    )));
    cols.push(Arc::new(StringArray::from_iter(
        requests
            .iter()
            .map(|q| q.functions.first().map(|&(f, _)| result.function(f))),
    )));
    cols
}

/// Writes the table of `result`'s requests (in their order, by start) into the result
/// directory `root`, through a temporary file; no request gives a table of no rows.
/// Returns what the manifest lists of it.
pub fn write(root: &Path, result: &LatencyResult) -> Result<TableInfo, TableError> {
    let rows = result.requests.len();
    let bytes = kairos_table::write(&root.join(file()), schema(), rows, &options(), |r| {
        Ok(columns(result, result.requests.get(r).unwrap_or(&[])))
    })?;
    Ok(TableInfo {
        name: NAME.to_owned(),
        file: file(),
        rows: rows as u64,
        bytes,
    })
}

/// Saves `result` in `dir`: `latency.json`, the `requests` table, then the manifest
/// listing that table in place of any earlier one.
pub(crate) fn save_result(dir: &mut ResultDir, result: &LatencyResult) -> Result<(), Failure> {
    result
        .save(dir.path())
        .map_err(|e| Failure::failed(format!("{e}; check free disk space and permissions")))?;
    let info = write(dir.path(), result).map_err(|e| {
        Failure::failed(format!(
            "cannot write the requests table: {e}; check free disk space and permissions"
        ))
    })?;
    let tables = &mut dir.manifest_mut().tables;
    tables.retain(|t| t.name != NAME);
    tables.push(info);
    session::save(dir)
}

#[cfg(test)]
#[path = "requests_table_tests.rs"]
mod tests;
