//! The io analysis's figures: each device's and IIO stack's average traffic (MB/s) and
//! each socket's DDIO hit rate, from the result's `io.json`.

use std::collections::BTreeMap;
use std::path::Path;

use kairos_analysis_io::model::IoResult;
use kairos_report::{Cell, Table};

use crate::{phrase, Facts};

/// Row names to values: `io lo rx, average (MB/s)`, `DDIO hit rate socket 1 (%)`.
pub fn facts(dir: &Path, notes: &mut Vec<String>) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let r = match IoResult::load(dir) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            notes.push(format!("{}: io n/a ({e})", dir.display()));
            return out;
        }
        None => return out,
    };
    for (i, s) in r.series.iter().enumerate() {
        if s.unit == "bytes" && r.total(i) > 0.0 {
            let key = format!("io {} {}, average (MB/s)", s.name, s.flow);
            *out.entry(key).or_insert(0.0) += r.average(i) / 1e6;
        }
    }
    for s in kairos_analysis_io::ddio::per_socket(&r, &r.points) {
        if let Some(h) = s.hit_rate {
            out.insert(format!("DDIO hit rate socket {} (%)", s.socket), h);
        }
    }
    out
}

/// One row per figure either result has; n/a where one lacks it.
pub fn rows(t: &mut Table, a: &Facts, b: &Facts) {
    let keys: std::collections::BTreeSet<&String> = a.io.keys().chain(b.io.keys()).collect();
    let na = || Cell::text("n/a");
    for k in keys {
        let (x, y) = (a.io.get(k).copied(), b.io.get(k).copied());
        let v = |v: Option<f64>| v.map(|s| Cell::float(s, 3)).unwrap_or_else(na);
        let (d, r, w) = match (x, y) {
            (Some(x), Some(y)) => (
                Cell::float(y - x, 3),
                if x > 0.0 { Cell::float(y / x, 3) } else { na() },
                Cell::text(phrase(x, y, "lower", "higher")),
            ),
            _ => (na(), na(), na()),
        };
        t.push_row(vec![Cell::text(k), v(x), v(y), d, r, w]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_averages_and_hit_rates_side_by_side() {
        let f = |avg: f64, hit: f64| Facts {
            io: BTreeMap::from([
                ("io lo rx, average (MB/s)".to_string(), avg),
                ("DDIO hit rate socket 1 (%)".to_string(), hit),
            ]),
            ..Default::default()
        };
        let s = crate::sentences(&f(10.0, 90.0), &f(30.0, 45.0));
        assert!(
            s.contains(&"io lo rx, average (MB/s): 3.0x higher".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"DDIO hit rate socket 1 (%): 2.0x lower".to_string()),
            "{s:?}"
        );
    }
}
