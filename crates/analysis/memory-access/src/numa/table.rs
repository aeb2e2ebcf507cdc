//! `tables/numa_objects.parquet` (one row per object and node: pages there, pages first
//! touched from there, samples and threads from there, and the object's own figures on
//! each of its rows) and `tables/numa_first_touch.parquet` (the threads and call stacks
//! that placed each object's pages). Written at the end of a collection, read by the
//! `numa` report and the page.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use kairos_table::{Batch, TableError, WriteOptions};

use super::attribute::{NumaData, ObjectNuma, Toucher};
use super::UNKNOWN_NODE;
use crate::tables::Written;

pub const OBJECTS: &str = "numa_objects";
pub const FIRST_TOUCH: &str = "numa_first_touch";

const OBJECT_U64: [&str; 10] = [
    "huge_pages",
    "untouched_pages",
    "with_node",
    "remote",
    "pmu",
    "pmu_remote",
    "loads",
    "stores",
    "touching_threads",
    "object_pages",
];
const NODE_U64: [&str; 6] = [
    "pages",
    "estimated_pages",
    "first_touch_pages",
    "samples",
    "threads",
    "readers",
];

fn objects_schema() -> Schema {
    let mut f = vec![
        Field::new("object", DataType::UInt32, false),
        Field::new("node", DataType::UInt32, false),
    ];
    f.extend(
        NODE_U64
            .iter()
            .chain(OBJECT_U64.iter())
            .map(|n| Field::new(*n, DataType::UInt64, false)),
    );
    f.push(Field::new("policy", DataType::Utf8, false));
    f.push(Field::new("source", DataType::Utf8, false));
    Schema::new(f)
}

fn touch_schema() -> Schema {
    let u32f = |n: &str| Field::new(n, DataType::UInt32, false);
    let u64f = |n: &str| Field::new(n, DataType::UInt64, false);
    let s = |n: &str| Field::new(n, DataType::Utf8, false);
    Schema::new(vec![
        u32f("object"),
        u32f("pid"),
        u32f("tid"),
        u32f("cpu"),
        u32f("node"),
        u64f("pages"),
        u64f("first_ns"),
        s("function"),
        s("stack"),
    ])
}

fn opts() -> WriteOptions<'static> {
    WriteOptions {
        dictionary: &["object", "node", "policy", "source", "function", "stack"],
        created_by: format!("kairos {}", env!("CARGO_PKG_VERSION")),
        ..WriteOptions::default()
    }
}

/// The node rows of one object: every node any of its figures mentions.
fn rows_of(o: &ObjectNuma) -> Vec<u32> {
    let keys: BTreeSet<u32> = [
        &o.pages,
        &o.estimated,
        &o.first_touch,
        &o.samples,
        &o.threads,
        &o.readers,
    ]
    .iter()
    .flat_map(|m| m.keys().copied())
    .collect();
    if keys.is_empty() {
        vec![UNKNOWN_NODE]
    } else {
        keys.into_iter().collect()
    }
}

fn node_value(o: &ObjectNuma, node: u32, col: &str) -> u64 {
    let m = match col {
        "pages" => &o.pages,
        "estimated_pages" => &o.estimated,
        "first_touch_pages" => &o.first_touch,
        "samples" => &o.samples,
        "threads" => &o.threads,
        _ => &o.readers,
    };
    m.get(&node).copied().unwrap_or(0)
}

fn object_value(o: &ObjectNuma, col: &str) -> u64 {
    match col {
        "huge_pages" => o.huge_pages,
        "untouched_pages" => o.untouched,
        "with_node" => o.with_node,
        "remote" => o.remote,
        "pmu" => o.pmu,
        "pmu_remote" => o.pmu_remote,
        "loads" => o.loads,
        "stores" => o.stores,
        "touching_threads" => o.touching_threads,
        _ => o.total_pages(),
    }
}

