//! Reading a result's samples table straight into the index's columns (no vector of the
//! model's samples between), its row groups in two halves on two threads, and the
//! whole-run [`Totals`] summed on the way. For results of one event without branch
//! records (time assignment needs the model's samples); others are read as before.

use std::path::{Path, PathBuf};

use arrow_array::{Array, Int64Array, UInt16Array, UInt32Array, UInt64Array};
use kairos_model::Profile;
use kairos_result::{Error, ResultDir, TABLES_DIR};
use kairos_table::{Batch, TableError};

use crate::blocks::{Blocks, Edge};
use crate::ids::NONE;
use crate::samples::{Narrow, Samples};
use crate::totals::Totals;

/// Rows decoded per batch.
const BATCH_ROWS: usize = 1 << 16;
/// Rows per byte of the file at most (as kairos-result bounds it): a file claiming more is
/// damaged and must not make us allocate for them.
const MAX_ROWS_PER_BYTE: u64 = 6;

/// A result read into columns.
pub struct Read {
    pub profile: Profile,
    pub samples: Samples,
    pub totals: Totals,
    /// Sums at block edges, taken from the totals as the rows went by.
    pub blocks: Option<Blocks>,
}

/// The result read into columns, or None when it must be read through the model's
/// samples (several events, branch records, or tables the manifest does not count).
pub fn read(dir: &ResultDir) -> Option<Result<Read, Error>> {
    let m = dir.manifest();
    let rows = |name: &str| m.table(name).map(|t| t.rows as usize);
    let (Some(_), Some(threads), Some(stacks)) = (rows("samples"), rows("threads"), rows("stacks"))
    else {
        return None;
    };
    if m.events.len() > 1 || m.table("branches").is_some() {
        return None;
    }
    let read = kairos_result::read_profile_except_samples(dir, || columns(dir, threads, stacks));
    Some(read.map(|(mut profile, (samples, totals, blocks))| {
        // Every sample is of event 0 (checked while reading): what selecting the default
        // event does to the profile's own fields.
        profile.select_event(0);
        Read {
            profile,
            samples,
            totals,
            blocks,
        }
    }))
}

fn damaged(path: &Path, detail: String) -> Error {
    Error::DamagedTable {
        table: "samples".into(),
        path: path.to_path_buf(),
        detail,
    }
}

fn table_error(e: TableError) -> Error {
    kairos_result::table_error("samples", e)
}

/// The rows of the samples table: its row groups' sum, checked against the file's size
/// and the manifest's count.
fn row_count(dir: &ResultDir, path: &Path, groups: &[u64]) -> Result<u64, Error> {
    let n = groups.iter().try_fold(0u64, |a, &g| a.checked_add(g));
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let n = match n {
        Some(n) if n <= bytes.saturating_mul(MAX_ROWS_PER_BYTE) && n <= u32::MAX as u64 => n,
        _ => {
            return Err(damaged(
                path,
                "its row groups claim more rows than the file can hold".into(),
            ))
        }
    };
    if let Some(t) = dir.manifest().table("samples").filter(|t| t.rows != n) {
        return Err(damaged(
            path,
            format!("{n} rows, but the manifest records {}", t.rows),
        ));
    }
    Ok(n)
}

