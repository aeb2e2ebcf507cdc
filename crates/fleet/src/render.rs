//! A query's answer as a report table, so that `kairos query` prints text, CSV and JSON
//! the way every report does: integers stay integers, floats keep their digits, nulls
//! are empty, anything else is Arrow's own rendering of the value.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use kairos_report::{Cell, Column, Table};

/// Digits after the point of float columns.
const DECIMALS: u8 = 6;

/// The rows of `batches` as one table.
pub fn table(batches: &[RecordBatch]) -> Table {
    let Some(first) = batches.first() else {
        return Table::new(Vec::new());
    };
    let columns = first
        .schema()
        .fields()
        .iter()
        .map(|f| {
            if f.data_type().is_numeric() {
                Column::right(f.name())
            } else {
                Column::left(f.name())
            }
        })
        .collect();
    let mut t = Table::new(columns);
    for b in batches {
        for row in 0..b.num_rows() {
            t.push_row(b.columns().iter().map(|c| cell(c.as_ref(), row)).collect());
        }
    }
    t
}

fn cell(a: &dyn Array, i: usize) -> Cell {
    if a.is_null(i) {
        return Cell::Empty;
    }
    let int = |v: i64| Cell::Int(v);
    match a.data_type() {
        DataType::Int8 => int(a.as_primitive::<Int8Type>().value(i).into()),
        DataType::Int16 => int(a.as_primitive::<Int16Type>().value(i).into()),
        DataType::Int32 => int(a.as_primitive::<Int32Type>().value(i).into()),
        DataType::Int64 => int(a.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => Cell::UInt(a.as_primitive::<UInt8Type>().value(i).into()),
        DataType::UInt16 => Cell::UInt(a.as_primitive::<UInt16Type>().value(i).into()),
        DataType::UInt32 => Cell::UInt(a.as_primitive::<UInt32Type>().value(i).into()),
        DataType::UInt64 => Cell::UInt(a.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => Cell::float(a.as_primitive::<Float32Type>().value(i).into(), DECIMALS),
        DataType::Float64 => Cell::float(a.as_primitive::<Float64Type>().value(i), DECIMALS),
        DataType::Utf8 => Cell::text(a.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Cell::text(a.as_string::<i64>().value(i)),
        DataType::Utf8View => Cell::text(a.as_string_view().value(i)),
        _ => match ArrayFormatter::try_new(a, &FormatOptions::default()) {
            Ok(f) => Cell::text(f.value(i).to_string()),
            Err(e) => Cell::text(format!("({e})")),
        },
    }
}
