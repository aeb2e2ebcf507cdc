//! The system overview's rows in `kairos compare`: kernel entries by cause, from the
//! manifest section its collection writes.

use kairos_analysis_api::{Comparable, Figure};
use kairos_result::ResultDir;
use serde_json::Value;

/// Between the page faults (40) and the bandwidth (70).
const PLACE: u16 = 50;

/// The spec's comparison entry.
pub(crate) fn comparable(dir: &ResultDir) -> Comparable {
    let causes = dir
        .manifest()
        .extra
        .get("system_overview")
        .and_then(|so| so.get("kernel_entries"))
        .and_then(Value::as_object);
    // One row per cause either result has; one "kernel entries" row (n/a) when neither
    // has any.
    let mut figures = vec![Figure::count(PLACE, "kernel entries", None).keyed("")];
    for (cause, n) in causes.into_iter().flatten() {
        if let Some(n) = n.as_u64() {
            figures.push(
                Figure::count(PLACE, format!("kernel entries: {cause}"), Some(n))
                    .keyed(cause.as_str()),
            );
        }
    }
    Comparable {
        figures,
        ..Default::default()
    }
}