pub fn write(tables_dir: &Path, d: &NumaData) -> Result<Written, TableError> {
    let rows: Vec<(&ObjectNuma, u32)> = d
        .objects
        .iter()
        .flat_map(|o| rows_of(o).into_iter().map(move |n| (o, n)))
        .collect();
    let path = tables_dir.join(format!("{OBJECTS}.parquet"));
    let n = kairos_table::write(&path, objects_schema(), rows.len(), &opts(), |r| {
        let rows = &rows[r];
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from_iter_values(
                rows.iter().map(|(o, _)| o.object),
            )),
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|(_, n)| *n))),
        ];
        cols.extend(NODE_U64.iter().map(|c| {
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|(o, n)| node_value(o, *n, c)),
            )) as ArrayRef
        }));
        cols.extend(OBJECT_U64.iter().map(|c| {
            Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|(o, _)| object_value(o, c)),
            )) as ArrayRef
        }));
        cols.push(Arc::new(StringArray::from_iter_values(
            rows.iter().map(|(o, _)| o.policy.as_str()),
        )));
        cols.push(Arc::new(StringArray::from_iter_values(
            rows.iter().map(|(o, _)| o.source.as_str()),
        )));
        Ok(cols)
    })?;
    let mut out = vec![(
        OBJECTS.to_string(),
        format!("tables/{OBJECTS}.parquet"),
        rows.len() as u64,
        n,
    )];
    let t = &d.touchers;
    let path = tables_dir.join(format!("{FIRST_TOUCH}.parquet"));
    let n = kairos_table::write(&path, touch_schema(), t.len(), &opts(), |r| {
        let t = &t[r];
        Ok(vec![
            Arc::new(UInt32Array::from_iter_values(t.iter().map(|x| x.object))) as ArrayRef,
            Arc::new(UInt32Array::from_iter_values(t.iter().map(|x| x.pid))),
            Arc::new(UInt32Array::from_iter_values(t.iter().map(|x| x.tid))),
            Arc::new(UInt32Array::from_iter_values(t.iter().map(|x| x.cpu))),
            Arc::new(UInt32Array::from_iter_values(t.iter().map(|x| x.node))),
            Arc::new(UInt64Array::from_iter_values(t.iter().map(|x| x.pages))),
            Arc::new(UInt64Array::from_iter_values(t.iter().map(|x| x.first_ns))),
            Arc::new(StringArray::from_iter_values(
                t.iter().map(|x| x.function.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                t.iter().map(|x| x.stack.as_str()),
            )),
        ])
    })?;
    out.push((
        FIRST_TOUCH.to_string(),
        format!("tables/{FIRST_TOUCH}.parquet"),
        t.len() as u64,
        n,
    ));
    Ok(out)
}

fn u64c<'a>(b: &Batch<'a>, n: &str) -> Result<&'a UInt64Array, TableError> {
    b.col::<UInt64Array>(n, false)
}

fn u32c<'a>(b: &Batch<'a>, n: &str) -> Result<&'a UInt32Array, TableError> {
    b.col::<UInt32Array>(n, false)
}

/// Reads both tables back; objects past `objects` (the result's object count) are damage.
pub fn read(tables_dir: &Path, objects: usize) -> Result<NumaData, TableError> {
    let objects = read_objects(tables_dir, objects)?;
    let touchers = read_touchers(tables_dir)?;
    Ok(NumaData { objects, touchers })
}

