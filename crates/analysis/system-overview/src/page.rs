//! The system overview's part of the page: `api/counters`, rates over time and duration
//! histograms from a system-overview result's kernel entries (page faults and kernel
//! entries per second). The entries are read when the result opens: the page's time axis
//! covers them as well as the samples.

use crate::{Cause, Entry};
use serde_json::{json, Value};

use kairos_view_engine::api::data;
use std::sync::Arc;

use kairos_view_engine::site::PageModule;
use kairos_view_engine::{Data, Error, Query, State};

/// The page module the spec declares.
pub(crate) static PAGE: PageModule = PageModule {
    endpoints: &[("counters", get)],
    opened: Some(opened),
    fields: Some(|d| vec![("has_counters", json!(matches!(entries(d), Some(Ok(_)))))]),
    compare: None,
};

/// A result's kernel entries.
struct Counters(Vec<Entry>);

/// The kernel entries of a result that has them, read once.
fn entries(d: &Data) -> Option<Result<Arc<Counters>, String>> {
    d.dir.manifest().table("kernel_entries")?;
    Some(d.extension(|dir| {
        crate::tables::read(&dir.tables_path())
            .map(Counters)
            .map_err(|e| format!("the kernel-entries table cannot be read: {e}"))
    }))
}

/// When a result opens: its entries are read, and the page's time axis covers them (the
/// samples of a system overview can be sparse); a table that cannot be read is a note.
fn opened(d: &mut Data) {
    match entries(d) {
        Some(Ok(c)) => {
            for e in &c.0 {
                d.widen_span(e.time_ns);
            }
        }
        Some(Err(e)) => d.notes.push(e),
        None => {}
    }
}

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let counters = entries(d);
    let entries: &[Entry] =
        match &counters {
            Some(Ok(c)) => &c.0,
            Some(Err(e)) => return Err(Error::NotFound(e.clone())),
            None => return Err(Error::NotFound(
                "this result has no counters; collect them with `kairos collect system-overview`"
                    .into(),
            )),
        };
    let sel = q.sel(d)?;
    let width = q.num("width")?.unwrap_or(200);
    if !(1..=4096).contains(&width) {
        return Err(Error::BadParam(format!("width={width} must be 1 to 4096")));
    }
    let w = width as usize;
    let span = (sel.to - sel.from).max(1);
    let bucket_ns = span as f64 / w as f64;
    let (mut faults, mut entered) = (vec![0u64; w], vec![0u64; w]);
    let (mut fault_ns, mut syscall_ns) = (Vec::new(), Vec::new());
    for e in entries
        .iter()
        .filter(|e| e.time_ns >= sel.from && e.time_ns < sel.to)
    {
        if let Some(tids) = &sel.tids {
            let tid = d.base.profile.threads.get(e.thread as usize).map(|t| t.tid);
            if !tid.is_some_and(|t| tids.contains(&t)) {
                continue;
            }
        }
        let k = (((e.time_ns - sel.from) as u128 * w as u128) / span as u128).min(w as u128 - 1)
            as usize;
        if e.cause.is_fault() && e.completed {
            faults[k] += 1;
        }
        if e.cause != Cause::ContextSwitch {
            entered[k] += 1;
        }
        match (e.cause, e.duration_ns) {
            (c, Some(ns)) if c.is_fault() => fault_ns.push(ns),
            (Cause::Syscall, Some(ns)) => syscall_ns.push(ns),
            _ => {}
        }
    }
    let per_s =
        |v: Vec<u64>| -> Vec<f64> { v.into_iter().map(|c| c as f64 * 1e9 / bucket_ns).collect() };
    Ok(json!({
        "bucket_ns": bucket_ns,
        "series": [
            { "name": "page faults/s", "values": per_s(faults) },
            { "name": "kernel entries/s", "values": per_s(entered) },
        ],
        "histograms": [
            histogram("page fault handling time (ns)", &fault_ns),
            histogram("system call time (ns)", &syscall_ns),
        ],
    }))
}

/// Power-of-two bins from the smallest to the largest value: durations span decades.
fn histogram(name: &str, values: &[u64]) -> Value {
    let (Some(&lo), Some(&hi)) = (values.iter().min(), values.iter().max()) else {
        return json!({ "name": name, "edges": [], "counts": [] });
    };
    let first = 63 - lo.max(1).leading_zeros();
    let last = 64 - hi.max(1).leading_zeros();
    let edges: Vec<u64> = (first..=last).map(|b| 1u64 << b.min(63)).collect();
    let mut counts = vec![0u64; edges.len().saturating_sub(1).max(1)];
    for &v in values {
        let k = edges
            .partition_point(|&e| e <= v)
            .saturating_sub(1)
            .min(counts.len() - 1);
        counts[k] += 1;
    }
    let edges = if edges.len() < 2 {
        vec![edges[0], edges[0] * 2]
    } else {
        edges
    };
    json!({ "name": name, "edges": edges, "counts": counts })
}

#[cfg(test)]
mod tests {
    #[test]
    fn histogram_bins_cover_every_value() {
        let h = super::histogram("x", &[1, 3, 1000, 1024, 5000]);
        let edges: Vec<u64> = serde_json::from_value(h["edges"].clone()).unwrap_or_default();
        let counts: Vec<u64> = serde_json::from_value(h["counts"].clone()).unwrap_or_default();
        assert_eq!(edges.len(), counts.len() + 1);
        assert_eq!(counts.iter().sum::<u64>(), 5);
        assert_eq!(edges[0], 1);
        assert!(*edges.last().unwrap_or(&0) > 5000);
        let one = super::histogram("y", &[7]);
        assert_eq!(one["counts"], serde_json::json!([1]));
        assert_eq!(super::histogram("z", &[])["counts"], serde_json::json!([]));
    }
}
