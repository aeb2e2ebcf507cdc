//! `api/bandwidth`: a result's memory-bandwidth timeline (`bandwidth.json`): each domain's
//! flows and all domains' DRAM traffic per tick in GB/s (times from the result's start),
//! the maximum it is drawn against (or the peak, said so), the utilization histogram and
//! the average and peak per domain and flow; or why the result has none.

use kairos_analysis_memory_access::bandwidth::load;
use kairos_analysis_memory_access::bandwidth_report::{BINS, HIGH};
use kairos_bandwidth::timeline::{histogram, stats};
use serde_json::{json, Value};

use super::data;
use crate::query::Query;
use crate::{Error, State};

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let t = match load(&d.dir) {
        Ok(Some(t)) => t,
        Ok(None) => {
            return Ok(
                json!({ "available": false, "why": "this result has no bandwidth timeline (collected before timelines were kept, or by an analysis that does not record one)" }),
            )
        }
        Err(e) => return Err(Error::NotFound(format!("{e}; collect the result again"))),
    };
    let maximum = t
        .maximum
        .as_ref()
        .map(|m| json!({ "gbs": m.gbs, "per_node": m.per_node, "how": m.how }));
    if let Some(why) = &t.unavailable {
        return Ok(
            json!({ "available": false, "why": why, "tick_ms": t.tick_ms, "maximum": maximum }),
        );
    }
    let rel = |ns: u64| ns.saturating_sub(d.start_ns);
    let mut series: std::collections::BTreeMap<(u32, &str), Vec<Value>> = Default::default();
    for p in &t.points {
        series
            .entry((p.domain, p.flow.name()))
            .or_default()
            .push(json!([rel(p.t_ns), p.dur_ns, p.bytes_per_s / 1e9]));
    }
    let series: Vec<Value> = series
        .into_iter()
        .map(|((domain, flow), points)| json!({ "domain": domain, "flow": flow, "points": points }))
        .collect();
    let dram: Vec<Value> = t
        .dram_intervals()
        .into_iter()
        .map(|(s, dur, v)| json!([rel(s), dur, v / 1e9]))
        .collect();
    let reference = t
        .reference_gbs()
        .map(|(gbs, what)| json!({ "gbs": gbs, "what": what }));
    let bins: Vec<Value> = histogram(&t, BINS)
        .iter()
        .map(|b| json!({ "from": b.from_gbs, "to": b.to_gbs, "seconds": b.seconds }))
        .collect();
    let rows: Vec<Value> = stats(&t)
        .iter()
        .map(|r| json!({ "domain": r.domain.map_or("all".to_string(), |x| x.to_string()), "flow": r.flow.name(), "average": r.average_gbs, "peak": r.peak_gbs, "maximum": r.maximum_gbs }))
        .collect();
    Ok(json!({
        "available": true, "source": t.source, "domain": t.domain, "tick_ms": t.tick_ms, "maximum": maximum, "reference": reference,
        "high_share": HIGH, "dram": dram, "series": series, "histogram": bins, "stats": rows, "notes": t.notes,
    }))
}
