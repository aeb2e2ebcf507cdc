//! `kairos report KIND -r DIR`: the hotspot reports of a result, as text, CSV or JSON.

use std::str::FromStr;

use kairos_analysis_hotspots::{Filter, GroupBy};
use kairos_model::Profile;
use kairos_report::{Document, Format};
use kairos_result::ResultDir;

use crate::args::ReportArgs;
use crate::error::{CliResult, UserError};

pub fn run(args: ReportArgs) -> CliResult {
    refuse_trace_for_sampled_reports(&args)?;
    check_report_name(&args)?;
    if args.report == "branches" { return crate::cmd_branches::run(&args); }
    if args.report == "hugepages" { return crate::cmd_hugepages::report(&args); }
    if args.report == "tlb" { return crate::cmd_tlb::report(&args); }
    if crate::cmd_memory::is_memory_result(&args.result_dir) { return crate::cmd_memory::report(&args); }
    if crate::cmd_system_overview::is_result(&args.result_dir) { return crate::cmd_system_overview::report(&args); }
    let format = Format::from_str(&args.format).map_err(|e| UserError::usage(format!("{e}")))?;
    let group_by = args
        .group_by
        .as_deref()
        .map(GroupBy::from_str)
        .transpose()
        .map_err(|e| UserError::usage(format!("{e}")))?;
    let (dir, mut profile) = open_event(&args.result_dir, args.event.as_deref())?;
    let applied = match args.time_assignment.as_deref() {
        Some(m) if matches!(args.report.as_str(), "hotspots" | "timeline") => Some(crate::time_assign::apply(m, &mut profile, &args.result_dir)?),
        Some(_) => return Err(UserError::usage("--time-assignment applies to the hotspots and timeline reports")),
        None => None,
    };
    let filter = Filter { time_range: args.time_range.as_deref().map(|r| parse_time_range(r, &profile)).transpose()?, ..Default::default() };
    let analysis_error = |e: kairos_analysis_hotspots::Error| UserError::usage(e.to_string());
    // --limit 0 means every row.
    let limit = args.limit.filter(|&n| n > 0);
    let doc = match args.report.as_str() {
        "summary" => {
            let mut meta = meta(&dir);
            if dir.manifest().events.iter().filter(|e| e.samples > 0).count() > 1 {
                let shown = args.event.clone().or_else(|| dir.manifest().events.iter().find(|e| e.samples > 0).map(|e| e.name.clone()));
                meta.push(("Shown event".into(), format!("{} (choose another with --event NAME)", shown.unwrap_or_default())));
            }
            kairos_analysis_hotspots::summary(&profile, &meta).into()
        }
        "hotspots" => {
            let t = kairos_analysis_hotspots::hotspots(&profile, &filter, group_by.unwrap_or(GroupBy::Function), limit)
                .map_err(analysis_error)?;
            single("Hotspots", t, format)
        }
        "top-down" => single("Top-down", kairos_analysis_hotspots::top_down(&profile, &filter, None, limit).map_err(analysis_error)?, format),
        _ => {
            let bucket_ns = match args.bucket_ms {
                Some(ms) if ms > 0.0 && ms.is_finite() => (ms * 1e6) as u64,
                Some(ms) => return Err(UserError::usage(format!("--bucket-ms {ms} must be a positive number of milliseconds"))),
                None => default_bucket_ns(&profile, &filter),
            };
            kairos_analysis_hotspots::timeline(&profile, &filter, bucket_ns, group_by.unwrap_or(GroupBy::Function), limit.unwrap_or(8))
                .map_err(analysis_error)?
                .into()
        }
    };
    match doc {
        Rendered::Table(t) => print!("{}", t.render(format)),
        Rendered::Document(d) => print!("{}", d.render(format)),
    }
    // Say how the points were made: under a text report, on stderr for CSV and JSON.
    if applied.is_some() && format == Format::Text {
        println!();
    }
    for line in applied.iter().flat_map(|a| a.lines()) {
        if format == Format::Text {
            println!("{line}");
        } else {
            eprintln!("{line}");
        }
    }
    if format == Format::Text {
        print_notes(&dir);
    }
    // The process ends next: freeing a large profile object by object would only cost time.
    std::mem::forget(profile);
    Ok(())
}

