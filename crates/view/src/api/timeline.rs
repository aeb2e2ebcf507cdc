//! `api/timeline`: per lane and pixel bucket, the samples' count, weight and the function
//! with most weight (its colour). Only non-empty buckets are sent.

use serde_json::{json, Value};

use super::{data, derived};
use crate::agg::ThreadMask;
use crate::buckets::{lane_buckets, MIN_PIECE};
use crate::index::{Lane, NONE};
use crate::query::Query;
use crate::{Error, State};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let dv = derived(d, q)?;
    let ix = &dv.index;
    let sel = q.sel(d)?;
    let width = q.num("width")?.unwrap_or(1000);
    if !(1..=4096).contains(&width) {
        return Err(Error::BadParam(format!(
            "width={width} must be 1 to 4096 pixels"
        )));
    }
    let by_cpu = q.choice("lanes", &["thread", "cpu"], "thread")? == "cpu";
    let lanes: Vec<&Lane> = ix
        .lanes(by_cpu)
        .iter()
        .filter(|l| {
            by_cpu
                || sel
                    .tids
                    .as_ref()
                    .is_none_or(|t| l.tid.is_some_and(|x| t.contains(&x)))
        })
        .collect();
    // Thread lanes are filtered by choosing lanes; CPU lanes sample by sample.
    let mask = if by_cpu {
        ThreadMask::new(&ix.profile, &sel.tids)
    } else {
        ThreadMask::all()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = lane_buckets(ix, &lanes, &sel, width as usize, &mask, cores, MIN_PIECE);
    let mut used: Vec<u32> = out
        .iter()
        .flat_map(|b| b.func.iter().copied())
        .filter(|&f| f != NONE)
        .collect();
    used.sort_unstable();
    used.dedup();
    let lanes_json: Vec<Value> = lanes
        .iter()
        .zip(&out)
        .map(|(l, b)| {
            let func: Vec<Value> = b.func.iter().map(|&f| if f == NONE { Value::Null } else { json!(f) }).collect();
            json!({ "key": l.key, "label": l.label, "tid": l.tid, "cpu": l.cpu, "samples": l.samples.len(),
                    "bucket": b.bucket, "count": b.count, "weight": b.weight, "func": func })
        })
        .collect();
    let names: Vec<&str> = used
        .iter()
        .map(|&f| ix.funcs.name[f as usize].as_str())
        .collect();
    let modules: Vec<&str> = used
        .iter()
        .map(|&f| ix.funcs.module[f as usize].as_str())
        .collect();
    let (from, to) = (sel.from - d.start_ns, sel.to - d.start_ns);
    Ok(json!({
        "from": from, "to": to, "width": width, "bucket_ns": (to - from) as f64 / width as f64,
        "functions": { "id": used, "name": names, "module": modules },
        "lanes": lanes_json,
    }))
}
