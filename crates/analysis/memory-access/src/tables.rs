//! `tables/accesses.parquet` (one row per sampled access, with its object) and
//! `tables/memory_objects.parquet`: written when a collection or import finishes, read
//! back by the reports.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use kairos_table::{opt, Batch, TableError, WriteOptions};

use crate::build::Built;
use crate::objects::{Location, Object, ObjectKind};
use crate::{bucket_name, AccessSample, Direction, Source, BUCKETS};

pub const ACCESSES: &str = "accesses";
pub const OBJECTS: &str = "memory_objects";

/// (name, file relative to the result, rows, bytes) of each table written.
pub type Written = Vec<(String, String, u64, u64)>;

fn accesses_schema() -> Schema {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Schema::new(vec![
        f("time_ns", DataType::UInt64, false),
        f("pid", DataType::UInt32, false),
        f("tid", DataType::UInt32, false),
        f("ip", DataType::UInt64, false),
        f("function", DataType::Utf8, false),
        f("address", DataType::UInt64, false),
        f("size", DataType::UInt32, false),
        f("direction", DataType::Utf8, false),
        f("weight", DataType::UInt64, false),
        f("source", DataType::Utf8, false),
        f("level", DataType::Utf8, true),
        f("hitm", DataType::Boolean, false),
        f("sp", DataType::UInt64, true),
        f("object", DataType::UInt32, false),
        f("offset", DataType::UInt64, false),
        f("cpu", DataType::UInt32, false),
        f("phys_addr", DataType::UInt64, true),
    ])
}

fn objects_schema() -> Schema {
    let f = |n: &str, t: DataType| Field::new(n, t, false);
    Schema::new(vec![
        f("id", DataType::UInt32),
        f("kind", DataType::Utf8),
        f("name", DataType::Utf8),
        f("size", DataType::UInt64),
    ])
}

fn opts() -> WriteOptions<'static> {
    WriteOptions {
        dictionary: &[
            "pid",
            "tid",
            "function",
            "direction",
            "source",
            "level",
            "object",
            "kind",
        ],
        delta: &["time_ns"],
        created_by: format!("kairos {}", env!("CARGO_PKG_VERSION")),
        ..WriteOptions::default()
    }
}

pub fn write(tables_dir: &Path, b: &Built) -> Result<Written, TableError> {
    let path = tables_dir.join(format!("{ACCESSES}.parquet"));
    let rows = b.samples.len();
    let n = kairos_table::write(&path, accesses_schema(), rows, &opts(), |r| {
        let s = &b.samples[r.clone()];
        let l = &b.locations[r];
        let name = |f: u32| {
            b.functions
                .get(f as usize)
                .map_or("[unknown]", String::as_str)
        };
        Ok(vec![
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.time_ns))) as ArrayRef,
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.pid))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.tid))),
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.ip))),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| name(x.function)),
            )),
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.addr))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.size))),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| x.direction.name()),
            )),
            Arc::new(UInt64Array::from_iter_values(s.iter().map(|x| x.weight))),
            Arc::new(StringArray::from_iter_values(
                s.iter().map(|x| source_key(x.source)),
            )),
            Arc::new(StringArray::from_iter(
                s.iter().map(|x| x.level.map(bucket_name)),
            )),
            Arc::new(BooleanArray::from_iter(s.iter().map(|x| Some(x.hitm)))),
            Arc::new(UInt64Array::from_iter(s.iter().map(|x| x.sp))),
            Arc::new(UInt32Array::from_iter_values(l.iter().map(|x| x.object))),
            Arc::new(UInt64Array::from_iter_values(l.iter().map(|x| x.offset))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.cpu))),
            Arc::new(UInt64Array::from_iter(s.iter().map(|x| x.phys_addr))),
        ])
    })?;
    let mut out = vec![(
        ACCESSES.to_string(),
        format!("tables/{ACCESSES}.parquet"),
        rows as u64,
        n,
    )];
    let path = tables_dir.join(format!("{OBJECTS}.parquet"));
    let o = &b.objects;
    let n = kairos_table::write(&path, objects_schema(), o.len(), &opts(), |r| {
        let o = &o[r.clone()];
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(r.map(|i| i as u32))) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                o.iter().map(|x| x.kind.name()),
            )),
            Arc::new(StringArray::from_iter_values(
                o.iter().map(|x| x.name.as_str()),
            )),
            Arc::new(UInt64Array::from_iter_values(o.iter().map(|x| x.size))),
        ])
    })?;
    out.push((
        OBJECTS.to_string(),
        format!("tables/{OBJECTS}.parquet"),
        o.len() as u64,
        n,
    ));
    Ok(out)
}

