//! The `summary` and `io` reports of an io result.

use std::collections::BTreeMap;

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_report::{Cell, Column, Document, Format, Section, Table};

use crate::ddio::per_socket;
use crate::model::{IoResult, Scope};
use crate::SPEC;

const MB: f64 = 1e6;

pub fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    req.check(&SPEC)?;
    let format = kairos_session::report_format(req)?;
    let dir = kairos_session::open_result(&req.result_dir)?;
    let r = match IoResult::load(dir.path()) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            return Err(Failure::failed(format!(
                "result {} is damaged: {e}; collect it again",
                req.result_dir.display()
            )))
        }
        None => {
            return Err(Failure::failed(format!(
                "result {} has no {}; give a result of `kairos collect io`",
                req.result_dir.display(),
                crate::model::FILE
            )))
        }
    };
    let bucket = req.bucket_ns(|| 1_000_000_000)? as f64 / 1e9;
    let mut doc = match req.report.as_str() {
        "io" => {
            // The DRAM and socket-link timeline every collection records beside io.json.
            let bw = kairos_session::bandwidth::load(&dir).ok().flatten();
            let mut d = io_document(&r, bucket);
            if let Some(t) = bw.as_ref().filter(|t| t.unavailable.is_none()) {
                d.push_table(dram_table(t));
            }
            d
        }
        _ => summary_document(&r),
    };
    if let Some(u) = kairos_session::device_use::DeviceUse::load(dir.path()) {
        doc.push_table(crate::use_table::table(&u));
    }
    Ok(ReportOutput::new(render(&doc, format)))
}

/// The summary as text (printed at the end of a collection), with the target's device use
/// when it was traced.
pub fn summary_text(r: &IoResult, u: Option<&kairos_session::device_use::DeviceUse>) -> String {
    let mut d = summary_document(r);
    if let Some(u) = u {
        d.push_table(crate::use_table::table(u));
    }
    render(&d, Format::Text)
}

/// Findings and reasons are sentences: text keeps them whole.
pub fn render(doc: &Document, format: Format) -> String {
    match format {
        Format::Text => doc.to_text_width(1000),
        other => doc.render(other),
    }
}

/// Where a series is counted: `socket N` for the uncore, `node N` for a device, or
/// `no node`.
fn place(r: &IoResult, i: usize) -> String {
    let s = &r.series[i];
    match (s.scope, s.socket) {
        (Scope::Device, Some(n)) => format!("node {n}"),
        (Scope::Device, None) => "no node".into(),
        (_, n) => format!("socket {}", n.unwrap_or(0)),
    }
}

/// (average, peak) bytes a second of the sum of series `ids`.
fn avg_peak(r: &IoResult, ids: &[usize]) -> (f64, f64) {
    let total: f64 = ids.iter().map(|&i| r.total(i)).sum();
    let peak = r
        .points
        .iter()
        .map(|p| {
            ids.iter()
                .map(|&i| p.values.get(i).copied().unwrap_or(0.0))
                .sum::<f64>()
                / p.secs.max(1e-9)
        })
        .fold(0.0, f64::max);
    (total / r.duration().max(1e-9), peak)
}

fn byte_series(r: &IoResult) -> impl Iterator<Item = usize> + '_ {
    (0..r.series.len()).filter(|&i| r.series[i].unit == "bytes")
}

fn per_place_table(r: &IoResult) -> Table {
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for i in byte_series(r) {
        groups
            .entry((place(r, i), r.series[i].flow.clone()))
            .or_default()
            .push(i);
    }
    let mut t = Table::new(vec![
        Column::left("where"),
        Column::left("flow"),
        Column::right("average").with_unit("MB/s"),
        Column::right("peak").with_unit("MB/s"),
    ])
    .with_title("Per socket (uncore) or NUMA node (devices)");
    for ((place, flow), ids) in &groups {
        let (avg, peak) = avg_peak(r, ids);
        t.push_row(vec![
            Cell::text(place),
            Cell::text(flow),
            Cell::float(avg / MB, 3),
            Cell::float(peak / MB, 3),
        ]);
    }
    t
}

fn ddio_table(r: &IoResult) -> Table {
    let mut t = Table::new(vec![
        Column::left("socket"),
        Column::right("IO requests"),
        Column::right("DDIO hit rate"),
        Column::right("read latency").with_unit("ns"),
        Column::right("ItoM write latency").with_unit("ns"),
        Column::left("perfmon metrics"),
    ])
    .with_title("DDIO (inbound requests hitting the L3) per socket");
    let sockets = per_socket(r, &r.points);
    if sockets.is_empty() {
        let why = r
            .ddio_unmeasured
            .clone()
            .unwrap_or_else(|| "no CHA counts were recorded".into());
        t.push_row(vec![
            Cell::text("all"),
            Cell::Empty,
            Cell::text("not measurable here"),
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
        ]);
        t.push_note(format!("not measurable here: {why}"));
    }
    for s in sockets {
        let metrics: Vec<String> = s
            .metrics
            .iter()
            .map(|(k, v)| format!("{k} {v:.2}"))
            .collect();
        t.push_row(vec![
            Cell::text(format!("socket {}", s.socket)),
            Cell::UInt(s.requests as u64),
            s.hit_rate.map_or(Cell::Empty, Cell::Percent),
            s.read_latency_ns.map_or(Cell::Empty, |v| Cell::float(v, 1)),
            s.write_latency_ns
                .map_or(Cell::Empty, |v| Cell::float(v, 1)),
            Cell::text(metrics.join("; ")),
        ]);
    }
    t
}

