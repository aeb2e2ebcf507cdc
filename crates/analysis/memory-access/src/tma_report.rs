//! `memory-bound`: the memory-bound share and its split over the run, per function and
//! over time (with a PMU); without the counters, one line saying why.

use kairos_report::{Cell, Column, Document, Section, Table};

use crate::tma::{Figures, MemoryBoundResult};

/// The split's metric names of a result, in the metric file's order.
fn parts(r: &MemoryBoundResult) -> Vec<String> {
    r.overall.split.iter().map(|(n, _)| n.clone()).collect()
}

fn figure_cells(f: &Figures, parts: &[String]) -> Vec<Cell> {
    let mut cells = vec![Cell::Percent(f.memory_bound)];
    for p in parts {
        cells.push(
            f.split
                .iter()
                .find(|(n, _)| n == p)
                .map_or(Cell::Empty, |(_, v)| Cell::Percent(*v)),
        );
    }
    cells
}

fn columns(first: &[Column], parts: &[String]) -> Vec<Column> {
    let mut cols = first.to_vec();
    cols.push(Column::right("Memory bound"));
    cols.extend(parts.iter().map(|p| Column::right(p.clone())));
    cols
}

pub(crate) fn document(
    r: Option<&MemoryBoundResult>,
    why_not: Option<&str>,
    limit: Option<usize>,
) -> Document {
    let mut doc = Document::new("Memory bound (TMA)");
    let mut s = Section::new("Whole run");
    let Some(r) = r else {
        s.push(
            "Memory bound",
            Cell::text(
                why_not
                    .unwrap_or("not measured: this result has no memory-bound counters")
                    .to_string(),
            ),
        );
        doc.push_section(s);
        return doc;
    };
    s.push("Memory bound", Cell::text(crate::tma_collect::sentence(r)));
    s.push("Units", Cell::text("Memory bound: percent of pipeline slots; its split: percent of clocks (Intel's TMA: the split need not add up to it)"));
    if r.functions_without_figures > 0 {
        s.push(
            "Functions with too few samples for a figure",
            Cell::UInt(r.functions_without_figures as u64),
        );
    }
    doc.push_section(s);
    let parts = parts(r);
    let mut t = Table::new(columns(
        &[Column::left("Function"), Column::right("Cycles")],
        &parts,
    ))
    .with_title("By function");
    for f in r.functions.iter().take(limit.unwrap_or(usize::MAX)) {
        let mut row = vec![
            Cell::text(f.function.clone()),
            Cell::Percent(f.cycles_share),
        ];
        row.extend(figure_cells(&f.figures, &parts));
        t.push_row(row);
    }
    doc.push_table(t);
    let mut t = Table::new(columns(
        &[
            Column::right("From").with_unit("ms"),
            Column::right("To").with_unit("ms"),
        ],
        &parts,
    ))
    .with_title("Over time");
    for i in &r.timeline {
        let mut row = vec![
            Cell::float(i.start_ns as f64 / 1e6, 1),
            Cell::float(i.end_ns as f64 / 1e6, 1),
        ];
        match &i.figures {
            Some(f) => row.extend(figure_cells(f, &parts)),
            None => row.extend(std::iter::repeat_n(Cell::Empty, parts.len() + 1)),
        }
        t.push_row(row);
    }
    doc.push_table(t);
    doc
}
