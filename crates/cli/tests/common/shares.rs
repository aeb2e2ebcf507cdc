//! Self shares by function, as the tests compare them: ours from `kairos report hotspots`
//! as CSV, perf's from the lines of `perf report --stdio --sort sym`.

use std::collections::BTreeMap;
use std::path::Path;

use super::{kairos, path_str};

/// Ours: `kairos report hotspots --group-by function` as CSV, self share (percent) by
/// function.
pub fn kairos_shares(result: &Path) -> BTreeMap<String, f64> {
    let out = kairos(&[
        "report",
        "hotspots",
        "-r",
        path_str(result),
        "--group-by",
        "function",
        "--format",
        "csv",
        "--limit",
        "0",
    ])
    .ok();
    let mut lines = out.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} column in {header:?}"))
    };
    let (f, p) = (col("Function"), col("Self %"));
    let mut shares = BTreeMap::new();
    for line in lines {
        // Function names of C programs have no commas; kernel and libc ones neither.
        let cells: Vec<&str> = line.split(',').collect();
        if let (Some(name), Some(share)) = (
            cells.get(f),
            cells.get(p).and_then(|x| x.parse::<f64>().ok()),
        ) {
            *shares
                .entry(name.trim_matches('"').to_string())
                .or_insert(0.0) += share;
        }
    }
    shares
}

/// perf's: the lines of `perf report --stdio -q --sort sym` ("    28.43%  [.] calibrate"),
/// share (percent) by symbol, and whether it is a kernel symbol (`[k]`).
pub fn perf_report_shares(text: &str) -> BTreeMap<String, (f64, bool)> {
    let mut shares = BTreeMap::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(pct), Some(kind), Some(sym)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if let Some(p) = pct.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) {
            let e = shares
                .entry(sym.to_string())
                .or_insert((0.0, kind == "[k]"));
            e.0 += p;
        }
    }
    shares
}
