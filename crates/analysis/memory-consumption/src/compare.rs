//! The memory-consumption rows in `kairos compare`: the bytes a result's program had
//! allocated at its end, replayed from the allocation table.

use kairos_analysis_api::{Comparable, Figure};
use kairos_result::ResultDir;

/// After the kernel entries (50).
const PLACE: u16 = 55;

/// The spec's comparison entry.
pub(crate) fn comparable(dir: &ResultDir) -> Comparable {
    let mut c = Comparable::default();
    let mut bytes = None;
    if dir.manifest().kind.as_deref() == Some(crate::SPEC.name) {
        match crate::tables::read(&dir.tables_path()) {
            Ok(data) => bytes = Some(crate::replay::replay(&data.rows, 0).heap_bytes),
            Err(e) => c.notes.push(format!(
                "{}: allocated bytes n/a ({e})",
                dir.path().display()
            )),
        }
    }
    c.figures
        .push(Figure::count(PLACE, "allocated bytes", bytes).words("less", "more"));
    c
}
