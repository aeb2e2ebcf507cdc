//! What the reports share: a share cell, and the notes under tables (the false-sharing
//! fixes, where addresses came from), so that each report says them the same way.

use kairos_report::{Cell, Table};

use crate::lines::{Line, Verdict};
use crate::{AccessData, Source};

/// `part` of `whole` as a percentage cell (0% of nothing).
pub(crate) fn share(part: u64, whole: u64) -> Cell {
    Cell::Percent(if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    })
}

/// One sentence per false-sharing line: the object, each thread's bytes, and the fix.
pub(crate) fn fix_notes(d: &AccessData, lines: &[&Line], t: &mut Table) {
    for l in lines.iter().filter(|l| l.verdict == Verdict::FalseSharing) {
        let kind = d
            .built
            .objects
            .get(l.object as usize)
            .map_or(crate::objects::ObjectKind::Unknown, |o| o.kind);
        if let Some(fix) = l.fix(kind) {
            let by = if l.confirmed == Some(Verdict::FalseSharing) {
                " (confirmed by watchpoints)"
            } else {
                ""
            };
            t.push_note(format!(
                "False sharing on line {:#x} of {}{by}: {fix}.",
                l.addr, d.built.objects[l.object as usize].name
            ));
        }
    }
}

pub(crate) fn note_source(d: &AccessData, t: &mut Table) {
    if d.source == Source::Registers {
        t.push_note(format!(
            "Addresses from address sampling: each timer sample's instruction decoded with its registers; time is CPU time, not latency. {} of {} samples had an address.",
            d.sampled(),
            d.sampled() + d.unresolved.values().sum::<u64>()
        ));
    }
}
