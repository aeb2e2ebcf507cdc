//! The `cache-lines` report: each line's object and offsets, threads, reads and writes per
//! offset, the verdict and the fix; watchpoint hits where the line was watched.

use kairos_report::{Cell, Column, Document, Table};

use crate::lines::{lines, Line, Verdict};
use crate::notes::{fix_notes, note_source, share};
use crate::{AccessData, Source};

/// The watchpoint columns, only in results that have hits (after HITM).
const WATCH_AT: usize = 10;

/// `cache-lines`: lines touched by more than one thread first, each with its verdict,
/// then a table of offsets by thread for those lines.
pub fn cache_lines(d: &AccessData, limit: Option<usize>) -> Document {
    let mut all = lines(d.located_all());
    // Shared lines first, each group by samples.
    all.sort_by_key(|l| (l.threads.len() < 2, std::cmp::Reverse(l.samples), l.addr));
    let shown: Vec<&Line> = all.iter().take(limit.unwrap_or(usize::MAX)).collect();
    let total: u64 = all.iter().map(|l| l.samples).sum();
    let watched = d.watched();
    let mut cols = vec![
        Column::left("Line"),
        Column::left("Object"),
        Column::left("Offsets"),
        Column::left("Verdict"),
        Column::right("Threads"),
        Column::right("Samples"),
        Column::right("Share"),
        Column::right("Loads"),
        Column::right("Stores"),
        Column::right("HITM"),
        Column::left("Functions"),
        Column::sentence("Fix"),
    ];
    if watched {
        cols.splice(
            WATCH_AT..WATCH_AT,
            [Column::right("Watch hits"), Column::left("Confirmed")],
        );
    }
    let mut t = Table::new(cols).with_title("Cache lines");
    for l in &shown {
        t.push_row(line_row(d, l, total, watched));
    }
    let false_sharing = all
        .iter()
        .filter(|l| l.verdict == Verdict::FalseSharing)
        .count();
    t.push_note(format!(
        "{} lines, {} touched by more than one thread, {false_sharing} with false sharing. False sharing: two or more threads at the same time on disjoint bytes of a line, at least one writing; true sharing: a byte written by one thread and used by another.",
        all.len(),
        all.iter().filter(|l| l.threads.len() > 1).count()
    ));
    fix_notes(d, &shown, &mut t);
    note_source(d, &mut t);
    let mut doc = Document::default();
    doc.push_table(t);
    let offsets = offsets_table(&shown);
    if !offsets.rows.is_empty() {
        doc.push_table(offsets);
    }
    let hits = hits_table(&shown);
    if !hits.rows.is_empty() {
        doc.push_table(hits);
    }
    doc
}

/// One line's row of the cache lines table.
fn line_row(d: &AccessData, l: &Line, total: u64, watched: bool) -> Vec<Cell> {
    let object = &d.built.objects[l.object as usize].name;
    let loads: u64 = l.threads.iter().map(|t| t.loads).sum();
    let stores: u64 = l.threads.iter().map(|t| t.stores).sum();
    let mut functions: Vec<(&u32, &u64)> = l.functions.iter().collect();
    functions.sort_by(|a, b| b.1.cmp(a.1));
    let names: Vec<&str> = functions
        .iter()
        .take(3)
        .filter_map(|(f, _)| d.built.functions.get(**f as usize).map(String::as_str))
        .collect();
    let mut row = vec![
        Cell::text(format!("{:#x}", l.addr)),
        Cell::text(object.clone()),
        Cell::text(range(l.object_offset, 0, 63)),
        Cell::text(l.verdict.name()),
        Cell::UInt(l.threads.len() as u64),
        Cell::UInt(l.samples),
        share(l.samples, total),
        Cell::UInt(loads),
        Cell::UInt(stores),
        if d.source == Source::Pmu {
            Cell::UInt(l.hitm)
        } else {
            Cell::Empty
        },
        Cell::text(names.join(", ")),
        Cell::text(
            l.fix(
                d.built
                    .objects
                    .get(l.object as usize)
                    .map_or(crate::objects::ObjectKind::Unknown, |o| o.kind),
            )
            .unwrap_or_default(),
        ),
    ];
    if watched {
        row.splice(
            WATCH_AT..WATCH_AT,
            [Cell::UInt(l.watch_hits), Cell::text(confirmed(l))],
        );
    }
    row
}

/// Loads and stores per offset range and thread, of the lines used by more than one
/// thread.
fn offsets_table(shown: &[&Line]) -> Table {
    let mut offsets = Table::new(vec![
        Column::left("Line"),
        Column::left("Offsets"),
        Column::right("Thread"),
        Column::right("Loads"),
        Column::right("Stores"),
    ])
    .with_title("Offsets by thread (lines used by more than one thread)");
    for l in shown.iter().filter(|l| l.threads.len() > 1) {
        for th in &l.threads {
            for (&first, &(last, ld, st)) in &th.by_offset {
                offsets.push_row(vec![
                    Cell::text(format!("{:#x}", l.addr)),
                    Cell::text(range(l.object_offset, first, last)),
                    Cell::UInt(u64::from(th.tid)),
                    Cell::UInt(ld),
                    Cell::UInt(st),
                ]);
            }
        }
    }
    offsets
}

/// Watchpoint hits per offset range and thread, of the lines watched.
fn hits_table(shown: &[&Line]) -> Table {
    let mut hits = Table::new(vec![
        Column::left("Line"),
        Column::left("Offsets"),
        Column::right("Thread"),
        Column::right("Write hits"),
        Column::right("Other hits"),
    ])
    .with_title("Watchpoint hits by thread");
    for l in shown.iter().filter(|l| l.watch_hits > 0) {
        for th in &l.watch {
            for (&first, &(last, reads, writes)) in &th.by_offset {
                hits.push_row(vec![
                    Cell::text(format!("{:#x}", l.addr)),
                    Cell::text(range(l.object_offset, first, last)),
                    Cell::UInt(u64::from(th.tid)),
                    Cell::UInt(writes),
                    Cell::UInt(reads),
                ]);
            }
        }
    }
    hits.push_note("Hits are counts of accesses that trapped a hardware watchpoint (exact, not sampled): write hits are known writes; other hits are reads, or accesses the hardware did not tell apart.");
    hits
}

/// Whether watchpoint hits confirm the sampled verdict: yes, no (watched, and the hits
/// show otherwise), or a dash for a line not watched.
pub(crate) fn confirmed(l: &Line) -> String {
    match l.confirmed {
        None => "\u{2014}".into(),
        Some(v) if v == l.verdict && v != Verdict::None => "yes".into(),
        Some(Verdict::None) => "no".into(),
        Some(v) => format!("no: the hits show {}", v.name()),
    }
}

/// Offsets `first..=last` of a line as offsets in its object.
fn range(object_offset: i64, first: u8, last: u8) -> String {
    format!(
        "{}..{}",
        object_offset + i64::from(first),
        object_offset + i64::from(last)
    )
}
