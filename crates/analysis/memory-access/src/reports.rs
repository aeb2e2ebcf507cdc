//! The reports: `summary`, `memory-objects`, `memory-functions` (`cache-lines` is in
//! `lines_report`). Each is a kairos-report document, so text, CSV and JSON come from one
//! place.

use kairos_report::{Cell, Column, Document, Section, Table};

use crate::lines::{lines, Line, Verdict};
use crate::notes::{fix_notes, note_source, share};
use crate::totals::{by_function, by_object};
use crate::{bucket_name, AccessData, Source, BUCKETS};

/// Weight column: time for address sampling, latency with a PMU.
fn weight_column(d: &AccessData) -> Column {
    match d.source {
        Source::Pmu => Column::right("Latency").with_unit("cycles"),
        Source::Watchpoint => Column::right("Hits"),
        Source::Event => Column::right("Events"),
        Source::Registers => Column::right("Time"),
    }
}

fn weight_cell(d: &AccessData, w: u64) -> Cell {
    match d.source {
        Source::Registers => Cell::ns(w),
        _ => Cell::UInt(w),
    }
}

/// `memory-objects`: per object, its samples, share, loads, stores and threads; with a
/// PMU also latency and the level breakdown.
pub fn memory_objects(d: &AccessData, limit: Option<usize>) -> Table {
    let pmu = d.source == Source::Pmu;
    let mut cols = vec![
        Column::left("Object"),
        Column::left("Kind"),
        Column::right("Samples"),
        Column::right("Share"),
        weight_column(d),
        Column::right("Loads"),
        Column::right("Stores"),
        Column::right("Threads"),
    ];
    if pmu {
        cols.push(Column::right("Avg latency").with_unit("cycles"));
        cols.extend(BUCKETS.iter().map(|&b| Column::right(bucket_name(b))));
    }
    let mut t = Table::new(cols).with_title("Memory objects");
    let rows = by_object(d.located());
    let total: u64 = rows.iter().map(|(_, t)| t.weight).sum();
    for (object, tot) in rows.iter().take(limit.unwrap_or(usize::MAX)) {
        let o = &d.built.objects[*object as usize];
        let mut row = vec![
            Cell::text(o.name.clone()),
            Cell::text(o.kind.name()),
            Cell::UInt(tot.samples),
            share(tot.weight, total),
            weight_cell(d, tot.weight),
            Cell::UInt(tot.loads),
            Cell::UInt(tot.stores),
            Cell::UInt(tot.threads.len() as u64),
        ];
        if pmu {
            row.push(
                tot.average_latency()
                    .map_or(Cell::Empty, |v| Cell::float(v, 1)),
            );
            row.extend(tot.levels.iter().map(|&n| Cell::UInt(n)));
        }
        t.push_row(row);
    }
    note_source(d, &mut t);
    t
}

pub use crate::lines_report::cache_lines;
use crate::lines_report::confirmed;

/// `memory-functions`: which functions access which objects, how much.
pub fn memory_functions(d: &AccessData, limit: Option<usize>) -> Table {
    let cols = vec![
        Column::left("Function"),
        Column::left("Object"),
        Column::right("Samples"),
        Column::right("Share"),
        weight_column(d),
        Column::right("Loads"),
        Column::right("Stores"),
    ];
    let mut t = Table::new(cols).with_title("Memory accesses by function and object");
    let rows = by_function(d.located());
    let total: u64 = rows.iter().map(|(_, t)| t.weight).sum();
    for ((function, object), tot) in rows.iter().take(limit.unwrap_or(usize::MAX)) {
        t.push_row(vec![
            Cell::text(
                d.built
                    .functions
                    .get(*function as usize)
                    .cloned()
                    .unwrap_or_default(),
            ),
            Cell::text(d.built.objects[*object as usize].name.clone()),
            Cell::UInt(tot.samples),
            share(tot.weight, total),
            weight_cell(d, tot.weight),
            Cell::UInt(tot.loads),
            Cell::UInt(tot.stores),
        ]);
    }
    note_source(d, &mut t);
    t
}

/// `summary`: where the addresses came from, how many samples gave one, the top objects
/// and the lines with a sharing problem.
pub fn summary(d: &AccessData, meta: &[(String, String)], top: usize) -> Document {
    let mut doc = Document::new("Memory access");
    let mut s = Section::new("Collection");
    for (k, v) in meta {
        s.push(k.clone(), Cell::text(v.clone()));
    }
    s.push(
        "Address source",
        Cell::text(format!("{} ({})", d.source.name(), d.source_reason)),
    );
    let with_address = d.sampled();
    let unresolved: u64 = d.unresolved.values().sum();
    if let Some(why) = &d.memory_bound {
        s.push("Memory bound", Cell::text(why.clone()));
    }
    s.push("Samples with a data address", Cell::UInt(with_address));
    s.push("Samples without one", Cell::UInt(unresolved));
    crate::drops::push_rows(d, &mut s);
    if d.watched() {
        // Exact accesses, not samples: never added into the figures above.
        s.push("Watchpoint hits", Cell::UInt(d.watch_hits()));
    }
    if d.source == Source::Registers {
        s.push(
            "Weights",
            Cell::text("CPU time of the sampled thread at the access (not latency: no PMU)"),
        );
    }
    doc.push_section(s);
    doc.push_table(memory_objects(d, Some(top)));
    let shared: Vec<Line> = lines(d.located_all())
        .into_iter()
        .filter(|l| l.verdict != Verdict::None || l.confirmed.is_some_and(|v| v != Verdict::None))
        .take(top)
        .collect();
    let watched = d.watched();
    let mut cols = vec![
        Column::left("Line"),
        Column::left("Object"),
        Column::left("Verdict"),
        Column::right("Threads"),
        Column::sentence("Fix"),
    ];
    if watched {
        cols.insert(4, Column::left("Confirmed"));
    }
    let mut t = Table::new(cols).with_title("Cache lines shared by threads");
    for l in &shared {
        let mut row = vec![
            Cell::text(format!("{:#x}", l.addr)),
            Cell::text(d.built.objects[l.object as usize].name.clone()),
            Cell::text(l.verdict.name()),
            Cell::UInt(l.threads.len() as u64),
            Cell::text(
                l.fix(d.built.objects[l.object as usize].kind)
                    .unwrap_or_default(),
            ),
        ];
        if watched {
            row.insert(4, Cell::text(confirmed(l)));
        }
        t.push_row(row);
    }
    fix_notes(d, &shared.iter().collect::<Vec<_>>(), &mut t);
    if shared.is_empty() {
        t.push_note("No line was written by one thread and used by another at the same time: no false or true sharing was sampled.");
    }
    doc.push_table(t);
    crate::numa::report::summary_part(d, &mut doc);
    doc
}