/// The short name a table and the manifest use for a source.
pub fn source_key(s: Source) -> &'static str {
    match s {
        Source::Registers => "registers",
        Source::Pmu => "pmu",
        Source::Watchpoint => "watchpoint",
        Source::Event => "event",
    }
}

pub fn parse_source(s: &str) -> Option<Source> {
    [
        Source::Registers,
        Source::Pmu,
        Source::Watchpoint,
        Source::Event,
    ]
    .into_iter()
    .find(|&x| source_key(x) == s)
}

fn kind_of(s: &str) -> Option<ObjectKind> {
    [
        ObjectKind::Heap,
        ObjectKind::Static,
        ObjectKind::Stack,
        ObjectKind::Mapping,
        ObjectKind::Unknown,
    ]
    .into_iter()
    .find(|k| k.name() == s)
}

fn col<'a, T: Array + 'static>(b: &Batch<'a>, name: &str) -> Result<&'a T, TableError> {
    b.col::<T>(name, true)
}

pub fn read(tables_dir: &Path) -> Result<Built, TableError> {
    let mut built = Built::default();
    let mut functions: HashMap<String, u32> = HashMap::new();
    let path = tables_dir.join(format!("{OBJECTS}.parquet"));
    kairos_table::read(&path, 1 << 16, |b| {
        let (kind, name, size) = (
            col::<StringArray>(b, "kind")?,
            col::<StringArray>(b, "name")?,
            col::<UInt64Array>(b, "size")?,
        );
        for i in 0..b.rows {
            let kind = kind_of(kind.value(i))
                .ok_or_else(|| b.damaged(format!("unknown object kind '{}'", kind.value(i))))?;
            built.objects.push(Object {
                kind,
                name: name.value(i).to_string(),
                size: size.value(i),
            });
        }
        Ok(())
    })?;
    let path = tables_dir.join(format!("{ACCESSES}.parquet"));
    let objects = built.objects.len();
    kairos_table::read(&path, 1 << 16, |b| {
        let u64c = |n| col::<UInt64Array>(b, n);
        let u32c = |n| col::<UInt32Array>(b, n);
        let strc = |n| col::<StringArray>(b, n);
        let (time, ip, addr, weight, sp, offset) = (
            u64c("time_ns")?,
            u64c("ip")?,
            u64c("address")?,
            u64c("weight")?,
            u64c("sp")?,
            u64c("offset")?,
        );
        let (pid, tid, size, object) = (u32c("pid")?, u32c("tid")?, u32c("size")?, u32c("object")?);
        let (function, direction, source, level) = (
            strc("function")?,
            strc("direction")?,
            strc("source")?,
            strc("level")?,
        );
        let hitm = col::<BooleanArray>(b, "hitm")?;
        // Columns added later: results written before them read as unknown.
        let cpu = if b.has("cpu") {
            Some(col::<UInt32Array>(b, "cpu")?)
        } else {
            None
        };
        let phys = if b.has("phys_addr") {
            Some(col::<UInt64Array>(b, "phys_addr")?)
        } else {
            None
        };
        for i in 0..b.rows {
            let bad = |what: &str, v: &str| b.damaged(format!("unknown {what} '{v}' in row {i}"));
            let dir = [Direction::Load, Direction::Store, Direction::LoadStore]
                .into_iter()
                .find(|d| d.name() == direction.value(i));
            let level = if level.is_null(i) {
                None
            } else {
                Some(
                    BUCKETS
                        .into_iter()
                        .find(|&x| bucket_name(x) == level.value(i))
                        .ok_or_else(|| bad("level", level.value(i)))?,
                )
            };
            if object.value(i) as usize >= objects {
                return Err(bad("object", &object.value(i).to_string()));
            }
            let name = function.value(i);
            let next = functions.len() as u32;
            let f = *functions.entry(name.to_string()).or_insert(next);
            if f == next {
                built.functions.push(name.to_string());
            }
            built.samples.push(AccessSample {
                time_ns: time.value(i),
                pid: pid.value(i),
                tid: tid.value(i),
                ip: ip.value(i),
                function: f,
                addr: addr.value(i),
                size: size.value(i),
                direction: dir.ok_or_else(|| bad("direction", direction.value(i)))?,
                weight: weight.value(i),
                source: parse_source(source.value(i))
                    .ok_or_else(|| bad("source", source.value(i)))?,
                sp: opt(sp, i),
                level,
                hitm: hitm.value(i),
                cpu: cpu.map_or(0, |c| c.value(i)),
                phys_addr: phys.and_then(|p| opt(p, i)),
            });
            built.locations.push(Location {
                object: object.value(i),
                offset: offset.value(i),
            });
        }
        Ok(())
    })?;
    Ok(built)
}
