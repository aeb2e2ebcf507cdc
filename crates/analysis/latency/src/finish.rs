//! The end of a latency collection: the recording converted (tracepoint payloads kept),
//! the boundaries paired into requests, each request accounted for, the slow ones and
//! every cause found, `latency.json` and the `requests` table written and the summary
//! printed.

use kairos_analysis_api::Failure;
use kairos_analysis_system_overview::{build, record_events, switch_ins, EventNames};
use kairos_collector::{CollectError, CollectSummary};
use kairos_convert::SideSample;
use kairos_model::Profile;
use kairos_result::ResultDir;
use kairos_session as session;

use crate::account::Context;
use crate::boundary::{probe_kind, Source};
use crate::log_file::Clock;
use crate::marker::{self, MarkerOutcome};
use crate::model::{LatencyResult, Unfinished, MANIFEST_KEY};
use crate::requests::{pair, Boundary, Paired};
use crate::sched::{self, Fields};
use crate::threshold::SlowerThan;

/// A recording made into its requests, saved in its result directory (`latency.json`,
/// the `requests` table, the manifest); nothing printed.
pub(crate) fn requests_of(
    dir: &mut ResultDir,
    summary: Result<CollectSummary, CollectError>,
    missing: Vec<(String, String)>,
    markers: Option<MarkerOutcome>,
    source: &Source,
    slower: SlowerThan,
    quiet: bool,
) -> Result<LatencyResult, Failure> {
    let (summary, kallsyms) = session::finish_collection(dir, summary)?;
    record_events(dir.manifest_mut(), &summary, missing);
    if let Some(m) = &markers {
        note_markers(dir, m);
    }
    session::save(dir)?;
    session::warn_write_error(&summary.stopped_by);
    let mut convert = session::convert_options(kallsyms);
    convert.keep_raw = true;
    let (profile, side, events) = session::convert_result_with_side(dir, &convert, quiet)?;
    let paired = pair(boundaries(dir, source, &profile, &side, &events)?);
    let mut result = account(dir, &profile, &side, &events, &paired);
    result.source = source.describe();
    result.lost_boundaries = markers.as_ref().map_or(0, |m| m.lost);
    result.lost_records = summary.lost_records;
    result.sample_period_ns = summary.sample_period;
    result.slower_than = dir
        .manifest()
        .knobs
        .get("slower-than")
        .cloned()
        .unwrap_or_default();
    crate::cause::assign(&mut result, slower);
    note_gaps(&mut result);
    dir.manifest_mut()
        .notes
        .extend(result.notes.iter().cloned());
    crate::requests_table::save_result(dir, &result)?;
    Ok(result)
}

/// The summary of a finished result, its notes and where it is.
pub(crate) fn print_summary(dir: &ResultDir, result: &LatencyResult) {
    print!("{}", crate::reports::summary(result).to_text());
    session::print_notes(dir);
    println!(
        "\nResult: {}  (see `kairos report requests -r {}` and `kairos report slow-vs-normal -r {}`)",
        dir.path().display(),
        dir.path().display(),
        dir.path().display()
    );
}

fn note_markers(dir: &mut ResultDir, m: &MarkerOutcome) {
    let notes = &mut dir.manifest_mut().notes;
    if let Some(p) = &m.problem {
        notes.push(p.clone());
    }
    if let Some(f) = &m.found_in {
        notes.push(format!(
            "request markers read from {f}: {} records",
            m.records
        ));
    }
    if m.lost > 0 {
        notes.push(format!("{} request marker records were overwritten before they were read (the program wrote faster than they were copied): the requests they began or ended are missing", m.lost));
    }
}

/// The begins and ends of the requests, from the source.
fn boundaries(
    dir: &ResultDir,
    source: &Source,
    profile: &Profile,
    side: &[SideSample],
    events: &[String],
) -> Result<Vec<Boundary>, Failure> {
    match source {
        Source::Function { .. } | Source::Usdt { .. } => {
            let kinds: Vec<Option<bool>> = events.iter().map(|e| probe_kind(e)).collect();
            // The probes fire in every process that runs the file; the target's processes
            // are those its own events (sampling, scheduler, faults) saw.
            let mut target: std::collections::HashSet<i32> = profile
                .samples
                .iter()
                .enumerate()
                .filter(|(i, _)| profile.event_of(*i) == 0)
                .filter_map(|(_, s)| profile.threads.get(s.thread as usize).map(|t| t.pid))
                .collect();
            target.extend(
                side.iter()
                    .filter(|s| kinds.get(s.attr as usize).copied().flatten().is_none())
                    .filter_map(|s| profile.threads.get(s.thread as usize).map(|t| t.pid)),
            );
            // Every process was recorded for an attached one with many threads: its own.
            if let Some(p) = only_pid(dir) {
                target = std::iter::once(p).collect();
            }
            Ok(side
                .iter()
                .filter_map(|s| {
                    let begin = kinds.get(s.attr as usize).copied().flatten()?;
                    let t = profile.threads.get(s.thread as usize)?;
                    target.contains(&t.pid).then_some(Boundary {
                        time_ns: s.time_ns,
                        tid: t.tid.max(0) as u32,
                        begin,
                        id: None,
                    })
                })
                .collect())
        }
        Source::Marker => {
            let marks = marker::load(&dir.path().join(marker::FILE)).unwrap_or_default();
            Ok(marks
                .into_iter()
                .map(|m| Boundary {
                    time_ns: m.time_ns,
                    tid: m.tid,
                    begin: m.begin,
                    id: m.begin.then_some(m.id),
                })
                .collect())
        }
        Source::Log { path, clock } => {
            let log = crate::log_file::read(path).map_err(Failure::failed)?;
            let realtime = clock.or(log.clock) == Some(Clock::Realtime);
            let shift = if realtime { realtime_offset(dir) } else { 0 };
            let on_clock = |t: u64| (t as i64 - shift).max(0) as u64;
            Ok(log
                .requests
                .iter()
                .flat_map(|r| {
                    [
                        Boundary {
                            time_ns: on_clock(r.start_ns),
                            tid: r.tid,
                            begin: true,
                            id: Some(r.id),
                        },
                        Boundary {
                            time_ns: on_clock(r.end_ns),
                            tid: r.tid,
                            begin: false,
                            id: None,
                        },
                    ]
                })
                .collect())
        }
    }
}

