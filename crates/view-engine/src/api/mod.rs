//! The JSON API: one module per generic endpoint, each `fn(&State, &Query) ->
//! Result<Value>` (an [`Endpoint`](crate::site::Endpoint)), then the endpoints of the
//! analyses' page modules.

mod common;
mod compare;
mod sample;
mod summary;
mod timeline;
mod tree;

use serde_json::{json, Value};

use crate::error::Error;
use crate::query::Query;
use crate::results::Data;
use crate::site::State;

pub use common::{cell, data, duration, thousands};

pub(crate) fn handle(state: &State, name: &str, q: &Query) -> Result<Value, Error> {
    match name {
        "results" => Ok(results(state)),
        "summary" => summary::get(state, q),
        "timeline" => timeline::get(state, q),
        "sample" => sample::get(state, q),
        "tree" => tree::get(state, q),
        "compare" => compare::get(state, q),
        _ => {
            let get = state
                .site
                .modules
                .iter()
                .flat_map(|m| m.endpoints)
                .find(|(n, _)| *n == name)
                .map(|(_, get)| get)
                .ok_or_else(|| {
                    Error::NotFound(format!(
                        "there is no API call {name:?}; see docs/VIEW_API.md"
                    ))
                })?;
            get(state, q)
        }
    }
}

fn results(state: &State) -> Value {
    let list: Vec<Value> = state
        .results
        .iter()
        .map(|l| {
            let base = json!({ "id": l.id, "name": l.name, "path": l.path.display().to_string() });
            match &l.data {
                Err(e) => json!({ "id": l.id, "name": l.name, "path": base["path"], "ok": false, "error": e }),
                Ok(d) => one(state, l, d),
            }
        })
        .collect();
    json!({ "results": list })
}

fn one(state: &State, l: &crate::results::Loaded, d: &Data) -> Value {
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
    let mut v = json!({
        "id": l.id, "name": l.name, "path": l.path.display().to_string(), "ok": true, "error": null,
        "kind": m.kind, "command": command, "samples": d.base.samples.len(),
        // The views its analysis declares in the registry (absent for an unknown kind: all).
        "views": m.kind.as_deref().and_then(state.site.views),
        "events": m.events.iter().map(|e| json!({ "name": e.name, "samples": e.samples, "weight": e.weight, "time": e.time })).collect::<Vec<_>>(),
        "start_ns": d.start_ns, "duration_ns": d.duration_ns,
        "weight_unit": p.weight_event.clone().map_or("ns".to_string(), |e| e),
        "event": m.event.as_ref().map(|e| e.name.clone()),
        "threads": threads, "cpus": cpus,
        "has_branches": !p.branches.is_empty(),
        "branch_depth": p.branch_info.as_ref().map(|b| b.depth),
        "methods": d.methods.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        "notes": d.notes,
    });
    // What the analyses' page modules say of it (has_counters, has_memory).
    for f in state.site.modules.iter().filter_map(|m| m.fields) {
        if let Some(o) = v.as_object_mut() {
            o.extend(f(d).into_iter().map(|(k, x)| (k.to_string(), x)));
        }
    }
    v
}
