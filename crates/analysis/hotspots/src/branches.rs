//! `kairos report branches -r DIR (--sample N | --time T)`: one sample's branch records,
//! newest first as in the paper's figure 10 (FROM0..FROMn), then the call/return nesting
//! they imply read oldest to newest.

use kairos_model::{BranchKind, BranchRecord, FrameIdx, Profile};
use kairos_report::{Cell, Column, Document, Format, Section, Table};
use kairos_result::ResultDir;

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};

/// The manifest capability that says whether branch records were recorded (the collection
/// writes it, the branches report reads it).
pub const BRANCH_CAPABILITY: &str = "branch records";

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    let format = kairos_session::report_format(req)?;
    let (dir, profile) = kairos_session::open(&req.result_dir)?;
    if profile.branch_info.is_none() {
        return Err(Failure::failed(format!(
            "result {} has no branch records{}; record them with `kairos collect hotspots -k branch-records=on` on a machine with LBR, or emulate them from a trace with `kairos lab emulate-lbr`",
            req.result_dir.display(),
            why_none(&dir)
        )));
    }
    let idx = pick_sample(req, &profile)?;
    let records = records_of(&profile, idx);
    if records.is_empty() {
        return Err(Failure::failed(format!(
            "sample {idx} has no branch records (its branch stack was empty); try a neighbouring sample or --time T, which picks the nearest sample that has some"
        )));
    }
    let mut out = ReportOutput::new(document(&profile, idx, records).render(format));
    if format == Format::Text {
        out.push(&kairos_session::notes_text(&dir));
    }
    Ok(out)
}

/// Why a result has no branch records, from its manifest (collection says so).
fn why_none(dir: &ResultDir) -> String {
    dir.manifest()
        .capabilities
        .iter()
        .find(|c| c.name == BRANCH_CAPABILITY && !c.available)
        .and_then(|c| c.reason.clone())
        .map(|r| format!(" ({r})"))
        .unwrap_or_default()
}

fn pick_sample(req: &ReportRequest, p: &Profile) -> Result<usize, Failure> {
    let n = p.samples.len();
    match (req.sample, req.time) {
        (Some(i), _) if i < n => Ok(i),
        (Some(i), _) => Err(Failure::usage(format!(
            "sample {i} is out of range: the result has {n} samples, numbered 0 to {}",
            n.saturating_sub(1)
        ))),
        (None, Some(t)) => {
            if !(t >= 0.0 && t.is_finite()) {
                return Err(Failure::usage(format!("--time {t} must be a number of seconds from the first sample, 0 or more")));
            }
            let first = p.samples.first().map_or(0, |s| s.time_ns);
            let target = first.saturating_add((t * 1e9) as u64);
            // Samples with records, in sample order (branches are sorted by sample).
            let mut best: Option<(u64, usize)> = None;
            let mut last = None;
            for b in &p.branches {
                if last == Some(b.sample) {
                    continue;
                }
                last = Some(b.sample);
                let i = b.sample as usize;
                let Some(s) = p.samples.get(i) else { continue };
                let d = s.time_ns.abs_diff(target);
                if best.is_none_or(|(bd, _)| d < bd) {
                    best = Some((d, i));
                }
            }
            best.map(|(_, i)| i).ok_or_else(|| Failure::failed("no sample of this result has branch records: every branch stack was empty"))
        }
        (None, None) => Err(Failure::usage("give the sample to show: --sample N (index in time order, from 0) or --time T (seconds from the first sample)")),
    }
}

fn records_of(p: &Profile, idx: usize) -> &[BranchRecord] {
    let idx = idx as u32;
    let start = p.branches.partition_point(|b| b.sample < idx);
    let end = p.branches.partition_point(|b| b.sample <= idx);
    p.branches.get(start..end).unwrap_or(&[])
}

fn function(p: &Profile, frame: Option<FrameIdx>, address: u64) -> String {
    match frame.and_then(|f| p.frames.get(f as usize)) {
        Some(f) if f.function != "[unknown]" => f.function.clone(),
        _ => format!("{address:#x}"),
    }
}

fn source(p: &Profile, frame: Option<FrameIdx>) -> Cell {
    match frame.and_then(|f| p.frames.get(f as usize)) {
        Some(f) => match (&f.file, f.line) {
            (Some(file), Some(line)) => Cell::text(format!("{file}:{line}")),
            (Some(file), None) => Cell::text(file.clone()),
            _ => Cell::Empty,
        },
        None => Cell::Empty,
    }
}

