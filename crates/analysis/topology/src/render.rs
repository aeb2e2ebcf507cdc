//! The topology report as a document: the platform (sockets, nodes with their measured
//! use, devices), then the check, one sentence per device.

use kairos_platform::numa::format_cpulist;
use kairos_platform::{NodeSource, Platform};
use kairos_report::{Cell, Column, Document, Format, Section, Table};

use crate::check::{checked_kind, Finding, Usage, Verdict};

/// What fills a cell the result has no measurement for.
pub const NOT_MEASURED: &str = "not measurable here";

/// The report in `format`: text puts each finding's sentence below the tables, wrapped to
/// the line width (a sentence in a row of figures would make every row tall), CSV and
/// JSON keep it as a column.
pub fn render(
    p: &Platform,
    u: &Usage,
    findings: &[Finding],
    notes: &[String],
    format: Format,
) -> String {
    let text = format == Format::Text;
    let mut out = document(p, u, findings, notes, !text).render(format);
    if text && !findings.is_empty() {
        out.push_str("\nFindings\n");
        let width = kairos_report::text_layout().width;
        for f in findings {
            out.push_str(&kairos_report::wrap(&f.sentence, width, "  - ", "    "));
        }
    }
    out
}

/// Everything the report shows; `sentences`: the findings' sentences as a column.
pub fn document(
    p: &Platform,
    u: &Usage,
    findings: &[Finding],
    notes: &[String],
    sentences: bool,
) -> Document {
    let mut doc = Document::new("Topology");
    let mut s = Section::new("Platform");
    s.push("Source", Cell::text(p.source.clone()));
    let sockets: Vec<String> = p
        .sockets
        .iter()
        .map(|s| {
            format!(
                "socket {}: CPUs {} ({} cores)",
                s.id,
                format_cpulist(&s.cpus),
                s.cores
            )
        })
        .collect();
    s.push(
        "Sockets",
        Cell::text(if sockets.is_empty() {
            "unknown".to_string()
        } else {
            sockets.join("; ")
        }),
    );
    s.push("Samples", Cell::UInt(u.samples()));
    s.push_list(
        "Notes",
        notes.iter().chain(p.notes.iter()).cloned().map(Cell::Text),
    );
    doc.push_section(s);
    doc.push_table(nodes_table(p, u));
    if let Some(t) = devices_table(p) {
        doc.push_table(t);
    }
    doc.push_table(check_table(p, findings, sentences, u.traffic.is_some()));
    doc
}

fn nodes_table(p: &Platform, u: &Usage) -> Table {
    let mut t = Table::new(vec![
        Column::left("Node"),
        Column::left("CPUs"),
        Column::right("Memory").with_unit("MiB"),
        Column::left("Distances"),
        Column::right("Samples"),
        Column::right("Samples share"),
        Column::right("Resident pages"),
    ])
    .with_title("NUMA nodes");
    let samples = u.samples();
    for n in &p.nodes {
        let on = u.samples_by_node.get(&n.id).copied().unwrap_or(0);
        let pages = match &u.pages_by_node {
            Some(m) => Cell::UInt(m.get(&n.id).copied().unwrap_or(0)),
            None => Cell::text(NOT_MEASURED),
        };
        let (sc, share) = match samples {
            0 => (Cell::text(NOT_MEASURED), Cell::text(NOT_MEASURED)),
            s => (Cell::UInt(on), Cell::Percent(on as f64 * 100.0 / s as f64)),
        };
        t.push_row(vec![
            Cell::UInt(u64::from(n.id)),
            Cell::text(format_cpulist(&n.cpus)),
            n.mem_total_kb
                .map_or(Cell::text("unknown"), |k| Cell::UInt(k / 1024)),
            Cell::text(
                n.distances
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            sc,
            share,
            pages,
        ]);
    }
    if u.samples_without_node > 0 {
        t.push_note(format!(
            "{} samples ran on CPUs no node lists (or recorded no CPU)",
            u.samples_without_node
        ));
    }
    t
}

fn devices_table(p: &Platform) -> Option<Table> {
    let devices = p.devices.as_ref()?;
    let mut t = Table::new(vec![
        Column::left("Device"),
        Column::left("Kind"),
        Column::left("Class"),
        Column::left("Id"),
        Column::left("Node"),
        Column::left("Node from"),
        Column::left("Local CPUs"),
        Column::left("Host bridge"),
        Column::left("PCIe link"),
    ])
    .with_title("Devices");
    for d in devices {
        let from = match (d.node_source, d.virtual_device) {
            (_, true) => "virtual",
            (NodeSource::Sysfs, _) => "numa_node",
            (NodeSource::LocalCpus, _) => "derived from local_cpulist",
            (NodeSource::Unknown, _) => "unknown",
        };
        t.push_row(vec![
            Cell::text(d.label()),
            Cell::text(d.kind.as_str()),
            Cell::text(d.class.clone()),
            d.id.clone().map_or(Cell::Empty, Cell::text),
            d.node
                .map_or(Cell::text("unknown"), |n| Cell::UInt(u64::from(n))),
            Cell::text(from),
            Cell::text(format_cpulist(&d.local_cpus)),
            d.root.clone().map_or(Cell::Empty, Cell::text),
            d.link.as_ref().map_or(
                Cell::text(if d.pci_address.is_some() {
                    "not in sysfs"
                } else {
                    ""
                }),
                |l| Cell::text(l.describe()),
            ),
        ]);
    }
    for d in devices
        .iter()
        .filter(|d| d.note.is_some() && !d.virtual_device)
    {
        t.push_note(format!(
            "{}: {}",
            d.label(),
            d.note.as_deref().unwrap_or_default()
        ));
    }
    Some(t)
}

fn check_table(p: &Platform, findings: &[Finding], sentences: bool, traced: bool) -> Table {
    let mut columns = vec![
        Column::left("Device"),
        Column::left("Node"),
        Column::left("Verdict"),
        Column::right("Samples off node"),
        Column::right("Pages off node"),
    ];
    if traced {
        columns.push(Column::right("Traffic off node"));
    }
    if sentences {
        columns.push(Column::sentence("Finding"));
    }
    let mut t = Table::new(columns).with_title("Check");
    for f in findings {
        let share = |v: Option<f64>| v.map_or(Cell::text(NOT_MEASURED), Cell::Percent);
        let mut row = vec![
            Cell::text(f.device.clone()),
            f.node
                .map_or(Cell::text("unknown"), |n| Cell::UInt(u64::from(n))),
            Cell::text(f.verdict.as_str()),
            share(f.off_node_samples_pct),
            share(f.off_node_pages_pct),
        ];
        if traced {
            row.push(share(f.off_node_traffic_pct));
        }
        row.push(Cell::text(f.sentence.clone()));
        t.push_row(row);
    }
    match &p.devices {
        None => t.push_note("the devices are unknown: this result kept no platform snapshot with devices (an imported recording, or a result older than snapshots)"),
        Some(d) if !d.iter().any(checked_kind) => t.push_note("no network, storage or accelerator device in the snapshot"),
        Some(_) if traced => t.push_note("which threads read from and wrote to each device was traced (device_use.json): each device is judged by the CPUs its data was moved on"),
        Some(_) => t.push_note("which device the target reads from was not traced (kairos collect io traces it): every network, storage and accelerator device is checked against all samples"),
    }
    let n = findings
        .iter()
        .filter(|f| f.verdict == Verdict::Mismatch)
        .count();
    t.push_note(format!("{n} mismatch{}", if n == 1 { "" } else { "es" }));
    t
}