enum Rendered {
    Table(kairos_report::Table),
    Document(Document),
}

impl From<Document> for Rendered {
    fn from(d: Document) -> Self {
        Rendered::Document(d)
    }
}

/// The report must be one the result's analysis declares in the registry; when the result
/// cannot be opened (its own error comes later), one of any analysis.
fn check_report_name(args: &ReportArgs) -> CliResult {
    let kind = ResultDir::open(&args.result_dir).ok().and_then(|d| d.manifest().kind.clone());
    // Results of a kind no analysis claims (older or newer Kairos) are read as sampled profiles.
    let spec = kind.as_deref().map(|k| kairos_analyses::find(k).or_else(|| kairos_analyses::find("hotspots")));
    match spec.flatten() {
        Some(spec) if !spec.has_report(&args.report) => Err(UserError::usage(format!(
            "unknown report '{}' for a {} result; its reports are: {}",
            args.report,
            spec.name,
            spec.report_names().join(", ")
        ))),
        Some(_) => Ok(()),
        None if kairos_analyses::ANALYSES.iter().any(|a| a.has_report(&args.report)) => Ok(()),
        None => {
            let mut all: Vec<&str> = kairos_analyses::ANALYSES.iter().flat_map(|a| a.report_names()).collect();
            all.sort_unstable();
            all.dedup();
            Err(UserError::usage(format!("unknown report '{}'; the reports are: {}", args.report, all.join(", "))))
        }
    }
}

/// A one-table report: titled in text, bare in CSV and JSON so that other tools read it
/// without skipping a title line.
/// An exact trace has calls, not samples: sample-based reports on it would be empty.
fn refuse_trace_for_sampled_reports(args: &ReportArgs) -> CliResult {
    let sampled = ["hotspots", "top-down", "timeline", "branches"];
    if !sampled.contains(&args.report.as_str()) {
        return Ok(());
    }
    let Ok(dir) = ResultDir::open(&args.result_dir) else { return Ok(()) };
    if dir.manifest().kind.as_deref() == Some("trace") {
        return Err(UserError::usage(format!(
            "{} is an exact trace (kairos collect trace), not a sampled result; `report {}` needs samples: \
             turn the trace into emulated samples with `kairos lab emulate-lbr -r {} --interval-us 1000 -o DIR`",
            args.result_dir.display(),
            args.report,
            args.result_dir.display()
        )));
    }
    Ok(())
}

fn single(title: &str, table: kairos_report::Table, format: Format) -> Rendered {
    if format == Format::Text {
        let mut d = Document::new(title);
        d.push_table(table);
        Rendered::Document(d)
    } else {
        Rendered::Table(table)
    }
}

/// About 40 buckets over the selected span, rounded to a whole number of milliseconds.
fn default_bucket_ns(profile: &Profile, filter: &Filter) -> u64 {
    let span = match (filter.time_range, profile.time_span()) {
        (Some((a, b)), _) => b.saturating_sub(a),
        (None, Some((a, b))) => b - a,
        (None, None) => 0,
    };
    ((span / 40).div_ceil(1_000_000)).max(1) * 1_000_000
}

/// Prints what `collect` and `import` show when they finish.
pub fn print_summary(dir: &ResultDir, profile: &Profile) -> CliResult {
    let doc = kairos_analysis_hotspots::summary(profile, &meta(dir));
    print!("{}", doc.to_text());
    print_notes(dir);
    println!("\nResult: {}  (see `kairos report hotspots -r {}`)", dir.path().display(), dir.path().display());
    Ok(())
}

/// The result and the samples of its default event (the first that has samples).
pub fn open(path: &std::path::Path) -> CliResult<(ResultDir, Profile)> {
    open_event(path, None)
}

