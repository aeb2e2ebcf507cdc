//! The io analysis's rows in `kairos compare`: each device's and IIO stack's average
//! traffic (MB/s) and each socket's DDIO hit rate, from the result's `io.json`.

use std::collections::BTreeMap;

use kairos_analysis_api::{Comparable, Figure};
use kairos_result::ResultDir;

use crate::model::IoResult;

/// After the bandwidth (70), before the samples (90).
const PLACE: u16 = 80;

/// The spec's comparison entry.
pub(crate) fn comparable(dir: &ResultDir) -> Comparable {
    let mut c = Comparable::default();
    let r = match IoResult::load(dir.path()) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            c.notes
                .push(format!("{}: io n/a ({e})", dir.path().display()));
            return c;
        }
        None => return c,
    };
    c.figures = figures(&r)
        .into_iter()
        .map(|(name, v)| Figure::quantity(PLACE, name, Some(v), 3))
        .collect();
    c
}

/// Row names to values: `io lo rx, average (MB/s)`, `DDIO hit rate socket 1 (%)`.
fn figures(r: &IoResult) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (i, s) in r.series.iter().enumerate() {
        if s.unit == "bytes" && r.total(i) > 0.0 {
            let key = format!("io {} {}, average (MB/s)", s.name, s.flow);
            *out.entry(key).or_insert(0.0) += r.average(i) / 1e6;
        }
    }
    for s in crate::ddio::per_socket(r, &r.points) {
        if let Some(h) = s.hit_rate {
            out.insert(format!("DDIO hit rate socket {} (%)", s.socket), h);
        }
    }
    out
}
