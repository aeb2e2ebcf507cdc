//! `api/numa`: a memory-access result's NUMA side: the machine's nodes and the header
//! facts of the `numa` report, per top object its pages by node, threads by node, remote
//! share and first touch, the first touches with their stacks, one sentence per problem,
//! and the placement queries over time.

use std::collections::BTreeMap;

use crate::numa::attribute::ObjectNuma;
use crate::numa::problems::{display_name, problems, unjudged, Kind};
use crate::numa::report::section;
use crate::numa::UNKNOWN_NODE;
use kairos_report::Cell;
use serde_json::{json, Value};

use super::accesses::Memory;
use kairos_view_engine::api::data;
use kairos_view_engine::{Error, Query, State};

fn node_key(n: u32) -> String {
    if n == UNKNOWN_NODE {
        "?".into()
    } else {
        n.to_string()
    }
}

fn by_node(m: &BTreeMap<u32, u64>) -> Value {
    Value::Object(m.iter().map(|(n, c)| (node_key(*n), json!(c))).collect())
}

fn text(c: &Cell) -> String {
    match c {
        Cell::Text(s) => s.clone(),
        Cell::UInt(n) => kairos_view_engine::api::thousands(*n),
        Cell::Int(n) => n.to_string(),
        Cell::Percent(p) => format!("{p:.1}%"),
        Cell::Float { value, decimals } => format!("{value:.*}", usize::from(*decimals)),
        Cell::Duration { ns } => kairos_view_engine::api::duration(*ns),
        Cell::Empty => String::new(),
    }
}

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let m = super::accesses::memory(d)?;
    let limit = match q.num("objects")?.unwrap_or(20) {
        n if (1..=1000).contains(&n) => n as usize,
        n => {
            return Err(Error::BadParam(format!(
                "objects={n} is out of range: give 1 to 1000"
            )))
        }
    };
    let Some(n) = &m.numa else {
        return Err(Error::NotFound(
            "this result has no NUMA side: it was written by a kairos without the NUMA analysis; collect it again".into(),
        ));
    };
    let s = &n.summary;
    let facts: Vec<[String; 2]> = section(s, "")
        .entries
        .iter()
        .map(|(k, v)| [k.clone(), text(v)])
        .collect();
    let shown: Vec<&ObjectNuma> = n
        .data
        .objects
        .iter()
        .filter(|o| o.total_pages() > 0 || o.samples_total() > 0)
        .collect();
    let objects: Vec<Value> = shown.iter().take(limit).map(|o| object(&m, n, o)).collect();
    let touchers: Vec<Value> = n
        .data
        .touchers
        .iter()
        .filter(|t| shown.iter().take(limit).any(|o| o.object == t.object))
        .map(|t| {
            json!({ "object": t.object, "name": m.object_name(t.object), "tid": t.tid, "pid": t.pid, "cpu": t.cpu,
                    "node": node_key(t.node), "pages": t.pages, "function": t.function, "stack": t.stack })
        })
        .collect();
    let found: Vec<Value> = problems(&n.data, &m.objects, s.nodes())
        .iter()
        .map(|p| {
            let kind = match p.kind {
                Kind::OneNode => "one node",
                Kind::Mismatched => "mismatched",
            };
            json!({ "object": p.object, "name": m.object_name(p.object), "kind": kind, "sentence": p.sentence })
        })
        .collect();
    let unjudged: Vec<Value> = unjudged(&n.data, &m.objects, s.nodes())
        .into_iter()
        .map(|(o, sentence)| json!({ "object": o, "name": m.object_name(o), "sentence": sentence }))
        .collect();
    let nodes: Vec<Value> = s
        .topology
        .iter()
        .flat_map(|t| &t.nodes)
        .map(|x| json!({ "id": x.id, "cpus": crate::numa::format_cpulist(&x.cpus) }))
        .collect();
    Ok(json!({
        "recorded": s.recorded, "why_not": s.why_not, "nodes": nodes, "nodes_with_cpus": s.nodes(),
        "facts": facts, "notes": s.notes,
        "remote_share": s.remote_share_pct.map(|p| p / 100.0), "pmu_remote_share": s.pmu_remote_share_pct.map(|p| p / 100.0),
        "objects_total": shown.len(), "objects": objects, "touchers": touchers, "problems": found, "unjudged": unjudged,
        "timeline": s.timeline.iter().map(|(t, by)| json!({ "t": t, "nodes": by_node(by) })).collect::<Vec<_>>(),
    }))
}

fn object(m: &Memory, n: &crate::numa::report::Numa, o: &ObjectNuma) -> Value {
    let obj = m.objects.get(o.object as usize);
    let first = n.data.touchers.iter().find(|t| t.object == o.object);
    json!({
        "id": o.object, "name": m.object_name(o.object), "kind": obj.map(|x| x.kind.name()), "size": obj.map(|x| x.size),
        "label": obj.map(|x| display_name(x, o)),
        "pages_total": o.total_pages(), "pages": by_node(&o.pages_by_node()), "estimated": o.estimated.values().sum::<u64>(),
        "huge_pages": o.huge_pages, "threads": by_node(&o.threads), "samples": o.samples_total(),
        "remote": (o.with_node > 0).then(|| o.remote as f64 / o.with_node as f64),
        "pmu_remote": (o.pmu > 0).then(|| o.pmu_remote as f64 / o.pmu as f64),
        "policy": o.policy, "touching_threads": o.touching_threads,
        "first_touch": first.map(|t| json!({ "tid": t.tid, "node": node_key(t.node), "function": t.function })),
    })
}
