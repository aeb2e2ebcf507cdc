//! `api/compare`: two results side by side: their facts (as `kairos compare` gives them,
//! NUMA figures included), self weights per function, module, thread or process, with
//! shares and ratios, and for two memory-access results their memory objects matched by
//! name (the allocation site) with each one's cache-line verdicts before and after.

use std::collections::HashMap;

use kairos_analysis_memory_access::lines::Verdict;
use kairos_report::Cell;
use serde_json::{json, Value};

use super::{data, thousands};
use crate::index::NONE;
use crate::memory::Memory;
use crate::query::Query;
use crate::results::Data;
use crate::{Error, State};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let (a, b) = (data(state, q, "a")?, data(state, q, "b")?);
    let group = q.choice(
        "group",
        &["function", "module", "thread", "process"],
        "function",
    )?;
    let (fa, _) = kairos_compare::Facts::read(&a.dir);
    let (fb, _) = kairos_compare::Facts::read(&b.dir);
    let table = kairos_compare::compare(&fa, &fb);
    let facts: Vec<Vec<String>> = table
        .rows
        .iter()
        .map(|r| r.iter().map(cell).collect())
        .collect();
    let (wa, wb) = (weights(a, group), weights(b, group));
    let (ta, tb) = (
        wa.values().sum::<u64>() as f64,
        wb.values().sum::<u64>() as f64,
    );
    let mut keys: Vec<&(String, String)> = wa
        .keys()
        .chain(wb.keys().filter(|k| !wa.contains_key(*k)))
        .collect();
    let share = |x: u64, t: f64| if t > 0.0 { x as f64 / t } else { 0.0 };
    let row = |k: &(String, String)| {
        let (x, y) = (
            wa.get(k).copied().unwrap_or(0),
            wb.get(k).copied().unwrap_or(0),
        );
        (x, y, share(x, ta), share(y, tb))
    };
    keys.sort_by(|k1, k2| {
        let (d1, d2) = (row(k1), row(k2));
        (d2.3 - d2.2)
            .abs()
            .total_cmp(&(d1.3 - d1.2).abs())
            .then_with(|| k1.cmp(k2))
    });
    let rows: Vec<_> = keys.iter().map(|k| row(k)).collect();
    let objects = if a.has_memory() && b.has_memory() {
        memory_objects(a, b)?
    } else {
        Value::Null
    };
    Ok(json!({
        "objects": objects,
        "columns": table.columns.iter().map(|c| c.header()).collect::<Vec<_>>(),
        "facts": facts,
        "rows": {
            "name": keys.iter().map(|k| k.0.as_str()).collect::<Vec<_>>(),
            "module": keys.iter().map(|k| k.1.as_str()).collect::<Vec<_>>(),
            "a": rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            "b": rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            "a_share": rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            "b_share": rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            "diff": rows.iter().map(|r| r.3 - r.2).collect::<Vec<_>>(),
            "ratio": rows.iter().map(|r| if r.0 > 0 { json!(r.1 as f64 / r.0 as f64) } else { Value::Null }).collect::<Vec<_>>(),
        }
    }))
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
    let (ma, mb) = (a.memory()?, b.memory()?);
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

/// Self weight per group key (name, module); names rather than ids, since two runs share
/// no ids (and no TIDs).
fn weights(d: &Data, group: &str) -> HashMap<(String, String), u64> {
    let ix = &d.base;
    let p = &ix.profile;
    let mut out: HashMap<(String, String), u64> = HashMap::new();
    for i in 0..ix.samples.len() {
        let th = p.threads.get(ix.samples.thread(i) as usize);
        let key = match group {
            "thread" => (
                th.map_or("[unknown]".into(), |t| t.name.clone()),
                String::new(),
            ),
            "process" => (
                th.map_or("[unknown]".into(), |t| t.process_name.clone()),
                String::new(),
            ),
            g => match ix.leaf_func(i) {
                NONE => ("[no stack]".into(), String::new()),
                f if g == "module" => (
                    ix.funcs.modules[ix.funcs.module_id[f as usize] as usize].clone(),
                    String::new(),
                ),
                f => (
                    ix.funcs.name[f as usize].clone(),
                    ix.funcs.module[f as usize].clone(),
                ),
            },
        };
        *out.entry(key).or_default() += ix.samples.weight(i);
    }
    out
}

pub(super) fn cell(c: &Cell) -> String {
    match c {
        Cell::Text(s) => s.clone(),
        Cell::Int(i) if *i < 0 => format!("-{}", thousands(i.unsigned_abs())),
        Cell::Int(i) => thousands(*i as u64),
        Cell::UInt(u) => thousands(*u),
        Cell::Float { value, decimals } => format!("{value:.*}", *decimals as usize),
        Cell::Percent(p) => format!("{p:.1} %"),
        Cell::Duration { ns } => super::duration(*ns),
        Cell::Empty => String::new(),
    }
}
