//! The JSON API: one module per endpoint, each `fn(&State, &Query) -> Result<Value>`.

mod bandwidth;
mod compare;
mod counters;
mod io;
mod memory;
mod numa;
mod platform;
mod sample;
mod summary;
mod timeline;
mod tree;

use std::sync::Arc;

use kairos_time_assignment::Method;
use serde_json::{json, Value};

use crate::query::Query;
use crate::results::{Data, Derived};
use crate::{Error, State};

pub fn handle(state: &State, name: &str, q: &Query) -> Result<Value, Error> {
    match name {
        "results" => Ok(results(state)),
        "summary" => summary::get(state, q),
        "timeline" => timeline::get(state, q),
        "sample" => sample::get(state, q),
        "tree" => tree::get(state, q),
        "counters" => counters::get(state, q),
        "compare" => compare::get(state, q),
        "memory" => memory::get(state, q),
        "numa" => numa::get(state, q),
        "bandwidth" => bandwidth::get(state, q),
        "platform" => platform::get(state, q),
        "io" => io::get(state, q),
        _ => Err(Error::NotFound(format!(
            "there is no API call {name:?}; see docs/VIEW_API.md"
        ))),
    }
}

/// The loaded result named by parameter `param` (default index 0).
pub(crate) fn data<'a>(state: &'a State, q: &Query, param: &str) -> Result<&'a Data, Error> {
    let i = q.num(param)?.unwrap_or(0) as usize;
    let l = state.results.get(i).ok_or_else(|| {
        Error::NotFound(format!(
            "{param}={i}: there are only {} results",
            state.results.len()
        ))
    })?;
    l.data.as_ref().map_err(|e| Error::NotFound(e.clone()))
}

/// The profile of the `method` parameter (default `none`).
pub(crate) fn derived(d: &Data, q: &Query) -> Result<Arc<Derived>, Error> {
    d.derived(method(q.get("method").unwrap_or("none"))?)
}

pub(crate) fn method(name: &str) -> Result<Method, Error> {
    name.parse::<Method>()
        .map_err(|e| Error::BadParam(e.to_string()))
}

fn results(state: &State) -> Value {
    let list: Vec<Value> = state
        .results
        .iter()
        .map(|l| {
            let base = json!({ "id": l.id, "name": l.name, "path": l.path.display().to_string() });
            match &l.data {
                Err(e) => json!({ "id": l.id, "name": l.name, "path": base["path"], "ok": false, "error": e }),
                Ok(d) => one(l, d),
            }
        })
        .collect();
    json!({ "results": list })
}

fn one(l: &crate::results::Loaded, d: &Data) -> Value {
    let p = &d.base.profile;
    let m = d.dir.manifest();
    let command = match &m.target {
        Some(kairos_result::Target::Program { program, args }) => {
            format!("{program} {}", args.join(" "))
                .trim_end()
                .to_string()
        }
        Some(kairos_result::Target::Pid { pid }) => format!("PID {pid}"),
        Some(kairos_result::Target::SystemWide) => "system-wide".into(),
        _ => String::new(),
    };
    let threads: Vec<Value> = d
        .base
        .thread_lanes
        .iter()
        .map(|lane| {
            let th = lane
                .samples
                .first()
                .and_then(|&i| d.base.samples.get(i as usize))
                .and_then(|s| p.threads.get(s.thread as usize));
            json!({ "tid": lane.tid, "pid": th.map(|t| t.pid), "name": th.map(|t| t.name.clone()),
                    "process": th.map(|t| t.process_name.clone()), "samples": lane.samples.len() })
        })
        .collect();
    let cpus: Vec<u32> = d.base.cpu_lanes().iter().filter_map(|l| l.cpu).collect();
    json!({
        "id": l.id, "name": l.name, "path": l.path.display().to_string(), "ok": true, "error": null,
        "kind": m.kind, "command": command, "samples": d.base.samples.len(),
        // The views its analysis declares in the registry (absent for an unknown kind: all).
        "views": m.kind.as_deref().and_then(kairos_analysis_registry::find).map(|a| a.views),
        "events": m.events.iter().map(|e| json!({ "name": e.name, "samples": e.samples, "weight": e.weight, "time": e.time })).collect::<Vec<_>>(),
        "start_ns": d.start_ns, "duration_ns": d.duration_ns,
        "weight_unit": p.weight_event.clone().map_or("ns".to_string(), |e| e),
        "event": m.event.as_ref().map(|e| e.name.clone()),
        "threads": threads, "cpus": cpus,
        "has_branches": !p.branches.is_empty(),
        "branch_depth": p.branch_info.as_ref().map(|b| b.depth),
        "methods": d.methods.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        "has_counters": matches!(d.counters, Some(Ok(_))),
        "has_memory": d.has_memory(),
        "notes": d.notes,
    })
}

pub(crate) use kairos_report::thousands;

/// A duration in the unit that reads best.
pub(crate) fn duration(ns: u64) -> String {
    let x = ns as f64;
    if ns >= 1_000_000_000 {
        format!("{:.3} s", x / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", x / 1e6)
    } else if ns >= 1_000 {
        format!("{:.3} µs", x / 1e3)
    } else {
        format!("{ns} ns")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_well() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(1234567), "1,234,567");
        assert_eq!(super::thousands(123), "123");
        assert_eq!(super::duration(1_500_000_000), "1.500 s");
        assert_eq!(super::duration(2_000), "2.000 µs");
        assert_eq!(super::duration(12), "12 ns");
    }
}
