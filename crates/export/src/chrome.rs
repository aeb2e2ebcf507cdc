//! Chrome trace-event JSON (`{"traceEvents": [...]}`), read by chrome://tracing,
//! Perfetto and speedscope. Samples become a flame chart: per thread, each frame is one
//! "X" (complete) event for as long as consecutive samples keep it on the stack, so a
//! function running across 100 samples is one span, not 100. Metadata ("M") events name
//! the processes and threads.

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde_json::{json, Value};

use crate::select::Selection;

pub fn write(sel: &Selection<'_>, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer(out, &document(sel)).map_err(crate::json_err)
}

/// Trace-event times are microseconds; fractions keep nanosecond resolution.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

pub(crate) fn document(sel: &Selection<'_>) -> Value {
    let mut events = Vec::new();
    let mut processes = BTreeSet::new();
    for (thread, indices) in sel.by_thread() {
        let (pid, tid) = sel.ids(thread);
        if processes.insert(pid) {
            events.push(json!({"name": "process_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": sel.process_name(thread)}}));
        }
        events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": sel.thread_name(thread)}}));
        spans(sel, pid, tid, &indices, &mut events);
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"exporter": concat!("kairos ", env!("CARGO_PKG_VERSION")), "weights": if sel.weight_is_time() { "cpu-time ns" } else { sel.weight_event() }},
    })
}

/// The flame-chart spans of one thread's samples (indices into `sel.samples`, in time order).
fn spans(sel: &Selection<'_>, pid: i32, tid: i32, indices: &[usize], events: &mut Vec<Value>) {
    let gap = sel.typical_gap_ns(indices);
    // Open frames, root first: (function, module, start ns).
    let mut open: Vec<(&str, Option<&str>, u64)> = Vec::new();
    let mut prev_end = 0u64;
    let close = |open: &mut Vec<(&str, Option<&str>, u64)>,
                 keep: usize,
                 at: u64,
                 events: &mut Vec<Value>| {
        while open.len() > keep {
            let Some((name, module, start)) = open.pop() else {
                break;
            };
            events.push(json!({
                "name": name, "cat": module.unwrap_or("[unknown]"), "ph": "X",
                "ts": us(start), "dur": us(at.saturating_sub(start)), "pid": pid, "tid": tid,
            }));
        }
    };
    for (k, &i) in indices.iter().enumerate() {
        let Some(s) = sel.samples.get(i) else {
            continue;
        };
        let start = sel.rel_ns(s);
        // A sample stands for its CPU time (timer weights) or the usual gap (event
        // counts); it lasts until the next sample unless the thread was off-CPU between.
        let own = if sel.weight_is_time() && s.weight > 0 {
            s.weight
        } else {
            gap
        };
        let next = indices
            .get(k + 1)
            .and_then(|&j| sel.samples.get(j))
            .map(|n| sel.rel_ns(n));
        let end = match next {
            // Within 1.5 periods: timer jitter, not a missed sample.
            Some(n) if n >= start && n - start < own.saturating_add(own / 2) => n,
            _ => start.saturating_add(own),
        };
        if start != prev_end {
            // Not contiguous with the previous sample: nothing stays open across the gap.
            close(&mut open, 0, prev_end, events);
        }
        let frames: Vec<(&str, Option<&str>)> = sel
            .root_first(s.stack)
            .into_iter()
            .map(|f| (sel.function(f), sel.module(f)))
            .collect();
        let same = open
            .iter()
            .zip(&frames)
            .take_while(|(o, f)| o.0 == f.0 && o.1 == f.1)
            .count();
        close(&mut open, same, start, events);
        for &(name, module) in frames.get(same..).unwrap_or(&[]) {
            open.push((name, module, start));
        }
        prev_end = end;
    }
    close(&mut open, 0, prev_end, events);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::tests::profile;

    #[test]
    fn consecutive_samples_merge_into_nested_spans() {
        let p = profile();
        let d = document(&Selection::new(&p, None));
        let ev = d["traceEvents"].as_array().unwrap();
        let x: Vec<_> = ev
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == 10)
            .map(|e| {
                (
                    e["name"].as_str().unwrap(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        // Thread 10 samples at 0, 1, 3 ms: main;a;b twice (0-2 ms), then a gap (the
        // worker ran at 2 ms), then main;we;ird at 3-4 ms.
        assert!(x.contains(&("b", 0.0, 2000.0)), "{x:?}");
        assert!(x.contains(&("a", 0.0, 2000.0)));
        assert!(x.contains(&("main", 0.0, 2000.0)));
        assert!(x.contains(&("main", 3000.0, 1000.0)));
        assert!(x.contains(&("we;ird", 3000.0, 1000.0)));
        assert_eq!(x.len(), 5);
        assert!(ev
            .iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "worker"));
        assert_eq!(ev.iter().filter(|e| e["name"] == "process_name").count(), 1);
    }
}