/// The samples table as columns and totals; `threads` and `stacks`: the rows of those
/// tables, which every sample's ids must be below.
fn columns(
    dir: &ResultDir,
    threads: usize,
    stacks: usize,
) -> Result<(Samples, Totals, Option<Blocks>), Error> {
    let path: PathBuf = dir.path().join(TABLES_DIR).join("samples.parquet");
    let groups = kairos_table::row_groups(&path).map_err(table_error)?;
    let n = row_count(dir, &path, &groups)?;
    let n = n as usize;
    // Zeroed vectors: pages are committed as the threads reach them, on both cores.
    let (mut time, mut stack) = (vec![0u64; n], vec![0u32; n]);
    // Two halves of whole row groups, as equal in rows as the groups allow.
    let mut h = 0;
    let mut first = 0usize;
    while h < groups.len() && first + (groups[h] as usize) <= n / 2 {
        first += groups[h] as usize;
        h += 1;
    }
    let (t0, t1) = time.split_at_mut(first);
    let (s0, s1) = stack.split_at_mut(first);
    let halves = [
        Half {
            groups: (0..h).collect(),
            first_row: 0,
            time: t0,
            stack: s0,
        },
        Half {
            groups: (h..groups.len()).collect(),
            first_row: first,
            time: t1,
            stack: s1,
        },
    ];
    let edge = Blocks::size_for(n, stacks, threads, 0);
    let ids = Ids {
        threads,
        stacks,
        edge,
    };
    let path_ref = &path;
    let results: Vec<Result<Read1, Error>> = std::thread::scope(|sc| {
        let mut halves = halves.into_iter();
        let (Some(a), Some(b)) = (halves.next(), halves.next()) else {
            return Vec::new();
        };
        let other = sc.spawn(move || b.read(path_ref, ids));
        let mine = a.read(path_ref, ids);
        let theirs = other
            .join()
            .unwrap_or_else(|_| Err(damaged(path_ref, "the thread reading it failed".into())));
        vec![mine, theirs]
    });
    let mut parts = Vec::new();
    for r in results {
        parts.push(r?);
    }
    Ok(join(parts, time, stack, ids))
}

/// The two halves' columns, totals and block edges as one.
fn join(
    parts: Vec<Read1>,
    time: Vec<u64>,
    stack: Vec<u32>,
    ids: Ids,
) -> (Samples, Totals, Option<Blocks>) {
    let n = time.len();
    let mut totals = Totals::new(ids.threads, ids.stacks);
    let (mut th, mut cpu, mut w) = (Vec::new(), Vec::new(), Vec::new());
    // Each half's edges count from its first row: the later half's get the sums of the
    // rows before it.
    let mut edges = Vec::new();
    for mut p in parts {
        if ids.edge.is_some() {
            let base = totals.edge(None);
            edges.extend(p.edges.drain(..).map(|e| e.plus(&base)));
        }
        totals.merge(p.totals);
        th.push(p.thread);
        cpu.push(p.cpu);
        w.push(p.weight);
    }
    let samples = Samples {
        time,
        stack,
        thread: Pieces::join(th, n),
        cpu: Pieces::join(cpu, n),
        weight: Pieces::join(w, n),
    };
    let const_w = match samples.weight {
        Narrow::Const(v) => Some(v),
        _ => None,
    };
    let blocks = ids
        .edge
        .and_then(|size| Blocks::from_edges(n, size, const_w, edges));
    (samples, totals.finish(), blocks)
}

#[derive(Clone, Copy)]
struct Ids {
    threads: usize,
    stacks: usize,
    /// Samples per block, when blocks are worth their sums.
    edge: Option<usize>,
}

/// One thread's row groups and its windows of the wide columns.
struct Half<'a> {
    groups: Vec<usize>,
    first_row: usize,
    time: &'a mut [u64],
    stack: &'a mut [u32],
}

/// What one thread read besides the wide columns.
struct Read1 {
    thread: Pieces,
    cpu: Pieces,
    weight: Pieces,
    totals: Totals,
    /// The totals at each block edge in the rows read (relative to the first row).
    edges: Vec<Edge>,
    /// Row of the next edge; usize::MAX without blocks.
    next_edge: usize,
}

