//! The system overview's rows in `kairos compare`: kernel entries by cause, its measured
//! kernel-time share, and its page-fault count where the target's rusage is not recorded,
//! from the manifest section its collection writes.

use kairos_analysis_api::{Comparable, Figure, KERNEL_SHARE, PAGE_FAULTS};
use kairos_result::ResultDir;
use serde_json::Value;

/// Between the page faults (40) and the bandwidth (70).
const PLACE: u16 = 50;

/// The spec's comparison entry.
pub(crate) fn comparable(dir: &ResultDir) -> Comparable {
    let so = dir.manifest().extra.get("system_overview");
    let causes = so
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
    let share = so
        .and_then(|so| so.get("kernel_time_share_pct"))
        .and_then(Value::as_f64);
    if share.is_some() {
        figures.push(
            Figure::share(KERNEL_SHARE.0, KERNEL_SHARE.1, share).measured_from("system-overview"),
        );
    }
    let faults = so
        .and_then(|so| so.get("page_faults"))
        .and_then(Value::as_u64);
    Comparable {
        figures,
        fallback: vec![Figure::count(PAGE_FAULTS.0, PAGE_FAULTS.1, faults)],
        ..Default::default()
    }
}
