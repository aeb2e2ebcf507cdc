//! The memory-access rows in `kairos compare`: cache lines by verdict, and where placement
//! and first touch were recorded, the NUMA figures (remote shares, objects with a
//! placement problem, pages per node), from the manifest section the analysis writes.

use kairos_analysis_api::{Comparable, Figure, EMULATED_MACHINE};
use kairos_result::ResultDir;
use serde_json::Value;

use crate::manifest_key::EXTRA;

/// After the allocated bytes (55), before the bandwidth (70): one place per row.
const FALSE_SHARING: u16 = 60;
const TRUE_SHARING: u16 = 61;
const REMOTE: u16 = 62;
const PMU_REMOTE: u16 = 63;
const PROBLEMS: u16 = 64;
const PAGES: u16 = 65;

/// The spec's comparison entry.
pub(crate) fn comparable(dir: &ResultDir) -> Comparable {
    let ma = dir.manifest().extra.get(EXTRA);
    let u = |k: &str| ma.and_then(|v| v.get(k)).and_then(Value::as_u64);
    let numa = ma.and_then(|v| v.get("numa"));
    // Only where placement and first touch were recorded: an imported or numa=off result
    // has no pages to compare.
    let recorded = numa.filter(|n| n.get("recorded").and_then(Value::as_bool) == Some(true));
    let f = |n: Option<&Value>, k: &str| n.and_then(|n| n.get(k)).and_then(Value::as_f64);
    let mut figures = vec![
        Figure::count(
            FALSE_SHARING,
            "cache lines with false sharing",
            u("false_sharing_lines"),
        ),
        Figure::count(
            TRUE_SHARING,
            "cache lines with true sharing",
            u("true_sharing_lines"),
        ),
        Figure::share(
            REMOTE,
            "remote accesses (estimated)",
            f(recorded, "remote_share_pct"),
        ),
        Figure::share(
            PMU_REMOTE,
            "remote accesses (PMU)",
            f(numa, "pmu_remote_share_pct"),
        ),
        Figure::count(
            PROBLEMS,
            "objects with a NUMA problem",
            recorded
                .and_then(|n| n.get("problems"))
                .and_then(Value::as_u64),
        ),
    ];
    let pages = recorded
        .and_then(|n| n.get("pages_by_node"))
        .and_then(Value::as_object);
    for (node, n) in pages.into_iter().flatten() {
        if let Some(n) = n.as_u64() {
            figures.push(
                Figure::count(PAGES, format!("pages on node {node}"), Some(n))
                    .keyed(node.as_str())
                    .zero_when_missing(),
            );
        }
    }
    let emulated = numa
        .and_then(|n| n.get("emulated"))
        .and_then(Value::as_bool)
        == Some(true);
    Comparable {
        figures,
        timing_caveat: emulated.then(|| EMULATED_MACHINE.to_string()),
        ..Default::default()
    }
}
