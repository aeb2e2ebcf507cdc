//! The `numa` report: the machine's nodes and how placement was learnt, then per memory
//! object its pages by node, huge pages, the nodes its threads ran on, its estimated remote
//! share and who first touched it; the first touches with their call stacks; one sentence
//! per problem with its fix. A short part of it goes into the `summary` report.

use std::collections::BTreeMap;

use kairos_report::{Cell, Column, Document, Section, Table};

use super::attribute::{NumaData, ObjectNuma};
use super::problems::{problems, Kind};
use super::{Summary, UNKNOWN_NODE};
use crate::notes::share;
use crate::objects::Object;

/// A result's NUMA side, as the reports read it.
#[derive(Debug, Clone, Default)]
pub struct Numa {
    pub summary: Summary,
    pub data: NumaData,
}

fn node_name(n: u32) -> String {
    if n == UNKNOWN_NODE {
        "?".into()
    } else {
        n.to_string()
    }
}

/// `0: 4, 1: 4`.
fn by_node(m: &BTreeMap<u32, u64>) -> String {
    m.iter()
        .filter(|(_, c)| **c > 0)
        .map(|(n, c)| format!("{}: {c}", node_name(*n)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn duration(ns: u64) -> String {
    match ns {
        n if n >= 1_000_000_000 => format!("{:.1} s", n as f64 / 1e9),
        n => format!("{} ms", n / 1_000_000),
    }
}

/// The header lines: nodes, placement, first touch, remote share. Values stay short (the
/// text report cuts them at 60 characters); the reasons behind them are the result's notes.
pub fn section(s: &Summary, title: &str) -> Section {
    let mut sec = Section::new(title);
    let nodes = s.nodes();
    match &s.topology {
        Some(t) => sec.push(
            "Nodes",
            Cell::text(format!("{} ({})", t.nodes.len(), t.describe())),
        ),
        None => sec.push("Nodes", Cell::text("unknown (not recorded in this result)")),
    }
    if let Some(why) = &s.why_not {
        sec.push(
            "Placement and first touch",
            Cell::text(format!("not recorded: {why}")),
        );
    }
    if nodes == 1 {
        sec.push(
            "Remote access",
            Cell::text("none possible: one node, every access is local"),
        );
    }
    if s.emulated {
        sec.push(
            "Run time",
            Cell::text("not comparable: emulated nodes (QEMU TCG) are equally fast"),
        );
    }
    if s.recorded {
        push_recorded(&mut sec, s);
    }
    if s.samples_with_node > 0 || s.recorded {
        sec.push(
            "Sampled accesses with a node",
            Cell::UInt(s.samples_with_node),
        );
        if nodes > 1 || s.remote_share_pct.is_some_and(|p| p > 0.0) {
            sec.push(
                "Remote (estimated: page on another node than the CPU)",
                s.remote_share_pct.map_or(Cell::Empty, Cell::Percent),
            );
        }
    }
    if s.pmu_samples > 0 {
        sec.push(
            "Remote (PMU data source)",
            s.pmu_remote_share_pct.map_or(Cell::Empty, Cell::Percent),
        );
    }
    sec
}

/// The lines of a result that recorded placement: how it was learnt, the faults, and
/// the pages by node.
fn push_recorded(sec: &mut Section, s: &Summary) {
    sec.push("Placement", Cell::text(placement_text(s)));
    if s.stride > 1 {
        sec.push(
            "Pages asked",
            Cell::text(format!("every {}th (the mappings exceed 16 GiB)", s.stride)),
        );
    }
    let from = match (s.fault_events.is_empty(), s.write_flag) {
        (true, _) => "no page-fault event".to_string(),
        (false, true) => "page-fault tracepoints, read/write told apart".to_string(),
        (false, false) => "software page-fault events, no read/write flag".to_string(),
    };
    sec.push(
        "First touch",
        Cell::text(format!(
            "{} faults ({from})",
            kairos_report::thousands(s.faults)
        )),
    );
    if s.lost_records > 0 && !s.fault_events.is_empty() {
        // A lost fault leaves its page "before the recording": say why it may not be.
        sec.push(
            "Records lost (ring full)",
            Cell::text(format!(
                "{}: a page whose fault was lost has no first touch",
                kairos_report::thousands(s.lost_records)
            )),
        );
    }
    for (n, c) in &s.pages_by_node {
        sec.push(
            format!("Pages on node {}", node_name(*n)),
            Cell::text(pages_text(*c)),
        );
    }
    let after = if s.placement_from.is_some() {
        "Placed by first touch (no physical address), node"
    } else {
        "Touched after the last query, node"
    };
    for (n, c) in s.estimated_by_node.iter().filter(|(_, c)| **c > 0) {
        sec.push(
            format!("{after} {}", node_name(*n)),
            Cell::text(pages_text(*c)),
        );
    }
    sec.push(
        "Transparent huge pages (4 KiB pages)",
        Cell::UInt(s.huge_pages),
    );
}

/// How placement was learnt: its source, or the queries and how long before the end.
fn placement_text(s: &Summary) -> String {
    match (&s.placement_missing, s.last_query_before_end_ns) {
        _ if s.placement_from.is_some() => s.placement_from.clone().unwrap_or_default(),
        (Some(_), _) => "not queried (see the notes): pages placed by first touch".to_string(),
        (None, Some(before)) => {
            let q = if s.queries == 1 { "1 query, " } else { "" };
            let many = if s.queries == 1 {
                String::new()
            } else {
                format!("{} queries, the last ", s.queries)
            };
            format!(
                "move_pages(2): {q}{many}{} before the end",
                duration(before)
            )
        }
        (None, None) => "not queried".into(),
    }
}

/// `65,536 pages (256.0 MiB)`.
fn pages_text(c: u64) -> String {
    let unit = if c == 1 { "page" } else { "pages" };
    format!(
        "{} {unit} ({:.1} MiB)",
        kairos_report::thousands(c),
        (c * super::PAGE) as f64 / f64::from(1 << 20)
    )
}

/// Every node an object row needs a column for.
fn nodes_of(s: &Summary, d: &NumaData) -> Vec<u32> {
    let mut v: Vec<u32> = s
        .topology
        .iter()
        .flat_map(|t| t.nodes.iter().map(|n| n.id))
        .collect();
    for o in &d.objects {
        v.extend(o.pages_by_node().keys().copied());
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// `Memory objects by node`.
pub fn objects_table(objects: &[Object], s: &Summary, d: &NumaData, limit: Option<usize>) -> Table {
    let nodes = nodes_of(s, d);
    let pmu = s.pmu_samples > 0;
    let mut cols = vec![
        Column::left("Object"),
        Column::left("Kind"),
        Column::right("Pages"),
    ];
    cols.extend(
        nodes
            .iter()
            .map(|n| Column::right(format!("Node {}", node_name(*n)))),
    );
    cols.extend([
        Column::right("After last query"),
        Column::right("Huge"),
        Column::left("Threads by node"),
        Column::right("Samples"),
        Column::right("Remote (est.)"),
    ]);
    if pmu {
        cols.push(Column::right("Remote (PMU)"));
    }
    cols.push(Column::left("First touch"));
    let mut t = Table::new(cols).with_title("Memory objects by node");
    let rows = d
        .objects
        .iter()
        .filter(|o| o.total_pages() > 0 || o.samples_total() > 0);
    for o in rows.take(limit.unwrap_or(usize::MAX)) {
        let Some(obj) = objects.get(o.object as usize) else {
            continue;
        };
        let pages = o.pages_by_node();
        let mut row = vec![
            Cell::text(obj.name.clone()),
            Cell::text(obj.kind.name()),
            Cell::UInt(o.total_pages()),
        ];
        row.extend(
            nodes
                .iter()
                .map(|n| Cell::UInt(pages.get(n).copied().unwrap_or(0))),
        );
        row.push(Cell::UInt(o.estimated.values().sum()));
        row.push(Cell::UInt(o.huge_pages));
        row.push(Cell::text(by_node(&o.threads)));
        row.push(Cell::UInt(o.samples_total()));
        row.push(if o.with_node > 0 {
            share(o.remote, o.with_node)
        } else {
            Cell::Empty
        });
        if pmu {
            row.push(if o.pmu > 0 {
                share(o.pmu_remote, o.pmu)
            } else {
                Cell::Empty
            });
        }
        row.push(Cell::text(first_touch(s, d, o)));
        t.push_row(row);
    }
    t.push_note(if s.placement_from.is_some() {
        "Pages: the distinct 4 KiB pages of the sampled accesses, each on the node its physical address is on (pages no sample touched are not counted). Threads by node: each thread that accessed the object counts on the node it ran on most while doing so."
    } else {
        "Pages: 4 KiB pages as the last placement query saw them, plus those touched after it (placed where the CPU that touched them is). Threads by node: each thread that accessed the object counts on the node it ran on most while doing so."
    });
    t
}

/// `thread 4242 in init_arrays (node 0)`, the object's busiest toucher.
fn first_touch(s: &Summary, d: &NumaData, o: &ObjectNuma) -> String {
    match d.touchers.iter().find(|t| t.object == o.object) {
        Some(t) => {
            let more = if o.touching_threads > 1 {
                format!(" and {} more", o.touching_threads - 1)
            } else {
                String::new()
            };
            format!(
                "thread {} in {} (node {}){more}",
                t.tid,
                t.function,
                node_name(t.node)
            )
        }
        None if o.untouched > 0 && s.lost_records > 0 => {
            "before the recording, or its faults were lost".into()
        }
        None if o.untouched > 0 => "before the recording".into(),
        None => String::new(),
    }
}

/// `First touch`: who placed each object's pages, with the call stack.
pub fn touch_table(objects: &[Object], d: &NumaData, limit: Option<usize>) -> Table {
    let cols = vec![
        Column::left("Object"),
        Column::right("Thread"),
        Column::right("CPU"),
        Column::right("Node"),
        Column::right("Pages"),
        Column::left("Function"),
        Column::left("Call stack"),
    ];
    let mut t = Table::new(cols).with_title("First touch");
    let order: Vec<u32> = d.objects.iter().map(|o| o.object).collect();
    let mut rows: Vec<&super::attribute::Toucher> = d.touchers.iter().collect();
    rows.sort_by_key(|x| {
        (
            order.iter().position(|o| *o == x.object),
            std::cmp::Reverse(x.pages),
            x.tid,
        )
    });
    for x in rows.into_iter().take(limit.unwrap_or(usize::MAX)) {
        let name = objects
            .get(x.object as usize)
            .map_or(String::new(), |o| o.name.clone());
        t.push_row(vec![
            Cell::text(name),
            Cell::UInt(x.tid.into()),
            Cell::UInt(x.cpu.into()),
            Cell::text(node_name(x.node)),
            Cell::UInt(x.pages),
            Cell::text(x.function.clone()),
            Cell::text(x.stack.clone()),
        ]);
    }
    t
}

/// `NUMA problems`: one row each, its sentence with the fix as a note (notes are never
/// cut short), or why there are none.
pub fn problems_table(objects: &[Object], s: &Summary, d: &NumaData) -> Table {
    let cols = vec![
        Column::left("Object"),
        Column::left("Problem"),
        Column::right("Remote (est.)"),
    ];
    let mut t = Table::new(cols).with_title("NUMA problems");
    let found = problems(d, objects, s.nodes());
    for p in &found {
        let n = d.objects.iter().find(|o| o.object == p.object);
        let name = objects
            .get(p.object as usize)
            .map_or(String::new(), |o| o.name.clone());
        let what = match p.kind {
            Kind::OneNode => "pages on one node, threads on others",
            Kind::Mismatched => "pages spread, accesses remote",
        };
        let remote = n
            .filter(|o| o.with_node > 0)
            .map_or(Cell::Empty, |o| share(o.remote, o.with_node));
        t.push_row(vec![Cell::text(name), Cell::text(what), remote]);
        t.push_note(format!("{}.", p.sentence));
    }
    for (_, sentence) in super::problems::unjudged(d, objects, s.nodes()) {
        t.push_note(format!("Not judged: {sentence}."));
    }
    if found.is_empty() {
        t.push_note(match s.nodes() {
            0 => "The nodes of the machine are unknown here, so no placement problem can be judged.".to_string(),
            1 => "One NUMA node: every access is local, so no placement problem is possible.".to_string(),
            _ => format!(
                "No object of at least {} pages and {} sampled accesses has its pages away from the threads that use it.",
                super::problems::MIN_PAGES,
                super::problems::MIN_SAMPLES
            ),
        });
    }
    t
}

/// The `numa` report.
pub fn numa(
    objects: &[Object],
    n: &Numa,
    meta: &[(String, String)],
    limit: Option<usize>,
) -> Document {
    let mut doc = Document::new("NUMA placement");
    let mut sec = Section::new("Collection");
    for (k, v) in meta {
        sec.push(k.clone(), Cell::text(v.clone()));
    }
    sec.entries.extend(section(&n.summary, "").entries);
    doc.push_section(sec);
    doc.push_table(objects_table(
        objects,
        &n.summary,
        &n.data,
        limit.or(Some(20)),
    ));
    doc.push_table(touch_table(objects, &n.data, limit.or(Some(30))));
    doc.push_table(problems_table(objects, &n.summary, &n.data));
    doc
}

/// The `numa` report of a result, or the one sentence saying it has no NUMA side.
pub fn numa_of(d: &crate::AccessData, meta: &[(String, String)], limit: Option<usize>) -> Document {
    match &d.numa {
        Some(n) => numa(&d.built.objects, n, meta, limit),
        None => {
            let mut doc = Document::new("NUMA placement");
            let mut sec = Section::new("Collection");
            for (k, v) in meta {
                sec.push(k.clone(), Cell::text(v.clone()));
            }
            sec.push("Placement and first touch", Cell::text("not in this result: it was written by a kairos without the NUMA analysis; collect it again"));
            doc.push_section(sec);
            doc
        }
    }
}

/// The summary report's NUMA part: nodes, remote share and the problems, when recorded.
pub fn summary_part(d: &crate::AccessData, doc: &mut Document) {
    let Some(n) = d.numa.as_ref().filter(|n| n.summary.recorded) else {
        return;
    };
    doc.push_section(section(&n.summary, "NUMA"));
    doc.push_table(problems_table(&d.built.objects, &n.summary, &n.data));
}
