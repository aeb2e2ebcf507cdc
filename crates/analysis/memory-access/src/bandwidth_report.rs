//! The `bandwidth` report: the timeline's source (or why there is none), average and peak
//! per domain and flow as GB/s and as a share of the measured maximum, the utilization
//! histogram (time spent at each level), and which memory objects and functions the
//! bandwidth comes from.

use std::collections::HashMap;

use kairos_bandwidth::timeline::{channel_stats, high_intervals, histogram, stats, Timeline};
use kairos_report::{Cell, Column, Document, Section, Table};

use crate::{AccessData, Bucket, Source};

/// The share of the reference above which an interval is "high bandwidth".
pub const HIGH: f64 = 0.7;
/// Bins of the histogram.
pub const BINS: usize = 10;

fn pct(part: f64, whole: Option<f64>) -> Cell {
    match whole {
        Some(w) if w > 0.0 => Cell::Percent(100.0 * part / w),
        _ => Cell::Empty,
    }
}

/// The whole report. `t`: the result's timeline (None: written before timelines were kept).
/// `d`: the result's address samples, for the by-object table (None: a result of another
/// analysis, which has the timeline only).
pub fn document(t: Option<&Timeline>, d: Option<&AccessData>, limit: Option<usize>) -> Document {
    let mut doc = Document::new("Memory bandwidth");
    let mut s = Section::new("Bandwidth timeline");
    // Sentences go to the first table's notes: a section cuts long values in text.
    let mut notes = Vec::new();
    match t {
        None => {
            s.push("Timeline", Cell::text("none"));
            notes.push(
                "This result was collected before bandwidth timelines were kept; collect it again."
                    .to_string(),
            );
        }
        Some(t) => {
            match &t.unavailable {
                Some(why) => {
                    s.push("Timeline", Cell::text("unavailable"));
                    notes.push(format!("No bandwidth timeline: {why}."));
                }
                None => {
                    s.push(
                        "Source",
                        Cell::text(t.source.split(" (").next().unwrap_or_default()),
                    );
                    s.push("Domains", Cell::text(format!("{}s", t.domain)));
                    notes.push(format!("Source: {}.", t.source));
                }
            }
            s.push("Tick", Cell::text(format!("{} ms", t.tick_ms)));
            match &t.maximum {
                Some(m) => {
                    s.push("Maximum", Cell::text(format!("{:.1} GB/s", m.gbs)));
                    notes.push(format!("Maximum: {}.", m.how));
                }
                None => {
                    s.push("Maximum", Cell::text("none stored for this host"));
                    notes.push("No maximum is stored for this host: run `kairos measure bandwidth` on it (shares are then of the measured maximum; until then, of the peak).".into());
                }
            }
        }
    }
    doc.push_section(s);
    let mut tables = Vec::new();
    if let Some(t) = t.filter(|t| t.unavailable.is_none()) {
        tables.push(flows(t));
        if !t.channels.is_empty() {
            tables.push(channels(t));
        }
        tables.push(utilization(t));
    }
    if let Some(d) = d {
        tables.push(by_object(t, d, limit));
    }
    if tables.is_empty() {
        // Somewhere for the sentences saying why there is nothing to show.
        tables.push(
            Table::new(vec![Column::left("Domain"), Column::left("Flow")])
                .with_title("Bandwidth by domain and flow"),
        );
    }
    for (i, mut tab) in tables.into_iter().enumerate() {
        if i == 0 {
            for n in notes.drain(..) {
                tab.push_note(n);
            }
        }
        doc.push_table(tab);
    }
    doc
}

fn flows(t: &Timeline) -> Table {
    let mut tab = Table::new(vec![
        Column::left("Domain"),
        Column::left("Flow"),
        Column::right("Average").with_unit("GB/s"),
        Column::right("Peak").with_unit("GB/s"),
        Column::right("Average of max"),
        Column::right("Peak of max"),
    ])
    .with_title("Bandwidth by domain and flow");
    for r in stats(t) {
        tab.push_row(vec![
            Cell::text(
                r.domain
                    .map_or("all".to_string(), |d| format!("{} {d}", t.domain)),
            ),
            Cell::text(r.flow.name()),
            Cell::float(r.average_gbs, 2),
            Cell::float(r.peak_gbs, 2),
            pct(r.average_gbs, r.maximum_gbs),
            pct(r.peak_gbs, r.maximum_gbs),
        ]);
    }
    tab.push_note("GB/s are 10^9 bytes a second. Shares are of the measured maximum: a node's local triad for its domain, all nodes' sum for all; links have none.");
    for n in &t.notes {
        tab.push_note(n.clone());
    }
    tab
}

