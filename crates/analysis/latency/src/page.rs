//! `api/latency`: a latency result's requests for the page: each request (start on the
//! page's time axis, which the module widens to cover every request; duration,
//! slow, cause, its time by part and the details behind it), the threshold, the
//! distribution and histogram; 404 with the command for a result that is not a latency
//! collection.

use serde_json::{json, Value};

use kairos_view_engine::api::data;
use kairos_view_engine::{Data, Error, Query, State};

use crate::model::{LatencyResult, Parts};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let r = match LatencyResult::load(d.dir.path()) {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(Error::NotFound(format!("{e}; collect it again"))),
        None => {
            return Err(Error::NotFound(
                "this result is not a latency collection; make one with `kairos collect latency -- PROGRAM`".into(),
            ))
        }
    };
    Ok(answer(&r, d.start_ns))
}

/// The page's time axis covers every request, also those before the first sample (a log's
/// requests, an attached service's first ones).
fn opened(d: &mut Data) {
    match LatencyResult::load(d.dir.path()) {
        Some(Ok(r)) => {
            for q in &r.requests {
                d.widen_span(q.start_ns);
                d.widen_span(q.start_ns + q.duration_ns);
            }
        }
        Some(Err(e)) => d.notes.push(e),
        None => {}
    }
}

/// The answer for one result; request starts in ns from `origin`, the page's time 0.
pub fn answer(r: &LatencyResult, origin: u64) -> Value {
    let requests: Vec<Value> = r
        .requests
        .iter()
        .map(|q| {
            let parts: serde_json::Map<String, Value> = Parts::KEYS
                .iter()
                .zip(q.parts.values())
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            let functions: Vec<Value> = q
                .functions
                .iter()
                .take(8)
                .map(|&(f, ns)| json!({ "name": r.function(f), "ns": ns }))
                .collect();
            json!({
                "id": q.id, "tid": q.tid, "thread": q.thread_name,
                "start": q.start_ns as i64 - origin as i64, "duration": q.duration_ns,
                "slow": q.slow, "cause_kind": q.cause_kind, "cause": q.cause,
                "parts": parts, "samples": q.samples, "functions": functions,
                "faults": q.faults, "fault_sites": q.fault_sites, "syscalls": q.syscalls,
                "waits": q.waits, "preemptions": q.preemptions,
            })
        })
        .collect();
    let histogram: Vec<Value> = crate::reports::histogram(r)
        .into_iter()
        .map(|(from, to, n)| json!({ "from": from, "to": to, "count": n }))
        .collect();
    json!({
        "source": r.source,
        "threshold": r.threshold_ns, "threshold_how": r.threshold_how,
        "span": r.last_ns.saturating_sub(r.first_ns),
        "percentiles": {
            "p50": r.percentile(50.0), "p90": r.percentile(90.0),
            "p99": r.percentile(99.0), "p99.9": r.percentile(99.9),
            "max": r.max_ns(),
        },
        "part_names": Parts::NAMES, "part_keys": Parts::KEYS,
        "histogram": histogram, "requests": requests,
        "unfinished": r.unfinished.len(), "notes": r.notes,
    })
}

/// The page module the spec declares.
pub(crate) static PAGE: kairos_view_engine::site::PageModule =
    kairos_view_engine::site::PageModule {
        endpoints: &[("latency", get)],
        opened: Some(opened),
        fields: None,
        compare: None,
    };
