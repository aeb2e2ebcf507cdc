//! `kairos report NAME -r DIR` on a sampled profile: summary, hotspots, top-down and
//! timeline, which every analysis whose result is a profile gives through
//! [`profile_report`]; and the summary `collect` and `import` print.

use std::str::FromStr;

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_model::Profile;
use kairos_report::{Document, Format};
use kairos_result::ResultDir;
use kairos_session as session;

use crate::hotspots::Rows;
use crate::{Filter, GroupBy};

/// summary, hotspots, top-down or timeline (any other name) of the profile in
/// `req.result_dir`, with `--time-assignment` for hotspots and timeline.
pub fn profile_report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    let format = session::report_format(req)?;
    let group_by = req
        .group_by
        .as_deref()
        .map(GroupBy::from_str)
        .transpose()
        .map_err(|e| Failure::usage(format!("{e}")))?;
    if let Some((dir, rows)) = kept_hotspots(req, group_by) {
        let mut out = ReportOutput::new(
            single("Hotspots", rows.table(req.row_limit()), format).render(format),
        );
        if format == Format::Text {
            out.push(&session::notes_text(&dir));
        }
        return Ok(out);
    }
    let (dir, mut profile) = session::open_event(&req.result_dir, req.event.as_deref())?;
    let applied = match req.time_assignment.as_deref() {
        Some(m) if matches!(req.report.as_str(), "hotspots" | "timeline") => {
            Some(crate::time_assign::apply(m, &mut profile, &req.result_dir)?)
        }
        Some(_) => {
            return Err(Failure::usage(
                "--time-assignment applies to the hotspots and timeline reports",
            ))
        }
        None => None,
    };
    let filter = Filter {
        time_range: req
            .time_range
            .as_deref()
            .map(|r| parse_time_range(r, &profile))
            .transpose()?,
        threads: threads_of(&profile, &req.samples)?,
        comms: req.samples.comms.clone(),
        pids: req.samples.pids.clone(),
        cpus: req.samples.cpus.clone(),
    };
    let analysis_error = |e: crate::Error| Failure::usage(e.to_string());
    let limit = req.row_limit();
    let doc = match req.report.as_str() {
        "summary" => Rendered::Document(crate::summary(
            &profile,
            // The event shown, when the recording has several.
            &session::meta_for(&dir, req.event.as_deref()),
        )),
        "hotspots" => {
            let t = crate::hotspots(
                &profile,
                &filter,
                group_by.unwrap_or(GroupBy::Function),
                limit,
            )
            .map_err(analysis_error)?;
            single("Hotspots", t, format)
        }
        "top-down" => single(
            "Top-down",
            crate::top_down(&profile, &filter, None, limit).map_err(analysis_error)?,
            format,
        ),
        _ => {
            let bucket_ns = req.bucket_ns(|| default_bucket_ns(&profile, &filter))?;
            let d = crate::timeline(
                &profile,
                &filter,
                bucket_ns,
                group_by.unwrap_or(GroupBy::Function),
                limit.unwrap_or(8),
            )
            .map_err(analysis_error)?;
            Rendered::Document(d)
        }
    };
    let mut out = ReportOutput::new(doc.render(format));
    // Say how the points were made: under a text report, on stderr for CSV and JSON.
    if applied.is_some() && format == Format::Text {
        out.line("");
    }
    for line in applied.iter().flat_map(|a| a.lines()) {
        if format == Format::Text {
            out.line(&line);
        } else {
            out.aside.push(line);
        }
    }
    if format == Format::Text {
        out.push(&session::notes_text(&dir));
    }
    // The process ends next: freeing a large profile object by object would only cost time.
    std::mem::forget(profile);
    Ok(out)
}

/// The function rows of a whole result, as its collection or import kept them, when
/// `req` asks for exactly those: a large profile is then not read again at all.
fn kept_hotspots(req: &ReportRequest, group_by: Option<GroupBy>) -> Option<(ResultDir, Rows)> {
    let whole = req.report == "hotspots"
        && group_by.is_none_or(|g| g == GroupBy::Function)
        && req.time_range.is_none()
        && req.time_assignment.is_none()
        && req.event.is_none()
        && req.samples.is_empty();
    if !whole {
        return None;
    }
    let dir = ResultDir::open(&req.result_dir).ok()?;
    let rows = Rows::kept(&dir)?;
    Some((dir, rows))
}

enum Rendered {
    Table(kairos_report::Table),
    Document(Document),
}

impl Rendered {
    fn render(&self, format: Format) -> String {
        match self {
            Rendered::Table(t) => t.render(format),
            Rendered::Document(d) => d.render(format),
        }
    }
}

/// A one-table report: titled in text, bare in CSV and JSON so that other tools read it
/// without skipping a title line.
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
pub fn print_summary(dir: &ResultDir, profile: &Profile) {
    print_summary_from(dir, profile, None)
}

/// As [`print_summary`], with the function rows [`crate::summary_rows`] made beforehand.
pub fn print_summary_from(dir: &ResultDir, profile: &Profile, functions: Option<Rows>) {
    let (doc, rows) = crate::summary::summary_and_rows(profile, &session::meta(dir), functions);
    // A profile still holding several events is not what a report reads by default.
    if let Some(rows) = rows.filter(|_| profile.sample_events.is_empty()) {
        // Only a report's speed depends on it: a result without it is whole.
        let _ = rows.save(dir);
    }
    print!("{}", doc.to_text());
    session::print_notes(dir);
    println!(
        "\nResult: {}  (see `kairos report hotspots -r {}`)",
        dir.path().display(),
        dir.path().display()
    );
}

/// The TIDs `--tid` and `--comm` leave (both: those in both); a name no thread or
/// process has is refused with some that exist.
fn threads_of(
    p: &Profile,
    f: &kairos_analysis_api::SampleFilter,
) -> Result<Option<Vec<i32>>, Failure> {
    let Some(comms) = &f.comms else {
        return Ok(f.tids.clone());
    };
    let named =
        |t: &kairos_model::Thread| comms.iter().any(|c| *c == t.name || *c == t.process_name);
    if let Some(missing) = comms.iter().find(|c| {
        !p.threads
            .iter()
            .any(|t| t.name == **c || t.process_name == **c)
    }) {
        let mut names: Vec<&str> = p
            .threads
            .iter()
            .flat_map(|t| [t.process_name.as_str(), t.name.as_str()])
            .filter(|n| !n.is_empty())
            .collect();
        names.sort_unstable();
        names.dedup();
        names.truncate(8);
        return Err(Failure::usage(format!(
            "--comm {missing}: no thread or process of that name in this result; names here: {}",
            names.join(", ")
        )));
    }
    let tids = p
        .threads
        .iter()
        .filter(|t| named(t))
        .map(|t| t.tid)
        .filter(|tid| f.tids.as_ref().is_none_or(|want| want.contains(tid)))
        .collect();
    Ok(Some(tids))
}

/// `START:END` in seconds relative to the first sample; either side may be empty.
pub fn parse_time_range(s: &str, profile: &Profile) -> Result<(u64, u64), Failure> {
    let bad = || {
        Failure::usage(format!(
            "--time-range '{s}' must be START:END in seconds, e.g. 0.5:1.25 or 2: or :3"
        ))
    };
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let span = profile.time_span().map(|(f, l)| l - f).unwrap_or(0);
    let secs = |x: &str, default: u64| -> Result<u64, Failure> {
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
        return Err(Failure::usage(format!(
            "--time-range '{s}' ends before it starts"
        )));
    }
    Ok((start, end))
}
