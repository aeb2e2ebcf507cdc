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
    read_accesses(tables_dir, &mut built)?;
    Ok(built)
}

/// The accesses table into `built` (whose objects are read), naming functions as they
/// first appear.
fn read_accesses(tables_dir: &Path, built: &mut Built) -> Result<(), TableError> {
    let mut functions: HashMap<String, u32> = HashMap::new();
    let path = tables_dir.join(format!("{ACCESSES}.parquet"));
    let objects = built.objects.len();
    kairos_table::read(&path, 1 << 16, |b| {
        let c = AccessColumns::of(b)?;
        for i in 0..b.rows {
            let bad = |what: &str, v: &str| b.damaged(format!("unknown {what} '{v}' in row {i}"));
            let dir = [Direction::Load, Direction::Store, Direction::LoadStore]
                .into_iter()
                .find(|d| d.name() == c.direction.value(i));
            let level = if c.level.is_null(i) {
                None
            } else {
                Some(
                    BUCKETS
                        .into_iter()
                        .find(|&x| bucket_name(x) == c.level.value(i))
                        .ok_or_else(|| bad("level", c.level.value(i)))?,
                )
            };
            if c.object.value(i) as usize >= objects {
                return Err(bad("object", &c.object.value(i).to_string()));
            }
            let name = c.function.value(i);
            let next = functions.len() as u32;
            let f = *functions.entry(name.to_string()).or_insert(next);
            if f == next {
                built.functions.push(name.to_string());
            }
            built.samples.push(AccessSample {
                time_ns: c.time.value(i),
                pid: c.pid.value(i),
                tid: c.tid.value(i),
                ip: c.ip.value(i),
                function: f,
                addr: c.addr.value(i),
                size: c.size.value(i),
                direction: dir.ok_or_else(|| bad("direction", c.direction.value(i)))?,
                weight: c.weight.value(i),
                source: parse_source(c.source.value(i))
                    .ok_or_else(|| bad("source", c.source.value(i)))?,
                sp: opt(c.sp, i),
                level,
                hitm: c.hitm.value(i),
                cpu: c.cpu.map_or(0, |c| c.value(i)),
                phys_addr: c.phys.and_then(|p| opt(p, i)),
            });
            built.locations.push(Location {
                object: c.object.value(i),
                offset: c.offset.value(i),
            });
        }
        Ok(())
    })?;
    Ok(())
}

/// The columns of one batch of the accesses table.
struct AccessColumns<'a> {
    time: &'a UInt64Array,
    ip: &'a UInt64Array,
    addr: &'a UInt64Array,
    weight: &'a UInt64Array,
    sp: &'a UInt64Array,
    offset: &'a UInt64Array,
    pid: &'a UInt32Array,
    tid: &'a UInt32Array,
    size: &'a UInt32Array,
    object: &'a UInt32Array,
    function: &'a StringArray,
    direction: &'a StringArray,
    source: &'a StringArray,
    level: &'a StringArray,
    hitm: &'a BooleanArray,
    /// Columns added later: results written before them read as unknown.
    cpu: Option<&'a UInt32Array>,
    phys: Option<&'a UInt64Array>,
}

impl<'a> AccessColumns<'a> {
    fn of(b: &Batch<'a>) -> Result<Self, TableError> {
        let u64c = |n| col::<UInt64Array>(b, n);
        let u32c = |n| col::<UInt32Array>(b, n);
        let strc = |n| col::<StringArray>(b, n);
        Ok(AccessColumns {
            time: u64c("time_ns")?,
            ip: u64c("ip")?,
            addr: u64c("address")?,
            weight: u64c("weight")?,
            sp: u64c("sp")?,
            offset: u64c("offset")?,
            pid: u32c("pid")?,
            tid: u32c("tid")?,
            size: u32c("size")?,
            object: u32c("object")?,
            function: strc("function")?,
            direction: strc("direction")?,
            source: strc("source")?,
            level: strc("level")?,
            hitm: col::<BooleanArray>(b, "hitm")?,
            cpu: if b.has("cpu") {
                Some(u32c("cpu")?)
            } else {
                None
            },
            phys: if b.has("phys_addr") {
                Some(u64c("phys_addr")?)
            } else {
                None
            },
        })
    }
}