/// Where the counters are per memory channel: each channel's reads and writes (an
/// unbalanced channel population shows here and nowhere else).
fn channels(t: &Timeline) -> Table {
    let mut tab = Table::new(vec![
        Column::left("Domain"),
        Column::right("Channel"),
        Column::left("Flow"),
        Column::right("Average").with_unit("GB/s"),
        Column::right("Peak").with_unit("GB/s"),
    ])
    .with_title("Bandwidth by memory channel");
    for r in channel_stats(t) {
        tab.push_row(vec![
            Cell::text(format!("{} {}", t.domain, r.domain)),
            Cell::UInt(u64::from(r.channel)),
            Cell::text(r.flow.name()),
            Cell::float(r.average_gbs, 2),
            Cell::float(r.peak_gbs, 2),
        ]);
    }
    tab
}

fn utilization(t: &Timeline) -> Table {
    let mut tab = Table::new(vec![
        Column::left("Level"),
        Column::right("From").with_unit("GB/s"),
        Column::right("To").with_unit("GB/s"),
        Column::right("Time"),
        Column::right("Share of time"),
    ])
    .with_title("Bandwidth utilization histogram");
    let bins = histogram(t, BINS);
    let total: f64 = bins.iter().map(|b| b.seconds).sum();
    for (i, b) in bins.iter().enumerate() {
        let level = if i + 1 == bins.len() {
            format!("{}%+", 100 * i / BINS)
        } else {
            format!("{}-{}%", 100 * i / BINS, 100 * (i + 1) / BINS)
        };
        tab.push_row(vec![
            Cell::text(level),
            Cell::float(b.from_gbs, 1),
            Cell::float(b.to_gbs, 1),
            Cell::ns((b.seconds * 1e9).round() as u64),
            pct(b.seconds, Some(total)),
        ]);
    }
    if let Some((r, what)) = t.reference_gbs() {
        tab.push_note(format!("DRAM bandwidth of all domains at each tick, in bins of {what} ({r:.1} GB/s); the last bin also holds what is above it."));
    }
    tab
}

/// Per object: with a PMU, its loads served by local and remote DRAM; without one, its
/// share of the address samples taken in the high-bandwidth intervals.
pub fn by_object(t: Option<&Timeline>, d: &AccessData, limit: Option<usize>) -> Table {
    if d.source == Source::Pmu {
        return dram_loads(d, limit);
    }
    let mut tab = Table::new(vec![
        Column::left("Object"),
        Column::left("Function"),
        Column::right("Samples"),
        Column::right("Share"),
    ])
    .with_title("Address samples in high-bandwidth intervals, by object and function");
    let t = match t {
        Some(t) if t.unavailable.is_none() => t,
        _ => {
            tab.push_note("Bandwidth by object is unavailable: it needs the high-bandwidth intervals of a bandwidth timeline, or a PMU's data source to say which loads DRAM served; this result has neither.");
            return tab;
        }
    };
    let high = high_intervals(t, HIGH);
    let inside = |ns: u64| high.iter().any(|&(a, b)| ns >= a && ns < b);
    let mut rows: HashMap<(u32, u32), u64> = HashMap::new();
    let mut n = 0u64;
    for (s, loc) in d.located().filter(|(s, _)| inside(s.time_ns)) {
        *rows.entry((loc.object, s.function)).or_default() += 1;
        n += 1;
    }
    let mut rows: Vec<((u32, u32), u64)> = rows.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for ((o, f), c) in rows.into_iter().take(limit.unwrap_or(usize::MAX)) {
        tab.push_row(vec![
            Cell::text(
                d.built
                    .objects
                    .get(o as usize)
                    .map(|x| x.name.clone())
                    .unwrap_or_default(),
            ),
            Cell::text(
                d.built
                    .functions
                    .get(f as usize)
                    .cloned()
                    .unwrap_or_default(),
            ),
            Cell::UInt(c),
            pct(c as f64, Some(n as f64)),
        ]);
    }
    let (r, what) = t.reference_gbs().unwrap_or((0.0, "the peak"));
    tab.push_note(format!(
        "Without a PMU: each object's and function's share of the {n} address samples (CPU time, not bytes) taken in the {} intervals at or above {:.0}% of {what} ({:.1} GB/s).",
        high.len(),
        HIGH * 100.0,
        HIGH * r
    ));
    tab
}