fn only_pid(dir: &ResultDir) -> Option<i32> {
    let p = dir
        .manifest()
        .extra
        .get(MANIFEST_KEY)?
        .get(crate::model::ONLY_PID)?;
    p.as_i64().and_then(|p| i32::try_from(p).ok())
}

fn realtime_offset(dir: &ResultDir) -> i64 {
    dir.manifest()
        .extra
        .get(MANIFEST_KEY)
        .and_then(|l| l.get("realtime_minus_monotonic_ns"))
        .and_then(|v| v.as_i64())
        .unwrap_or(0)
}

fn fields(dir: &ResultDir) -> Fields {
    dir.manifest()
        .extra
        .get(MANIFEST_KEY)
        .and_then(|l| l.get("fields"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Every paired request accounted for; those that never ended listed with why.
fn account(
    dir: &ResultDir,
    profile: &Profile,
    side: &[SideSample],
    events: &[String],
    paired: &Paired,
) -> LatencyResult {
    let names = EventNames::new(events);
    let mut entries = build(side, &names);
    entries.extend(crate::softirq::entries(side, events));
    let off = sched::off_cpu(
        side,
        events,
        &switch_ins(dir, profile),
        profile,
        &fields(dir),
    );
    let exits = exits(dir);
    let timed = crate::branch_time::points(profile);
    let mut ctx = Context::new(timed.as_ref().map_or(profile, |t| &t.0), off, entries);
    let mut result = LatencyResult {
        first_ns: profile.samples.first().map_or(0, |s| s.time_ns),
        last_ns: profile.samples.last().map_or(0, |s| s.time_ns),
        ends_without_begin: paired.ends_without_begin,
        ..LatencyResult::default()
    };
    for span in &paired.spans {
        match span.end_ns {
            Some(end) => result.requests.push(ctx.account(span, end)),
            None => result.unfinished.push(Unfinished {
                id: span.id,
                tid: span.tid,
                start_ns: span.start_ns,
                why: match exits.get(&span.tid) {
                    Some(&t) if t >= span.start_ns => format!(
                        "its thread {} exited {} after it began, before it ended",
                        span.tid,
                        crate::cause::us(t - span.start_ns)
                    ),
                    _ => format!(
                        "still running on thread {} when the collection stopped",
                        span.tid
                    ),
                },
            }),
        }
    }
    if let (Some(first), Some(last)) = (paired.spans.first(), paired.spans.last()) {
        result.first_ns = result.first_ns.min(first.start_ns);
        result.last_ns = result.last_ns.max(last.end_ns.unwrap_or(last.start_ns));
    }
    result.functions = ctx.functions;
    result.notes.extend(timed.map(|t| t.1));
    result
}

/// When each thread (by tid) exited: the recording's PERF_RECORD_EXIT records.
fn exits(dir: &ResultDir) -> std::collections::HashMap<u32, u64> {
    use kairos_perf_data::{PerfFile, Record};
    let Ok(file) = PerfFile::open(dir.path().join(session::PERF_DATA)) else {
        return Default::default();
    };
    file.records()
        .filter_map(|r| match r {
            Ok(Record::Exit(e)) => Some((e.tid.max(0) as u32, e.time)),
            _ => None,
        })
        .collect()
}

/// What the reader should know about gaps in the accounting.
fn note_gaps(r: &mut LatencyResult) {
    if r.requests.is_empty() {
        r.notes.push(format!(
            "no request was seen: check that {} happened while the collection ran",
            r.source
        ));
    }
    if !r.unfinished.is_empty() {
        r.notes.push(format!("{} requests began and never ended (see `kairos report requests`); they are left out of the distribution", r.unfinished.len()));
    }

    if r.requests.iter().any(|q| q.tid == 0) {
        r.notes.push("the request log names no thread, so those requests' time is not split by cause: add a tid column".into());
    }
}
