//! `api/sample`: the sample nearest a time in one lane, its stack, and its branch records
//! in the order they happened, with the time each requested method gives them.

use serde_json::{json, Value};

use super::common::{data, method};
use crate::error::Error;
use crate::query::Query;
use crate::site::State;

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let ix = &d.base;
    let p = &ix.profile;
    let key = q
        .get("lane")
        .ok_or_else(|| Error::BadParam("lane= is missing (a lane key such as thread:42)".into()))?;
    let lane = ix
        .thread_lanes
        .iter()
        .chain(ix.cpu_lanes())
        .find(|l| l.key == key)
        .ok_or_else(|| Error::NotFound(format!("lane {key} has no samples in this result")))?;
    let t = d.start_ns.saturating_add(q.num("t")?.unwrap_or(0));
    // Nearest sample: the first at or after t, or the one before it if closer.
    let k = lane
        .samples
        .partition_point(|&i| ix.times()[i as usize] < t);
    let pick = [k.checked_sub(1), Some(k)]
        .into_iter()
        .flatten()
        .filter_map(|k| lane.samples.get(k).copied())
        .min_by_key(|&i| ix.times()[i as usize].abs_diff(t))
        .ok_or_else(|| Error::NotFound(format!("lane {key} has no samples")))?;
    let s = &ix
        .samples
        .get(pick as usize)
        .ok_or_else(|| Error::NotFound(format!("sample {pick} does not exist")))?;
    let names: Vec<&str> = match q.get("methods") {
        Some(m) => m.split(',').filter(|x| !x.is_empty()).take(2).collect(),
        None if !p.branches.is_empty() => vec![kairos_time_assignment::Method::DEFAULT.as_str()],
        None => vec![],
    };
    let methods = names
        .iter()
        .map(|n| method(n))
        .collect::<Result<Vec<_>, _>>()?;
    let derived = methods
        .iter()
        .map(|&m| d.derived(m))
        .collect::<Result<Vec<_>, _>>()?;
    // Names as the rest of the page shows them: the function table's name and short module.
    let name = |f: Option<u32>| -> (&str, &str) {
        match f
            .and_then(|f| ix.funcs.of_frame.get(f as usize))
            .map(|&k| k as usize)
        {
            Some(k) => (ix.funcs.name[k].as_str(), ix.funcs.module[k].as_str()),
            None => ("[unknown]", ""),
        }
    };
    let stack: Vec<Value> = p
        .stack_frames(s.stack)
        .map(|(st, f)| {
            let frame = p.stacks.get(st as usize).map(|n| n.frame);
            json!({ "function": f.function, "module": name(frame).1, "file": f.file, "line": f.line, "inlined": f.inline_depth > 0 })
        })
        .collect();
    let a = p.branches.partition_point(|b| b.sample < pick);
    let b = p.branches.partition_point(|b| b.sample <= pick);
    let recs = &p.branches[a..b.max(a)];
    // Recorded newest first (position 0); shown oldest first.
    let mut ordered: Vec<(usize, &kairos_model::BranchRecord)> =
        recs.iter().enumerate().map(|(k, r)| (a + k, r)).collect();
    ordered.sort_by_key(|(_, r)| std::cmp::Reverse(r.position));
    let branches: Vec<Value> = ordered
        .iter()
        .enumerate()
        .map(|(order, (ri, r))| {
            let (ff, fm) = name(r.from_frame);
            let (tf, tm) = name(r.to_frame);
            let times: Vec<Value> = derived
                .iter()
                .map(
                    |dv| match dv.record_time.time(*ri, &dv.index.samples.time) {
                        Some(t) => json!(t.saturating_sub(d.start_ns)),
                        None => Value::Null,
                    },
                )
                .collect();
            json!({ "order": order, "position": r.position, "from_function": ff, "from_module": fm,
                    "to_function": tf, "to_module": tm, "kind": r.kind.as_str(), "cycles": r.cycles,
                    "mispredicted": r.mispredicted, "is_new": r.is_new, "times": times })
        })
        .collect();
    let note = if !branches.is_empty() {
        None
    } else if p.branches.is_empty() {
        Some("this result has no branch records: collect with `-k branch-records=on` on a CPU with LBR, import a perf.data recorded with -b, or emulate them with `kairos lab emulate-lbr`")
    } else {
        Some("this sample carries no branch records")
    };
    let th = p.threads.get(s.thread as usize);
    Ok(json!({
        "index": pick, "time_ns": s.time_ns.saturating_sub(d.start_ns), "tid": th.map(|t| t.tid),
        "thread": th.map(|t| t.name.clone()), "cpu": s.cpu, "weight": s.weight,
        "stack": stack, "methods": names, "branches": branches, "note": note,
    }))
}
