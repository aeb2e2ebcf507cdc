//! `kairos report NAME -r DIR` on a memory-consumption result: reads its tables and
//! prints one of the reports the spec declares.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_report::{Document, Format};
use kairos_result::ResultDir;
use kairos_session as session;

use crate::{replay, reports, tables, SPEC};

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    req.check(&SPEC)?;
    if req.report == "hugepages" {
        return crate::hugepages_report::report(req);
    }
    let format = kairos_session::report_format(req)?;
    let dir = session::open_result(&req.result_dir)?;
    let data = tables::read(&dir.tables_path()).map_err(|e| {
        Failure::failed(format!(
            "result {} is damaged: {e}; collect it again",
            req.result_dir.display()
        ))
    })?;
    let limit = req.row_limit();
    let span = data.rows.iter().map(|r| r.time_ns).max().unwrap_or(0);
    let bucket_ns = req.bucket_ns(|| ((span / 40).div_ceil(1_000_000)).max(1) * 1_000_000)?;
    if req.report == "heap-timeline" && span / bucket_ns.max(1) > 100_000 {
        return Err(Failure::usage(format!(
            "--bucket-ms would make more than 100000 buckets over {:.3} s; give a larger width",
            span as f64 / 1e9
        )));
    }
    let st = replay::replay(
        &data.rows,
        if req.report == "heap-timeline" {
            bucket_ns
        } else {
            0
        },
    );
    let text = match req.report.as_str() {
        "summary" => reports::summary(
            data.rows.len() as u64,
            &data.sites,
            &st,
            &meta(&dir),
            limit.unwrap_or(10),
        )
        .render(format),
        "allocations" => one(
            "Allocations by memory object (bottom-up)",
            reports::allocations(&data.sites, &st, limit.or(Some(50))),
            format,
        ),
        "sizes" => one("Allocation sizes", reports::sizes(&st), format),
        _ => one("Heap over time", reports::heap_timeline(&st), format),
    };
    let mut out = ReportOutput::new(text);
    if format == Format::Text {
        out.push(&notes_text(&dir, &st));
    }
    Ok(out)
}

fn one(title: &str, t: kairos_report::Table, format: Format) -> String {
    if format == Format::Text {
        let mut d = Document::new(title);
        d.push_table(t);
        d.to_text()
    } else {
        t.render(format)
    }
}

pub(crate) fn print_notes(dir: &ResultDir, st: &replay::Stats) {
    print!("{}", notes_text(dir, st));
}

/// The result's notes and the replay's accounting notes, as text reports end with them.
fn notes_text(dir: &ResultDir, st: &replay::Stats) -> String {
    let mut out = String::from("\nNotes:\n");
    for n in dir
        .manifest()
        .notes
        .iter()
        .cloned()
        .chain(reports::accounting_notes(st))
    {
        out.push_str(&kairos_report::wrap(
            &n,
            kairos_report::text_layout().width,
            "  - ",
            "    ",
        ));
    }
    out
}

pub(crate) fn meta(dir: &ResultDir) -> Vec<(String, String)> {
    let m = dir.manifest();
    let mut v = Vec::new();
    if let Some(kairos_result::Target::Program { program, args }) = &m.target {
        v.push((
            "Target".into(),
            format!("{program} {}", args.join(" "))
                .trim_end()
                .to_string(),
        ));
    }
    if let Some(k) = m.knobs.get("min-object-size") {
        v.push((
            "Min object size".into(),
            format!("{k} B (smaller blocks are counted, without a stack)"),
        ));
    }
    match m.target_exit {
        Some(kairos_result::TargetExit::Code { code }) => {
            v.push(("Target exit".into(), format!("status {code}")))
        }
        Some(kairos_result::TargetExit::Signal { signal }) => {
            v.push(("Target exit".into(), format!("killed by signal {signal}")))
        }
        _ => {}
    }
    v
}
