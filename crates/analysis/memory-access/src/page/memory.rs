//! `api/memory`: a memory-access result's objects, its top cache lines with the verdict,
//! the fix and a grid of byte offsets by thread, and per top object its samples over time.

use crate::lines::{Line, Verdict};
use crate::{tables::source_key, LINE_BYTES};
use serde_json::{json, Value};

use super::accesses::Memory;
use kairos_view_engine::api::data;
use kairos_view_engine::{Error, Query, State};

/// Rows of a line's grid: beyond this many threads the page could not draw them anyway.
const MAX_GRID_THREADS: usize = 64;

fn bounded(q: &Query, name: &str, default: u64, max: u64) -> Result<usize, Error> {
    match q.num(name)?.unwrap_or(default) {
        n if (1..=max).contains(&n) => Ok(n as usize),
        n => Err(Error::BadParam(format!(
            "{name}={n} is out of range: give 1 to {max}"
        ))),
    }
}

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let m = super::accesses::memory(d)?;
    let width = bounded(q, "width", 200, 4096)?;
    let n_lines = bounded(q, "lines", 20, 500)?;
    let n_objects = bounded(q, "objects", 50, 1000)?;
    let part = q.choice("part", &["all", "series"], "all")?;
    let sel = q.sel(d)?;
    let (from, to) = (sel.from, sel.to.max(sel.from.saturating_add(1)));
    let objects: Vec<Value> = m
        .times
        .iter()
        .map(|(o, times)| json!({ "object": o, "name": m.object_name(*o), "counts": buckets(times, from, to, width) }))
        .collect();
    let series = json!({ "from": from.saturating_sub(d.start_ns), "to": to.saturating_sub(d.start_ns), "width": width,
                         "bucket_ns": (to - from) as f64 / width as f64, "objects": objects });
    // The page asks for the series alone when the timeline's range changes.
    if part == "series" {
        return Ok(json!({ "series": series }));
    }
    let share = |x: u64, t: u64| if t > 0 { x as f64 / t as f64 } else { 0.0 };
    let objects: Vec<Value> = m
        .totals
        .iter()
        .take(n_objects)
        .map(|(o, t)| {
            let obj = m.objects.get(*o as usize);
            json!({ "id": o, "name": m.object_name(*o), "kind": obj.map(|x| x.kind.name()), "size": obj.map(|x| x.size),
                    "samples": t.samples, "share": share(t.weight, m.weight_total), "weight": t.weight,
                    "loads": t.loads, "stores": t.stores, "threads": t.threads.len() })
        })
        .collect();
    let lines: Vec<Value> = m
        .lines
        .iter()
        .take(n_lines)
        .map(|l| line(&m, l, share(l.samples, m.samples)))
        .collect();
    Ok(json!({
        "source": source_key(m.source), "source_name": m.source.name(), "source_reason": m.source_reason,
        "memory_bound": m.memory_bound, "weight_unit": m.weight_unit(),
        "samples": m.samples, "watch_hits": m.watch_hits,
        "unresolved": m.unresolved.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "false_sharing_lines": m.count(Verdict::FalseSharing), "true_sharing_lines": m.count(Verdict::TrueSharing),
        "lines_total": m.lines.len(), "shared_lines": m.lines.iter().filter(|l| l.threads.len() > 1).count(),
        "objects_total": m.totals.len(),
        "objects": objects,
        "lines": lines,
        "series": series,
    }))
}

/// One cache line: its figures, and per thread the loads and stores that touched each byte.
fn line(m: &Memory, l: &Line, share: f64) -> Value {
    let mut functions: Vec<(&u32, &u64)> = l.functions.iter().collect();
    functions.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let names: Vec<&str> = functions
        .iter()
        .take(3)
        .filter_map(|(f, _)| m.functions.get(**f as usize).map(String::as_str))
        .collect();
    let grid: Vec<Value> = l
        .threads
        .iter()
        .take(MAX_GRID_THREADS)
        .map(|t| {
            let (mut loads, mut stores) = (
                vec![0u64; LINE_BYTES as usize],
                vec![0u64; LINE_BYTES as usize],
            );
            // An access counts on every byte it covers: an 8-byte store marks 8 cells.
            for (&first, &(last, ld, st)) in &t.by_offset {
                for b in usize::from(first)..=usize::from(last).min(LINE_BYTES as usize - 1) {
                    loads[b] += ld;
                    stores[b] += st;
                }
            }
            let offsets: Vec<[i64; 2]> = Line::ranges(t.touched())
                .iter()
                .map(|&(a, b)| {
                    [
                        l.object_offset + i64::from(a),
                        l.object_offset + i64::from(b),
                    ]
                })
                .collect();
            json!({ "tid": t.tid, "loads": loads, "stores": stores, "offsets": offsets,
                    "load_count": t.loads, "store_count": t.stores })
        })
        .collect();
    json!({
        "addr": format!("{:#x}", l.addr), "object": l.object, "object_name": m.object_name(l.object),
        "object_offset": l.object_offset, "verdict": l.verdict.name(),
        "samples": l.samples, "share": share, "weight": l.weight, "hitm": l.hitm,
        "loads": l.threads.iter().map(|t| t.loads).sum::<u64>(), "stores": l.threads.iter().map(|t| t.stores).sum::<u64>(),
        "functions": names, "fix": l.fix(m.object_kind(l.object)), "threads_total": l.threads.len(), "grid": grid,
    })
}

/// Samples per bucket of `[from, to)` split into `width`, from times sorted ascending.
fn buckets(times: &[u64], from: u64, to: u64, width: usize) -> Vec<usize> {
    let span = u128::from(to - from);
    let edge = |k: usize| from + (span * k as u128 / width as u128) as u64;
    let at = |t: u64| times.partition_point(|&x| x < t);
    (0..width).map(|k| at(edge(k + 1)) - at(edge(k))).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn buckets_count_each_time_once() {
        let times = [0, 5, 9, 10, 19, 20, 99];
        assert_eq!(super::buckets(&times, 0, 20, 2), vec![3, 2]);
        assert_eq!(super::buckets(&times, 0, 100, 4).iter().sum::<usize>(), 7);
        // Narrower buckets than a nanosecond: some are empty, none counts twice.
        assert_eq!(super::buckets(&times, 0, 3, 7).iter().sum::<usize>(), 1);
    }
}