fn dram_loads(d: &AccessData, limit: Option<usize>) -> Table {
    let mut tab = Table::new(vec![
        Column::left("Object"),
        Column::right("DRAM loads"),
        Column::right("Local DRAM"),
        Column::right("Remote DRAM"),
        Column::right("Remote share"),
        Column::right("Share of DRAM loads"),
    ])
    .with_title("Loads served by DRAM, by object");
    let mut rows: HashMap<u32, (u64, u64)> = HashMap::new();
    for (s, loc) in d.located().filter(|(s, _)| s.direction.reads()) {
        let e = rows.entry(loc.object).or_default();
        match s.level {
            Some(Bucket::LocalDram) => e.0 += 1,
            Some(Bucket::RemoteDram) => e.1 += 1,
            _ => {}
        }
    }
    let total: u64 = rows.values().map(|(l, r)| l + r).sum();
    let mut rows: Vec<(u32, (u64, u64))> =
        rows.into_iter().filter(|(_, (l, r))| l + r > 0).collect();
    rows.sort_by(|a, b| {
        (b.1 .0 + b.1 .1)
            .cmp(&(a.1 .0 + a.1 .1))
            .then(a.0.cmp(&b.0))
    });
    for (o, (l, r)) in rows.into_iter().take(limit.unwrap_or(usize::MAX)) {
        tab.push_row(vec![
            Cell::text(
                d.built
                    .objects
                    .get(o as usize)
                    .map(|x| x.name.clone())
                    .unwrap_or_default(),
            ),
            Cell::UInt(l + r),
            Cell::UInt(l),
            Cell::UInt(r),
            pct(r as f64, Some((l + r) as f64)),
            pct((l + r) as f64, Some(total as f64)),
        ]);
    }
    tab.push_note("With a PMU: sampled loads whose data source says local or remote DRAM (a sample of loads, not a byte count).");
    tab
}

/// `kairos report bandwidth` on a result of any analysis: the timeline every collection
/// records, without the by-object table (only memory-access has address samples).
pub fn report_any(
    req: &kairos_analysis_api::ReportRequest,
) -> Result<kairos_analysis_api::ReportOutput, kairos_analysis_api::Failure> {
    let format = kairos_session::report_format(req)?;
    let dir = kairos_session::open_result(&req.result_dir)?;
    let t = crate::bandwidth::load(&dir).map_err(|e| {
        kairos_analysis_api::Failure::failed(format!("{e}; collect the result again"))
    })?;
    let doc = document(t.as_ref(), None, req.row_limit().or(Some(20)));
    let mut out = kairos_analysis_api::ReportOutput::new(doc.render(format));
    if format == kairos_report::Format::Text {
        out.push(&kairos_session::notes_text(&dir));
    }
    Ok(out)
}

/// Average and peak GB/s of all domains' DRAM traffic, for `kairos compare`; None without figures.
pub fn headline(t: &Timeline) -> Option<(f64, f64)> {
    let iv = t.dram_intervals();
    let secs: f64 = iv.iter().map(|x| x.1 as f64).sum();
    (secs > 0.0).then(|| {
        (
            iv.iter().map(|x| x.1 as f64 * x.2).sum::<f64>() / secs / 1e9,
            iv.iter().map(|x| x.2).fold(0.0, f64::max) / 1e9,
        )
    })
}

#[cfg(test)]
#[path = "bandwidth_tests.rs"]
mod tests;