fn blocks_table(r: &IoResult) -> Table {
    let mut t = Table::new(vec![
        Column::left("PCIe block"),
        Column::left("device or stack"),
        Column::left("what"),
        Column::left("where"),
        Column::left("flow"),
        Column::right("total").with_unit("MB"),
        Column::right("average").with_unit("MB/s"),
        Column::right("peak").with_unit("MB/s"),
        Column::right("peak link use"),
    ])
    .with_title("Per PCIe block and device");
    let mut ids: Vec<usize> = byte_series(r).collect();
    ids.sort_by(|&a, &b| {
        let (x, y) = (&r.series[a], &r.series[b]);
        (x.block.as_deref().unwrap_or("~"), &x.name)
            .cmp(&(y.block.as_deref().unwrap_or("~"), &y.name))
    });
    // Idle devices (loop devices, spare interfaces) make a note, not rows.
    let idle = ids.iter().filter(|&&i| r.total(i) == 0.0).count();
    ids.retain(|&i| r.total(i) > 0.0);
    if idle > 0 {
        t.push_note(format!(
            "{idle} device or stack flows moved no data and are not shown"
        ));
    }
    for i in ids {
        let s = &r.series[i];
        let (avg, peak) = avg_peak(r, &[i]);
        t.push_row(vec![
            Cell::text(s.block.clone().unwrap_or_else(|| "none".into())),
            Cell::text(match &s.pci {
                Some(p) => format!("{} ({p})", s.name),
                None => s.name.clone(),
            }),
            Cell::text(&s.label),
            Cell::text(place(r, i)),
            Cell::text(&s.flow),
            Cell::float(r.total(i) / MB, 3),
            Cell::float(avg / MB, 3),
            Cell::float(peak / MB, 3),
            s.link_bytes_per_s
                .map_or(Cell::Empty, |l| Cell::Percent(100.0 * peak / l)),
        ]);
    }
    t
}

fn timeline_table(r: &IoResult, bucket: f64) -> Table {
    let mut t = Table::new(vec![
        Column::right("from").with_unit("s"),
        Column::left("device or stack"),
        Column::left("flow"),
        Column::right("rate").with_unit("MB/s"),
    ])
    .with_title(format!(
        "Over time ({} ms buckets; rows with traffic)",
        (bucket * 1000.0).round()
    ));
    for b in r.buckets(bucket) {
        for i in byte_series(r) {
            let v = b.values.get(i).copied().unwrap_or(0.0);
            if v > 0.0 {
                let s = &r.series[i];
                t.push_row(vec![
                    Cell::float(b.t, 1),
                    Cell::text(&s.name),
                    Cell::text(&s.flow),
                    Cell::float(v / b.secs.max(1e-9) / MB, 3),
                ]);
            }
        }
    }
    t
}

fn head(r: &IoResult) -> Section {
    let mut s = Section::new("I/O traffic");
    s.push("duration", Cell::text(format!("{:.1} s", r.duration())));
    s.push("tick", Cell::text(format!("{} ms", r.tick_ms)));
    // Numbered keys: JSON objects take each key once.
    for (i, src) in r.sources.iter().enumerate() {
        s.push(format!("source {}", i + 1), Cell::text(src));
    }
    if let Some(why) = &r.pcie_unmeasured {
        s.push(
            "PCIe per stack",
            Cell::text(format!("not measurable here: {why}")),
        );
    }
    if let Some(why) = &r.ddio_unmeasured {
        s.push(
            "DDIO hits and misses",
            Cell::text(format!("not measurable here: {why}")),
        );
    }
    if let Some(n) = &r.dram_note {
        s.push("DRAM and socket links", Cell::text(n));
    }
    if let Some(n) = &r.device_use_note {
        s.push("Device use by thread", Cell::text(n));
    }
    for (i, n) in r.notes.iter().enumerate() {
        s.push(format!("note {}", i + 1), Cell::text(n));
    }
    s
}

fn findings_section(r: &IoResult) -> Section {
    let mut s = Section::new("Findings");
    for (i, f) in crate::findings::findings(r).into_iter().enumerate() {
        s.push(format!("{}", i + 1), Cell::text(f));
    }
    s
}

pub fn summary_document(r: &IoResult) -> Document {
    let mut d = Document::new("io summary");
    d.push_section(head(r));
    d.push_table(per_place_table(r));
    d.push_table(ddio_table(r));
    d.push_section(findings_section(r));
    d
}

/// Average and peak DRAM and socket-link bandwidth per domain and flow, from the
/// collection's bandwidth timeline (GB/s, 10^9 bytes a second, as `report bandwidth`).
pub fn dram_table(t: &kairos_bandwidth::timeline::Timeline) -> Table {
    let mut tab = Table::new(vec![
        Column::left("Domain"),
        Column::left("Flow"),
        Column::right("Average").with_unit("GB/s"),
        Column::right("Peak").with_unit("GB/s"),
    ])
    .with_title("DRAM and socket links");
    for r in kairos_bandwidth::timeline::stats(t) {
        tab.push_row(vec![
            Cell::text(
                r.domain
                    .map_or("all".to_string(), |d| format!("{} {d}", t.domain)),
            ),
            Cell::text(r.flow.name()),
            Cell::float(r.average_gbs, 2),
            Cell::float(r.peak_gbs, 2),
        ]);
    }
    tab.push_note(format!("From the bandwidth timeline recorded beside io.json ({}); `kairos report bandwidth` has the histogram.", t.source));
    tab
}

pub fn io_document(r: &IoResult, bucket: f64) -> Document {
    let mut d = Document::new("io");
    d.push_section(head(r));
    d.push_table(per_place_table(r));
    d.push_table(blocks_table(r));
    d.push_table(ddio_table(r));
    d.push_table(timeline_table(r, bucket));
    d.push_section(findings_section(r));
    d
}
