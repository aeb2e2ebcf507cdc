//! `api/summary`: facts of the selection and its top functions by self weight.

use serde_json::{json, Value};

use super::{data, derived, duration, thousands};
use crate::agg::ThreadMask;
use crate::index::NONE;
use crate::query::Query;
use crate::{Error, State};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let dv = derived(d, q)?;
    let ix = &dv.index;
    let sel = q.sel(d)?;
    let p = &ix.profile;
    let mask = ThreadMask::new(p, &sel.tids);
    let nf = ix.funcs.len();
    let (mut self_w, mut self_c) = (vec![0u64; nf + 1], vec![0u64; nf + 1]);
    let (mut weight, mut count) = (0u64, 0u64);
    let mut threads = vec![false; p.threads.len()];
    for i in ix.range(sel.from, sel.to) {
        let s = &p.samples[i];
        if !mask.admits(s.thread) {
            continue;
        }
        let f = match ix.func_of_node(ix.leaf_node(i)) {
            NONE => nf,
            f => f as usize,
        };
        self_w[f] += s.weight;
        self_c[f] += 1;
        weight += s.weight;
        count += 1;
        if let Some(t) = threads.get_mut(s.thread as usize) {
            *t = true;
        }
    }
    let time = p.weight_is_time();
    let w = |x: u64| if time { duration(x) } else { thousands(x) };
    let m = d.dir.manifest();
    let method = q.get("method").unwrap_or("none");
    let mut facts: Vec<(String, String)> = vec![
        ("Result".into(), format!("{} ({})", d.dir.path().display(), m.kind.as_deref().unwrap_or("unknown"))),
        (if method == "none" { "Samples" } else { "Points" }.into(), thousands(count)),
        (if time { "CPU time".into() } else { format!("Event count ({})", p.weight_event.as_deref().unwrap_or("?")) }, w(weight)),
        ("Threads".into(), threads.iter().filter(|&&t| t).count().to_string()),
        ("Selection".into(), duration(sel.to.min(d.start_ns + d.duration_ns + 1).saturating_sub(sel.from))),
        ("Elapsed".into(), m.duration_secs.map_or("n/a".into(), |s| format!("{s:.3} s"))),
    ];
    if method != "none" {
        facts.push(("Time assignment".into(), format!("{method}: {:.1} points per sample", dv.points_per_sample)));
    }
    let l = p.losses;
    facts.push(("Lost".into(), format!("{} records, {} samples, {} throttles", l.lost_records, l.lost_samples, l.throttled)));
    let mut order: Vec<usize> = (0..=nf).filter(|&f| self_c[f] > 0).collect();
    order.sort_by(|&a, &b| self_w[b].cmp(&self_w[a]).then(self_c[b].cmp(&self_c[a])).then(a.cmp(&b)));
    let share = |x: u64| if weight > 0 { x as f64 / weight as f64 } else { 0.0 };
    let top: Vec<Value> = order
        .iter()
        .take(10)
        .map(|&f| {
            let (name, module) = if f == nf { ("[no stack]", "") } else { (ix.funcs.name[f].as_str(), ix.funcs.module[f].as_str()) };
            json!({ "func": if f == nf { Value::Null } else { json!(f) }, "function": name, "module": module,
                    "self": self_w[f], "self_share": share(self_w[f]), "count": self_c[f] })
        })
        .collect();
    let mut notes = dv.notes.clone();
    notes.dedup();
    Ok(json!({ "facts": facts.iter().map(|(a, b)| [a, b]).collect::<Vec<_>>(), "top": top, "notes": notes }))
}