/// The result and the samples of one event (`--event NAME`; None: the default).
pub fn open_event(path: &std::path::Path, event: Option<&str>) -> CliResult<(ResultDir, Profile)> {
    let dir = ResultDir::open(path).map_err(|e| {
        UserError::failed(format!("cannot open result {}: {e}; give a directory made by `kairos collect` or `kairos import`", path.display()))
    })?;
    let profile = kairos_result::read_profile_of_event(&dir, event).map_err(|e| match e {
        kairos_result::Error::UnknownEvent { .. } => UserError::usage(format!("{e}; choose one with --event NAME")),
        e => UserError::failed(format!("result {} is damaged: {e}; collect or import it again", path.display())),
    })?;
    Ok((dir, profile))
}

pub(crate) fn meta(dir: &ResultDir) -> Vec<(String, String)> {
    let m = dir.manifest();
    let mut meta = Vec::new();
    let mut push = |k: &str, v: String| meta.push((k.to_string(), v));
    if let Some(t) = &m.target {
        push("Target", match t {
            kairos_result::Target::Program { program, args } => format!("{program} {}", args.join(" ")).trim_end().to_string(),
            kairos_result::Target::Pid { pid } => format!("PID {pid}"),
            kairos_result::Target::SystemWide => "system-wide".into(),
            kairos_result::Target::Unknown => "unknown".into(),
        });
    }
    if let Some(s) = &m.source {
        push("Source", s.to_string());
    }
    if let Some(e) = &m.event {
        push("Event", match &e.reason {
            Some(r) => format!("{} ({r})", e.name),
            None => e.name.clone(),
        });
    }
    // A recording of several events: each with its samples and total, reports show one.
    let sampled: Vec<&kairos_result::EventSummary> = m.events.iter().filter(|e| e.samples > 0).collect();
    if sampled.len() > 1 {
        for e in &sampled {
            let total = if e.time { format!("{:.3} s of CPU time", e.weight as f64 / 1e9) } else { format!("{} events", kairos_report::thousands(e.weight)) };
            push("Events", format!("{}: {} samples, {total}", e.name, kairos_report::thousands(e.samples)));
        }
    }
    if let Some(i) = m.knobs.get("sampling-interval-us") {
        push("Sampling interval", format!("{i} us"));
    }
    if let Some(u) = m.knobs.get("stack-unwinding") {
        push("Stack unwinding", u.clone());
    }
    if let Some(s) = &m.stopped_by {
        push("Stopped by", s.clone());
    }
    if let Some(x) = &m.target_exit {
        match x {
            kairos_result::TargetExit::Code { code } => push("Target exit", format!("status {code}")),
            kairos_result::TargetExit::Signal { signal } => push("Target exit", format!("killed by signal {signal}")),
            _ => {}
        }
    }
    if let Some(h) = &m.host {
        if let Some(k) = &h.kernel_release {
            push("Kernel", k.clone());
        }
        if let Some(c) = &h.cpu_model {
            push("CPU", c.clone());
        }
    }
    meta
}

/// Notes of the manifest (decode errors, missing symbols) go under every text report,
/// so nobody reads a number without knowing what it lacks.
pub(crate) fn print_notes(dir: &ResultDir) {
    let notes = &dir.manifest().notes;
    if !notes.is_empty() {
        println!("\nNotes:");
        for n in notes {
            println!("  - {n}");
        }
    }
}

/// `START:END` in seconds relative to the first sample; either side may be empty.
pub(crate) fn parse_time_range(s: &str, profile: &Profile) -> CliResult<(u64, u64)> {
    let bad = || UserError::usage(format!("--time-range '{s}' must be START:END in seconds, e.g. 0.5:1.25 or 2: or :3"));
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let span = profile.time_span().map(|(f, l)| l - f).unwrap_or(0);
    let secs = |x: &str, default: u64| -> CliResult<u64> {
        if x.trim().is_empty() {
            return Ok(default);
        }
        let v: f64 = x.trim().parse().map_err(|_| bad())?;
        if !(v >= 0.0 && v.is_finite()) {
            return Err(bad());
        }
        Ok((v * 1e9) as u64)
    };
    let (start, end) = (secs(a, 0)?, secs(b, span)?);
    if end < start {
        return Err(UserError::usage(format!("--time-range '{s}' ends before it starts")));
    }
    Ok((start, end))
}