fn document(p: &Profile, idx: usize, records: &[BranchRecord]) -> Document {
    let mut doc = Document::new("Branch records");
    let info = p.branch_info.clone().unwrap_or_default();
    let s = p.samples[idx.min(p.samples.len().saturating_sub(1))];
    let first = p.samples.first().map_or(s.time_ns, |f| f.time_ns);
    let mut head = Section::new("Sample");
    head.push("Sample", Cell::UInt(idx as u64));
    head.push(
        "Time (s from first sample)",
        Cell::float((s.time_ns - first) as f64 / 1e9, 6),
    );
    let thread = p.threads.get(s.thread as usize).map_or_else(
        || format!("thread {}", s.thread),
        |t| format!("{} (tid {})", t.name, t.tid),
    );
    head.push("Thread", Cell::text(thread));
    head.push("CPU", Cell::UInt(u64::from(s.cpu)));
    head.push(
        "Leaf function",
        Cell::text(
            p.leaf_frame(&s)
                .map_or("[unknown]".into(), |f| f.function.clone()),
        ),
    );
    head.push("Depth", Cell::UInt(u64::from(info.depth)));
    head.push("Filter", Cell::text(info.filter.clone()));
    head.push(
        "Cycles available",
        Cell::text(if info.has_cycles { "yes" } else { "no" }),
    );
    if info.emulated {
        head.push(
            "Emulated",
            Cell::text("yes: records were emulated from an exact trace"),
        );
    }
    head.push("Records", Cell::UInt(records.len() as u64));
    head.push(
        "New records",
        Cell::UInt(records.iter().filter(|r| r.is_new).count() as u64),
    );
    doc.push_section(head);

    let mut t = Table::new(vec![
        Column::left("Position"),
        Column::left("Kind"),
        Column::left("From"),
        Column::left("From source"),
        Column::left("To"),
        Column::right("Cycles"),
        Column::left("New"),
        Column::left("From address"),
        Column::left("To address"),
    ])
    .with_title("Records, newest first (FROM0 is the newest)");
    for r in records {
        t.push_row(vec![
            Cell::text(format!("FROM{}", r.position)),
            Cell::text(r.kind.as_str()),
            Cell::text(function(p, r.from_frame, r.from_address)),
            source(p, r.from_frame),
            Cell::text(function(p, r.to_frame, r.to_address)),
            r.cycles.map_or(Cell::Empty, |c| Cell::UInt(u64::from(c))),
            Cell::text(if r.is_new { "new" } else { "seen" }),
            Cell::text(format!("{:#x}", r.from_address)),
            Cell::text(format!("{:#x}", r.to_address)),
        ]);
    }
    doc.push_table(t);
    doc.push_table(nesting(p, records));
    doc
}

/// Reads the records oldest to newest: a call goes one level deeper, a return one level
/// up. Depths are shifted so the shallowest step is 0 (a sample often starts inside calls
/// made before its oldest record).
fn nesting(p: &Profile, records: &[BranchRecord]) -> Table {
    let mut depth = 0i64;
    let mut steps = Vec::with_capacity(records.len());
    for r in records.iter().rev() {
        if r.kind == BranchKind::Return {
            depth -= 1;
        }
        steps.push((depth, r));
        if r.kind == BranchKind::Call {
            depth += 1;
        }
    }
    let min = steps.iter().map(|(d, _)| *d).min().unwrap_or(0);
    let mut t = Table::new(vec![
        Column::left("Position"),
        Column::right("Depth"),
        Column::left("Transition"),
    ])
    .with_title("Call/return nesting, oldest to newest");
    for (d, r) in steps {
        let level = (d - min) as usize;
        let (from, to) = (
            function(p, r.from_frame, r.from_address),
            function(p, r.to_frame, r.to_address),
        );
        let what = match r.kind {
            BranchKind::Call => format!("{from} calls {to}"),
            BranchKind::Return => format!("{from} returns to {to}"),
            BranchKind::Other => format!("{from} jumps to {to}"),
            BranchKind::Unknown => format!("{from} -> {to} (kind unknown)"),
        };
        t.push_row(vec![
            Cell::text(format!("FROM{}", r.position)),
            Cell::UInt(level as u64),
            Cell::text(format!("{}{what}", "  ".repeat(level.min(64)))),
        ]);
    }
    if records.iter().any(|r| r.kind == BranchKind::Unknown) {
        t.push_note("entries of unknown kind do not change the nesting: the recording did not save branch types and the binaries were not at hand to decode them");
    }
    t
}