impl Half<'_> {
    fn read(self, path: &Path, ids: Ids) -> Result<Read1, Error> {
        let mut out = Read1 {
            thread: Pieces::default(),
            cpu: Pieces::default(),
            weight: Pieces::default(),
            totals: Totals::new(ids.threads, ids.stacks),
            edges: Vec::new(),
            // The first edge past the first row (edge 0 is all zero and not kept).
            next_edge: ids
                .edge
                .map_or(usize::MAX, |s| (self.first_row / s + 1) * s),
        };
        let mut at = 0usize;
        let (time, stack, first) = (self.time, self.stack, self.first_row);
        let len = time.len();
        kairos_table::read_row_groups(path, self.groups, BATCH_ROWS, |b| {
            let end = at + b.rows;
            let (Some(t_out), Some(s_out)) = (time.get_mut(at..end), stack.get_mut(at..end)) else {
                return Err(b.damaged("a row group has more rows than its footer says"));
            };
            batch(b, first + at, ids, t_out, s_out, &mut out)?;
            at = end;
            Ok(())
        })
        .map_err(table_error)?;
        if at != len {
            return Err(damaged(
                path,
                format!("{} rows read where the footers say {len}", at),
            ));
        }
        // An edge at the last row read (the next half's first, or the end) is this half's.
        if out.next_edge == first + len {
            let one = out.weight.min.filter(|&m| m == out.weight.max);
            out.edges.push(out.totals.edge(one));
        }
        out.totals = out.totals.finish();
        Ok(out)
    }
}

/// One batch: rows `row..` of the table.
fn batch(
    b: &Batch<'_>,
    row: usize,
    ids: Ids,
    time: &mut [u64],
    stack: &mut [u32],
    out: &mut Read1,
) -> Result<(), TableError> {
    let t = b.col::<UInt64Array>("time_ns", false)?.values();
    let th = b.col::<UInt32Array>("thread", false)?.values();
    let cpu = b.col::<UInt32Array>("cpu", false)?.values();
    let w = b.col::<UInt64Array>("weight", false)?.values();
    let st = b.col::<Int64Array>("stack", true)?;
    // Results written before events were kept apart have no event column: all event 0.
    if b.has("event") {
        let ev = b.col::<UInt16Array>("event", false)?.values();
        if let Some(k) = ev.iter().position(|&e| e != 0) {
            return Err(b.damaged(format!(
                "samples: sample {} refers to event {}, but there are 1",
                row + k,
                ev[k]
            )));
        }
    }
    time.copy_from_slice(t);
    let nulls = st.nulls().filter(|n| n.null_count() > 0);
    let sv = st.values();
    let one_weight = w.first().is_some_and(|&f| w.iter().all(|&x| x == f));
    // The weight of every row so far, for an edge inside this batch: the rows before
    // (in the pieces) and this batch's all of one weight.
    let one = w
        .first()
        .copied()
        .filter(|&f| one_weight && out.weight.min.is_none_or(|m| m == f && out.weight.max == f));
    for i in 0..b.rows {
        if row + i == out.next_edge {
            out.edges.push(out.totals.edge(one));
            out.next_edge = out.next_edge.saturating_add(ids.edge.unwrap_or(usize::MAX));
        }
        let s = if nulls.is_some_and(|n| n.is_null(i)) {
            NONE
        } else {
            let v = sv[i];
            match u32::try_from(v) {
                Ok(s) if (s as usize) < ids.stacks => s,
                Ok(s) => {
                    return Err(b.damaged(format!(
                        "samples: sample {} refers to stack {s}, but there are {}",
                        row + i,
                        ids.stacks
                    )))
                }
                Err(_) => return Err(b.damaged(format!("stack {v} is not a valid stack id"))),
            }
        };
        if th[i] as usize >= ids.threads {
            return Err(b.damaged(format!(
                "samples: sample {} refers to thread {}, but there are {}",
                row + i,
                th[i],
                ids.threads
            )));
        }
        stack[i] = s;
        if one_weight {
            out.totals.add_run(th[i], s, cpu[i], w[i]);
        } else {
            out.totals.add(th[i], s, cpu[i], w[i]);
        }
    }
    out.thread.push(th.iter().map(|&x| x as u64), th.len());
    out.cpu.push(cpu.iter().map(|&x| x as u64), cpu.len());
    out.weight.push(w.iter().copied(), w.len());
    Ok(())
}

#[path = "load_pieces.rs"]
mod pieces;
use pieces::Pieces;
