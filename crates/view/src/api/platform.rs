//! `api/platform`: the platform picture of a result: the snapshot its collection kept
//! (sockets, NUMA nodes with memory and distances, devices with node, local CPUs and PCIe
//! link), the measured use laid over it (samples per node and CPU, resident pages per
//! node where the result has NUMA placement) and the topology check's findings.

use serde_json::{json, Value};

use super::data;
use crate::query::Query;
use crate::{Error, State};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let s = &d.base.samples;
    let t = kairos_analysis_topology::analyse_with(
        d.dir.path(),
        &d.base.profile.threads,
        (0..s.len()).map(|i| (s.cpu(i), s.thread(i))),
    )
    .map_err(|e| Error::NotFound(e.to_string()))?;
    let mut v = serde_json::to_value(&t).map_err(|e| Error::Internal(e.to_string()))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("samples".into(), json!(t.usage.samples()));
    }
    Ok(v)
}
