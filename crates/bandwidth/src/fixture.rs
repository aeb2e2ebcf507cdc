//! Timelines from hand-written tick files (`tests/fixtures/*-ticks.json`): per domain the
//! read and write MB/s of a recorded snapshot, scaled at each tick. Tests of the reports and
//! the page use them where this machine has no bandwidth counters to record.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::timeline::{Flow, Maximum, Point, Timeline};

#[derive(Deserialize)]
struct Ticks {
    tick_ms: u64,
    domain: String,
    mb_per_s: BTreeMap<u32, BTreeMap<String, f64>>,
    scale: Vec<f64>,
    maximum: Option<Maximum>,
}

/// The timeline of a tick file, its first tick starting at `start_ns`.
pub fn timeline(json: &str, start_ns: u64) -> Result<Timeline, String> {
    let f: Ticks = serde_json::from_str(json).map_err(|e| format!("not a tick file: {e}"))?;
    let dur = f.tick_ms * 1_000_000;
    let mut points = Vec::new();
    for (i, k) in f.scale.iter().enumerate() {
        for (domain, flows) in &f.mb_per_s {
            for (name, mb) in flows {
                let flow = match name.as_str() {
                    "read" => Flow::Read,
                    "write" => Flow::Write,
                    "link" => Flow::Link,
                    "total" => Flow::Total,
                    "local" => Flow::Local,
                    other => return Err(format!("unknown flow {other:?}")),
                };
                points.push(Point {
                    t_ns: start_ns + i as u64 * dur,
                    dur_ns: dur,
                    domain: *domain,
                    flow,
                    bytes_per_s: mb * 1e6 * k,
                });
            }
        }
    }
    Ok(Timeline {
        source: "uncore counters (recorded figures)".into(),
        tick_ms: f.tick_ms,
        domain: f.domain,
        points,
        maximum: f.maximum,
        ..Timeline::default()
    })
}

/// The pcm snapshot's tick file shipped with the crate's tests.
pub const PCM_2S: &str = include_str!("../tests/fixtures/pcm-2s-ticks.json");

#[cfg(test)]
mod tests {
    #[test]
    fn the_pcm_ticks_give_the_snapshots_figures_at_full_scale() {
        let t = super::timeline(super::PCM_2S, 5).unwrap_or_else(|e| panic!("{e}"));
        let full = t
            .dram_intervals()
            .into_iter()
            .find(|x| x.0 == 5 + 3 * 100_000_000)
            .map(|x| x.2 / 1e6)
            .unwrap_or_default();
        // System Memory Throughput of the snapshot: 72140.62 MB/s.
        assert!((full - 72140.62).abs() < 0.01, "{full}");
        assert_eq!(t.points.len(), 20 * 4);
        assert!(super::timeline("{}", 0).is_err());
    }
}
