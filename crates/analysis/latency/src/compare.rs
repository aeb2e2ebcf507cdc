//! The latency analysis's rows in `kairos compare`: how many requests, their p50, p99,
//! p99.9 and maximum, how many were slow, and what slow requests spent their time on (the
//! mean of each part), from the result's `latency.json`.

use kairos_analysis_api::{Comparable, Figure};
use kairos_result::ResultDir;

use crate::model::{LatencyResult, Parts};

/// After the page faults (40), before the bandwidth (70).
const PLACE: u16 = 50;

/// The spec's comparison entry.
pub(crate) fn comparable(dir: &ResultDir) -> Comparable {
    let mut c = Comparable::default();
    match LatencyResult::load(dir.path()) {
        Some(Ok(r)) => c.figures = figures(&r),
        Some(Err(e)) => c
            .notes
            .push(format!("{}: requests n/a ({e})", dir.path().display())),
        None => {}
    }
    c
}

fn figures(r: &LatencyResult) -> Vec<Figure> {
    let us = |ns: u64| ns as f64 / 1e3;
    let mut v = vec![
        Figure::count(PLACE, "requests", Some(r.count())).keyed("a requests"),
        Figure::quantity(PLACE, "request p50 (us)", Some(us(r.percentile(50.0))), 1)
            .keyed("b p50")
            .words("faster", "slower"),
        Figure::quantity(PLACE, "request p99 (us)", Some(us(r.percentile(99.0))), 1)
            .keyed("c p99")
            .words("faster", "slower"),
        Figure::quantity(PLACE, "request p99.9 (us)", Some(us(r.percentile(99.9))), 1)
            .keyed("d p99.9")
            .words("faster", "slower"),
        Figure::quantity(
            PLACE,
            "request max (us)",
            (r.count() > 0).then(|| us(r.max_ns())),
            1,
        )
        .keyed("e max")
        .words("faster", "slower"),
        Figure::count(
            PLACE,
            format!("slow requests (above {:.0} us)", us(r.threshold_ns)),
            Some(r.requests.iter().filter(|q| q.slow).count() as u64),
        )
        .keyed("f slow"),
    ];
    let slow: Vec<&crate::model::Request> = r.requests.iter().filter(|q| q.slow).collect();
    for (i, name) in Parts::NAMES.iter().enumerate() {
        let mean = (!slow.is_empty()).then(|| {
            slow.iter().map(|q| q.parts.values()[i]).sum::<u64>() as f64 / slow.len() as f64 / 1e3
        });
        v.push(
            Figure::quantity(PLACE, format!("slow requests: {name} (mean us)"), mean, 1)
                .keyed(format!("g{i}"))
                .words("less", "more"),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Request;

    #[test]
    fn the_rows_give_the_distribution_and_the_slow_requests_parts() {
        let mut r = LatencyResult {
            threshold_ns: 100_000,
            ..LatencyResult::default()
        };
        for i in 0..100u64 {
            let mut q = Request {
                id: i,
                duration_ns: 10_000 + i * 1000,
                ..Request::default()
            };
            q.slow = q.duration_ns > r.threshold_ns;
            q.parts.cpu_ns = q.duration_ns;
            r.requests.push(q);
        }
        let f = figures(&r);
        assert_eq!(f[0].value, Some(kairos_analysis_api::Measure::Count(100)));
        assert_eq!(
            f[2].value,
            Some(kairos_analysis_api::Measure::Quantity {
                value: 108.0,
                decimals: 1
            })
        );
        assert_eq!(f[5].name, "slow requests (above 100 us)");
        assert_eq!(f[5].value, Some(kairos_analysis_api::Measure::Count(9)));
        assert_eq!(
            f[6].value,
            Some(kairos_analysis_api::Measure::Quantity {
                value: 105.0,
                decimals: 1
            })
        );
    }
}
