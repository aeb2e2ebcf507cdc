//! `api/platform`: the platform picture of a result: the snapshot its collection kept
//! (sockets, NUMA nodes with memory and distances, devices with node, local CPUs and PCIe
//! link), the measured use laid over it (samples per node and CPU, resident pages per
//! node where the result has NUMA placement, each device's own traffic where the result is
//! an io collection) and the topology check's findings.

use serde_json::{json, Value};

use kairos_view_engine::api::data;
use kairos_view_engine::{Error, Query, State};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let s = &d.base.samples;
    let t = crate::analyse_with(
        d.dir.path(),
        &d.base.profile.threads,
        (0..s.len()).map(|i| (s.cpu(i), s.thread(i))),
    )
    .map_err(|e| Error::NotFound(e.to_string()))?;
    let mut v = serde_json::to_value(&t).map_err(|e| Error::Internal(e.to_string()))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("samples".into(), json!(t.usage.samples()));
        o.insert("traffic".into(), traffic(d.dir.path()));
    }
    Ok(v)
}

/// Each device's flows from the result's `io.json`, by device name: bytes over the run,
/// average and peak bytes a second, and the link's payload capacity; null without one.
fn traffic(dir: &std::path::Path) -> Value {
    use kairos_analysis_io::model::{IoResult, Scope};
    let Some(Ok(io)) = IoResult::load(dir) else {
        return Value::Null;
    };
    let mut by: serde_json::Map<String, Value> = serde_json::Map::new();
    for (i, s) in io
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.scope == Scope::Device && s.unit == "bytes")
    {
        let row = json!({ "flow": s.flow, "bytes": io.total(i), "average": io.average(i), "peak": io.peak(i), "link_bytes_per_s": s.link_bytes_per_s });
        if let Value::Array(a) = by.entry(s.name.clone()).or_insert_with(|| json!([])) {
            a.push(row);
        }
    }
    Value::Object(by)
}

/// The page module of the topology report, which applies to any result.
pub static PAGE: kairos_view_engine::site::PageModule = kairos_view_engine::site::PageModule {
    endpoints: &[("platform", get)],
    opened: None,
    fields: None,
    compare: None,
};
