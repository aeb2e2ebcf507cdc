//! Comparing two memory-access results on the page: their memory objects matched by name
//! (the allocation site), each with its cache-line verdicts before and after.

use std::collections::HashMap;

use kairos_view_engine::{Data, Error};
use serde_json::{json, Value};

use super::accesses::{has_memory, memory, Memory};
use crate::lines::Verdict;

/// The page module's part of `api/compare`: null unless both results have memory
/// accesses.
pub(crate) fn objects(a: &Data, b: &Data) -> Result<Value, Error> {
    if has_memory(a) && has_memory(b) {
        memory_objects(a, b)
    } else {
        Ok(Value::Null)
    }
}

/// One memory object of one result: samples, share of the weight, loads, stores,
/// weight (time or cycles), lines with false and with true sharing.
#[derive(Default, Clone, Copy)]
struct Obj {
    samples: u64,
    share: f64,
    loads: u64,
    stores: u64,
    weight: u64,
    false_sharing: usize,
    true_sharing: usize,
}

fn objects_of(m: &Memory) -> HashMap<String, Obj> {
    let mut out: HashMap<String, Obj> = HashMap::new();
    // Two objects of one run may share a name (blocks from one site): they add up.
    for (o, t) in &m.totals {
        let e = out.entry(m.object_name(*o).to_string()).or_default();
        e.samples += t.samples;
        e.loads += t.loads;
        e.stores += t.stores;
        e.weight += t.weight;
    }
    for e in out.values_mut() {
        e.share = if m.weight_total > 0 {
            e.weight as f64 / m.weight_total as f64
        } else {
            0.0
        };
    }
    for l in &m.lines {
        let e = out.entry(m.object_name(l.object).to_string()).or_default();
        match l.verdict {
            Verdict::FalseSharing => e.false_sharing += 1,
            Verdict::TrueSharing => e.true_sharing += 1,
            _ => {}
        }
    }
    out
}

/// Both results' memory objects matched by name, by descending |share difference|.
fn memory_objects(a: &Data, b: &Data) -> Result<Value, Error> {
    let (ma, mb) = (memory(a)?, memory(b)?);
    let (oa, ob) = (objects_of(&ma), objects_of(&mb));
    let mut names: Vec<&String> = oa
        .keys()
        .chain(ob.keys().filter(|k| !oa.contains_key(*k)))
        .collect();
    let get = |m: &HashMap<String, Obj>, k: &String| m.get(k).copied().unwrap_or_default();
    let diff = |k: &String| get(&ob, k).share - get(&oa, k).share;
    names.sort_by(|x, y| diff(y).abs().total_cmp(&diff(x).abs()).then(x.cmp(y)));
    let side = |o: Obj| {
        json!({ "samples": o.samples, "share": o.share, "loads": o.loads, "stores": o.stores, "weight": o.weight,
                "false_sharing": o.false_sharing, "true_sharing": o.true_sharing })
    };
    let rows: Vec<Value> = names
        .iter()
        .map(|k| {
            let (x, y) = (get(&oa, k), get(&ob, k));
            json!({ "name": k, "a": side(x), "b": side(y), "diff": y.share - x.share,
                    "ratio": if x.weight > 0 { json!(y.weight as f64 / x.weight as f64) } else { Value::Null } })
        })
        .collect();
    let count = |m: &Memory| {
        json!({ "false_sharing": m.count(Verdict::FalseSharing), "true_sharing": m.count(Verdict::TrueSharing),
                "lines": m.lines.len(), "samples": m.samples })
    };
    Ok(json!({
        "weight_unit": [ma.weight_unit(), mb.weight_unit()],
        "a": count(&ma), "b": count(&mb), "rows": rows,
    }))
}
