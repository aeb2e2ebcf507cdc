//! The score as report tables (text, CSV, JSON through kairos-report).

use kairos_report::{Cell, Column, Document, Section, Table};

use crate::score::{recall_pct, ScoreTable};

impl ScoreTable {
    /// One row per method: points per sample, share error, events found and recall.
    pub fn to_table(&self) -> Table {
        let mut t = Table::new(vec![
            Column::left("Method"),
            Column::right("Points/sample"),
            Column::right("Share error").with_unit("%"),
            Column::right("Found"),
            Column::right("Events"),
            Column::right("Recall").with_unit("%"),
            Column::sentence("Note"),
        ]);
        for r in &self.rows {
            let row = match r.result {
                Some(m) => vec![
                    Cell::text(r.method.to_string()),
                    Cell::float(m.points_per_sample, 2),
                    Cell::Percent(m.share_error * 100.0),
                    Cell::UInt(m.events_found as u64),
                    Cell::UInt(self.events_total as u64),
                    Cell::Percent(recall_pct(m.events_found, self.events_total)),
                    r.note.clone().map_or(Cell::Empty, Cell::Text),
                ],
                None => vec![
                    Cell::text(r.method.to_string()),
                    Cell::Empty,
                    Cell::Empty,
                    Cell::Empty,
                    Cell::UInt(self.events_total as u64),
                    Cell::Empty,
                    Cell::text(r.note.clone().unwrap_or_else(|| "not available".into())),
                ],
            };
            t.push_row(row);
        }
        let o = &self.options;
        t.push_note(format!(
            "Share error: mean over {} buckets of {} of the total variation distance between the exact self-time shares of the functions (from the trace) and the method's (from its points); 0% = same mix, 100% = disjoint or no points.",
            self.buckets,
            dur(o.bucket_ns)
        ));
        t.push_note(format!(
            "Recall: calls of `{}` lasting {} or more in the trace, found when the method put weight on it in a {} bucket the call overlaps.",
            o.event_function,
            dur(o.event_min_ns),
            dur(o.event_bucket_ns)
        ));
        t
    }

    /// The table under a section saying what was scored; `emulation` describes the
    /// emulated LBR (e.g. from the result's branch info).
    pub fn to_document(&self, emulation: &str) -> Document {
        let mut d = Document::new("Time-assignment score (emulated LBR vs exact trace)");
        let mut s = Section::new("Input");
        s.push("Emulation", Cell::text(emulation));
        s.push("Samples", Cell::UInt(self.samples as u64));
        s.push("Share buckets", Cell::ns(self.options.bucket_ns));
        s.push(
            "Event function",
            Cell::text(self.options.event_function.clone()),
        );
        s.push("Events", Cell::UInt(self.events_total as u64));
        d.push_section(s);
        d.push_table(self.to_table().with_title("Accuracy per method"));
        d
    }
}

/// A short human duration for notes (tables keep typed cells).
pub(crate) fn dur(ns: u64) -> String {
    if ns >= 1_000_000 && ns.is_multiple_of(1_000_000) {
        format!("{} ms", ns / 1_000_000)
    } else if ns >= 1_000 && ns.is_multiple_of(1_000) {
        format!("{} us", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}
