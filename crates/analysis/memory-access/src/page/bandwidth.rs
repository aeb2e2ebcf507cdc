//! `api/bandwidth`: a result's memory-bandwidth timeline (`bandwidth.json`): each domain's
//! flows, each memory channel's flows (where the counters are per channel) and all
//! domains' DRAM traffic per tick in GB/s (times from the result's start, negative before
//! its first sample), the maximum it is drawn against (or the peak, said so), the
//! utilization histogram, the average and peak per domain, flow and channel, and the
//! `bandwidth` report's table of which objects and functions the bandwidth comes from; or
//! why the result has none.
//!
//! With `from`/`to` (ns from the result's start, as `api/memory`), everything is of the
//! ticks that overlap that range: whole ticks, since a tick's rate is all there is of it.

use crate::bandwidth::load;
use crate::bandwidth_report::{by_object, BINS, HIGH};
use kairos_bandwidth::timeline::{channel_stats, histogram, stats, Timeline};
use serde_json::{json, Value};

use kairos_view_engine::api::cell;
use kairos_view_engine::api::data;
use kairos_view_engine::{Data, Error, Query, State};

/// Rows of the by-object table, as the report's default.
const OBJECT_ROWS: usize = 20;

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
            json!({ "available": false, "why": why, "tick_ms": t.tick_ms, "maximum": maximum, "by_object": objects(d, None) }),
        );
    }
    // Without a range: the whole timeline, which may start before the first sample.
    let range = if q.get("from").is_some() || q.get("to").is_some() {
        let s = q.sel(d)?;
        Some((s.from, s.to))
    } else {
        None
    };
    let t = match range {
        Some((from, to)) => within(&t, from, to),
        None => t,
    };
    let rel = |ns: u64| ns as i64 - d.start_ns as i64;
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
    let mut channels: std::collections::BTreeMap<(u32, u32, &str), Vec<Value>> = Default::default();
    for p in &t.channels {
        channels
            .entry((p.domain, p.channel, p.flow.name()))
            .or_default()
            .push(json!([rel(p.t_ns), p.dur_ns, p.bytes_per_s / 1e9]));
    }
    let channels: Vec<Value> = channels
        .into_iter()
        .map(|((domain, channel, flow), points)| json!({ "domain": domain, "channel": channel, "flow": flow, "points": points }))
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
    let channel_rows: Vec<Value> = channel_stats(&t)
        .iter()
        .map(|r| json!({ "domain": r.domain, "channel": r.channel, "flow": r.flow.name(), "average": r.average_gbs, "peak": r.peak_gbs }))
        .collect();
    Ok(json!({
        "available": true, "source": t.source, "domain": t.domain, "tick_ms": t.tick_ms, "maximum": maximum, "reference": reference,
        "range": range.map(|(a, b)| json!([rel(a), rel(b)])),
        "high_share": HIGH, "dram": dram, "series": series, "histogram": bins, "stats": rows,
        "channels": channels, "channel_stats": channel_rows,
        "by_object": objects(d, Some(&t)), "notes": t.notes,
    }))
}

/// The ticks of `t` that overlap `[from, to)` (absolute ns), per domain and per channel.
fn within(t: &Timeline, from: u64, to: u64) -> Timeline {
    let overlaps = |s: u64, dur: u64| s < to && s.saturating_add(dur) > from;
    Timeline {
        points: t
            .points
            .iter()
            .filter(|p| overlaps(p.t_ns, p.dur_ns))
            .cloned()
            .collect(),
        channels: t
            .channels
            .iter()
            .filter(|p| overlaps(p.t_ns, p.dur_ns))
            .cloned()
            .collect(),
        ..t.clone()
    }
}

/// The `bandwidth` report's by-object table (its title, headers, cells and notes), from
/// the same function; or the sentence saying why the accesses could not be read.
fn objects(d: &Data, t: Option<&Timeline>) -> Value {
    if !super::accesses::has_memory(d) {
        return Value::Null;
    }
    let built = match crate::tables::read(&d.dir.tables_path()) {
        Ok(b) => b,
        Err(e) => {
            return json!({ "error": format!("the memory-access tables are damaged: {e}; collect the result again") })
        }
    };
    let data = crate::load(&d.dir, built);
    let tab = by_object(t, &data, Some(OBJECT_ROWS));
    json!({
        "title": tab.title,
        "columns": tab.columns.iter().map(|c| c.header()).collect::<Vec<_>>(),
        "rows": tab.rows.iter().map(|r| r.iter().map(cell).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "notes": tab.notes,
    })
}

#[cfg(test)]
mod tests {
    use kairos_bandwidth::timeline::{stats, Flow, Point, Timeline};

    fn tick(i: u64, gbs: f64) -> Point {
        Point {
            t_ns: 1_000 + i * 100,
            dur_ns: 100,
            domain: 0,
            flow: Flow::Read,
            bytes_per_s: gbs * 1e9,
        }
    }

    #[test]
    fn a_range_keeps_the_ticks_that_overlap_it() {
        let t = Timeline {
            tick_ms: 1,
            domain: "socket".into(),
            points: vec![tick(0, 1.0), tick(1, 2.0), tick(2, 4.0), tick(3, 8.0)],
            ..Timeline::default()
        };
        // 1150..1250 overlaps ticks 1 and 2 only; a tick ending at `from` is out.
        let w = super::within(&t, 1_150, 1_250);
        assert_eq!(w.points.len(), 2);
        let s = &stats(&w)[0];
        assert!((s.average_gbs - 3.0).abs() < 1e-9 && (s.peak_gbs - 4.0).abs() < 1e-9);
        assert_eq!(super::within(&t, 1_100, 1_200).points.len(), 1);
        assert!(super::within(&t, 0, 1_000).points.is_empty());
    }
}
