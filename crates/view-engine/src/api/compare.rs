//! `api/compare`: two results side by side: their facts (as `kairos compare` gives them,
//! through the site), self weights per function, module, thread or process, with shares
//! and ratios, and what the analyses' page modules add (for two memory-access results,
//! their memory objects matched by name).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::common::{cell, data};
use crate::error::Error;
use crate::ids::NONE;
use crate::query::Query;
use crate::results::Data;
use crate::site::State;

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let (a, b) = (data(state, q, "a")?, data(state, q, "b")?);
    let group = q.choice(
        "group",
        &["function", "module", "thread", "process"],
        "function",
    )?;
    let table = (state.site.facts)(&a.dir, &b.dir);
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
    let mut answer = json!({
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
    });
    // What the analyses add for these two results (memory objects matched by name).
    for m in &state.site.modules {
        if let (Some((name, get)), Some(o)) = (m.compare, answer.as_object_mut()) {
            o.insert(name.into(), get(a, b)?);
        }
    }
    Ok(answer)
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