/// The objects table: one row per (object, node), in the order written.
fn read_objects(tables_dir: &Path, objects: usize) -> Result<Vec<ObjectNuma>, TableError> {
    let mut by: BTreeMap<u32, ObjectNuma> = BTreeMap::new();
    let mut order: Vec<u32> = Vec::new();
    kairos_table::read(
        &tables_dir.join(format!("{OBJECTS}.parquet")),
        1 << 16,
        |b| {
            let (object, node) = (u32c(b, "object")?, u32c(b, "node")?);
            let nodes: Vec<&UInt64Array> = NODE_U64
                .iter()
                .map(|c| u64c(b, c))
                .collect::<Result<_, _>>()?;
            let objs: Vec<&UInt64Array> = OBJECT_U64
                .iter()
                .map(|c| u64c(b, c))
                .collect::<Result<_, _>>()?;
            let (policy, source) = (
                b.col::<StringArray>("policy", false)?,
                b.col::<StringArray>("source", false)?,
            );
            for i in 0..b.rows {
                let id = object.value(i);
                if id as usize >= objects {
                    return Err(b.damaged(format!(
                        "row {i} names object {id}, the result has {objects}"
                    )));
                }
                let o = by.entry(id).or_insert_with(|| {
                    order.push(id);
                    let v = |k: usize| objs[k].value(i);
                    ObjectNuma {
                        object: id,
                        huge_pages: v(0),
                        untouched: v(1),
                        with_node: v(2),
                        remote: v(3),
                        pmu: v(4),
                        pmu_remote: v(5),
                        loads: v(6),
                        stores: v(7),
                        touching_threads: v(8),
                        policy: policy.value(i).to_string(),
                        source: source.value(i).to_string(),
                        ..ObjectNuma::default()
                    }
                });
                let n = node.value(i);
                for (k, m) in [
                    &mut o.pages,
                    &mut o.estimated,
                    &mut o.first_touch,
                    &mut o.samples,
                    &mut o.threads,
                    &mut o.readers,
                ]
                .into_iter()
                .enumerate()
                {
                    let v = nodes[k].value(i);
                    if v > 0 {
                        m.insert(n, v);
                    }
                }
            }
            Ok(())
        },
    )?;
    Ok(order.into_iter().filter_map(|id| by.remove(&id)).collect())
}

/// The first-touch table.
fn read_touchers(tables_dir: &Path) -> Result<Vec<Toucher>, TableError> {
    let mut touchers = Vec::new();
    kairos_table::read(
        &tables_dir.join(format!("{FIRST_TOUCH}.parquet")),
        1 << 16,
        |b| {
            let (object, pid, tid, cpu, node) = (
                u32c(b, "object")?,
                u32c(b, "pid")?,
                u32c(b, "tid")?,
                u32c(b, "cpu")?,
                u32c(b, "node")?,
            );
            let (pages, first) = (u64c(b, "pages")?, u64c(b, "first_ns")?);
            let (function, stack) = (
                b.col::<StringArray>("function", false)?,
                b.col::<StringArray>("stack", false)?,
            );
            for i in 0..b.rows {
                touchers.push(Toucher {
                    object: object.value(i),
                    pid: pid.value(i),
                    tid: tid.value(i),
                    cpu: cpu.value(i),
                    node: node.value(i),
                    pages: pages.value(i),
                    first_ns: first.value(i),
                    function: function.value(i).to_string(),
                    stack: stack.value(i).to_string(),
                });
            }
            Ok(())
        },
    )?;
    Ok(touchers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn tables_read_back_what_was_written() {
        let mut a = ObjectNuma {
            object: 1,
            huge_pages: 3,
            remote: 5,
            with_node: 9,
            loads: 9,
            policy: "default".into(),
            source: "/src/t.c:31".into(),
            touching_threads: 1,
            ..ObjectNuma::default()
        };
        a.pages.insert(0, 100);
        a.estimated.insert(1, 2);
        a.first_touch.insert(0, 102);
        a.samples.insert(0, 4);
        a.samples.insert(1, 5);
        a.threads.insert(1, 4);
        a.readers.insert(1, 3);
        let b = ObjectNuma {
            object: 0,
            ..ObjectNuma::default()
        };
        let t = Toucher {
            object: 1,
            pid: 7,
            tid: 7,
            cpu: 0,
            node: 0,
            pages: 102,
            first_ns: 11,
            function: "init_arrays".into(),
            stack: "init_arrays (t.c:9) <- main (t.c:40)".into(),
        };
        let d = NumaData {
            objects: vec![a, b],
            touchers: vec![t],
        };
        let dir = std::env::temp_dir().join(format!("kairos-numa-table-{}", std::process::id()));
        let written = write(&dir, &d).unwrap();
        assert_eq!(written.len(), 2);
        let back = read(&dir, 2);
        let too_few = read(&dir, 1);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(back.unwrap(), d);
        assert!(too_few.unwrap_err().to_string().contains("names object 1"));
    }
}
