//! The flight recorder: `kairos collect latency -p PID` without `-d` stays attached to a
//! service for as long as it runs, in windows (`-k window`, 10 s) each recorded and made
//! into its requests on its own. Every request is counted (its duration in buckets 2%
//! wide, slow or not); a window with a slow request, or the one SIGUSR1 ends ("save the
//! last window now"), is kept whole (its recording and its requests, a result directory
//! of its own under `windows/`), the newest `-k keep-windows` (6) of them; the others are
//! dropped once counted. So the disk holds at most that many windows plus the two being
//! recorded and finished, and memory one window's conversion. Ctrl-C ends the last window and the collection; the result is
//! rewritten after every window, so it is readable whenever the collection ends.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kairos_analysis_api::{CollectRequest, Failure};
use kairos_collector::{CollectOptions, StopReason};
use kairos_result::ResultDir;
use kairos_session::{self as session, PERF_DATA};

use crate::boundary::Source;
use crate::marker::{self, MarkerReader};
use crate::model::{Aggregate, LatencyResult, Request, Window, MANIFEST_KEY};
use crate::threshold::SlowerThan;
use crate::SPEC;

/// Where the windows' result directories go.
pub const WINDOWS_DIR: &str = "windows";
/// The marker records read between two windows (dropped).
const BETWEEN: &str = "requests.markers.between";

/// Whether a collection is a flight recorder: attached to a process, with no end set.
pub fn wanted(req: &CollectRequest) -> bool {
    req.pid.is_some() && req.duration.is_none()
}

/// The flags the signals set: SIGUSR1 (keep this window, end it now), SIGINT/SIGTERM.
struct Signals<'a> {
    save_now: &'a AtomicBool,
    interrupted: &'a AtomicBool,
}

/// What the windows so far add up to.
struct Flight {
    result: LatencyResult,
    /// Windows kept whole at most (`-k keep-windows`).
    keep: usize,
    /// Kept windows, oldest first: (index into the aggregate's windows, directory).
    kept: VecDeque<(usize, PathBuf)>,
}

pub(crate) fn record(
    req: &CollectRequest,
    dir: &mut ResultDir,
    mut opts: CollectOptions,
    reader: Option<MarkerReader>,
    source: &Source,
    slower: SlowerThan,
    missing: Vec<(String, String)>,
) -> Result<(), Failure> {
    let window = Duration::from_nanos(
        crate::threshold::duration_ns(req.knobs.get("window")).map_err(Failure::usage)?,
    );
    let keep = req.knobs.u64("keep-windows").max(1) as usize;
    let save_now = Arc::new(AtomicBool::new(false));
    let usr1 = signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&save_now))
        .map_err(|e| Failure::failed(format!("cannot install the SIGUSR1 handler ({e})")))?;
    // Ctrl-C while a window is being finished ends the flight after it (while one is
    // recorded, the collector ends the window at once).
    let interrupted = Arc::new(AtomicBool::new(false));
    let mut handlers = vec![usr1];
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        handlers.push(
            signal_hook::flag::register(sig, Arc::clone(&interrupted)).map_err(|e| {
                Failure::failed(format!("cannot install the signal handlers ({e})"))
            })?,
        );
    }
    opts.duration = Some(window);
    opts.stop = Some(Arc::clone(&save_now));
    let bound = format!(
        "windows of {:.0} s; the newest {keep} windows with a slow request (or saved with SIGUSR1) kept whole under {WINDOWS_DIR}/, every other request counted in duration buckets 2% wide; at most {} windows on disk (the kept ones, the one recorded and the one being finished) and one window's conversion in memory",
        window.as_secs_f64(),
        keep + 2
    );
    if !req.quiet {
        println!("flight recorder on PID {}: {bound}. Ctrl-C ends it; `kill -USR1 {}` saves the last window now.", req.pid.unwrap_or(0), std::process::id());
    }
    let mut flight = Flight {
        result: LatencyResult {
            source: source.describe(),
            slower_than: req.knobs.get("slower-than").to_string(),
            aggregate: Some(Aggregate {
                bound,
                ..Aggregate::default()
            }),
            ..LatencyResult::default()
        },
        kept: VecDeque::new(),
        keep,
    };
    let outcome = windows(
        req,
        dir,
        &mut opts,
        reader.as_ref(),
        source,
        slower,
        &missing,
        &Signals {
            save_now: &save_now,
            interrupted: &interrupted,
        },
        &mut flight,
    );
    for h in handlers {
        signal_hook::low_level::unregister(h);
    }
    if let Some(m) = reader.map(MarkerReader::finish) {
        flight.result.lost_boundaries = m.lost;
        flight.result.notes.extend(m.problem);
    }
    flight.result.notes.push("requests that span two windows, or fall in the few milliseconds between them (re-attaching), are not counted; a kept window is a result of its own: open it with kairos view or kairos report".into());
    let _ = std::fs::remove_file(dir.path().join(BETWEEN));
    save(dir, &flight.result)?;
    outcome?;
    crate::finish::print_summary(dir, &flight.result);
    Ok(())
}

/// A recorded window being made into its requests (on its own thread, while the next
/// window records): its directory, its requests, whether SIGUSR1 asked to keep it.
type Finishing = std::thread::JoinHandle<Result<(ResultDir, LatencyResult, bool), Failure>>;

#[allow(clippy::too_many_arguments)]
fn windows(
    req: &CollectRequest,
    dir: &mut ResultDir,
    opts: &mut CollectOptions,
    reader: Option<&MarkerReader>,
    source: &Source,
    slower: SlowerThan,
    missing: &[(String, String)],
    signals: &Signals<'_>,
    flight: &mut Flight,
) -> Result<(), Failure> {
    let mut finishing: Option<Finishing> = None;
    let mut outcome = Ok(());
    for n in 0.. {
        if n > 0 && !req.pid.is_some_and(kairos_collector::process_alive) {
            break;
        }
        let path = dir.path().join(WINDOWS_DIR).join(format!("w{n:05}"));
        let mut wdir = window_dir(req, dir, &path)?;
        if let Some(r) = reader {
            r.switch_to(path.join(marker::FILE));
        }
        opts.output = path.join(PERF_DATA);
        let summary = kairos_collector::collect(opts, &mut |_| {});
        let asked = signals.save_now.swap(false, Ordering::SeqCst);
        let last = !matches!(
            summary.as_ref().map(|s| &s.stopped_by),
            Ok(StopReason::Duration)
        ) || signals.interrupted.load(Ordering::SeqCst);
        if let Some(r) = reader {
            // The window's records file is closed (the reader switches within a
            // millisecond); what comes between two windows is not counted.
            r.switch_to(dir.path().join(BETWEEN));
            std::thread::sleep(Duration::from_millis(5));
        }
        outcome = outcome.and(take(finishing.take(), flight, slower, dir));
        let (source, missing) = (source.clone(), missing.to_vec());
        finishing = Some(std::thread::spawn(move || {
            let w = crate::finish::requests_of(
                &mut wdir, summary, missing, None, &source, slower, true,
            )?;
            Ok((wdir, w, asked))
        }));
        if last || outcome.is_err() {
            break;
        }
    }
    outcome.and(take(finishing, flight, slower, dir))
}

/// Waits for a window being finished and adds it to the flight.
fn take(
    finishing: Option<Finishing>,
    flight: &mut Flight,
    slower: SlowerThan,
    dir: &mut ResultDir,
) -> Result<(), Failure> {
    let Some(h) = finishing else {
        return Ok(());
    };
    let (wdir, w, asked) = h
        .join()
        .map_err(|_| Failure::failed("making a window into its requests stopped unexpectedly"))??;
    add_window(flight, wdir, w, slower, asked)?;
    save(dir, &flight.result)
}

/// A window's result directory, with the flight's target and latency section.
fn window_dir(req: &CollectRequest, dir: &ResultDir, path: &Path) -> Result<ResultDir, Failure> {
    std::fs::create_dir_all(path.parent().unwrap_or(path))
        .map_err(|e| Failure::failed(format!("cannot create {} ({e})", path.display())))?;
    let mut w = session::create_result_dir(Some(path), SPEC.result_suffix)?;
    let target = dir
        .manifest()
        .target
        .clone()
        .unwrap_or(kairos_result::Target::SystemWide);
    session::start_manifest(&mut w, SPEC.name, &req.knobs, target);
    if let Some(l) = dir.manifest().extra.get(MANIFEST_KEY) {
        w.manifest_mut()
            .extra
            .insert(MANIFEST_KEY.into(), l.clone());
    }
    session::save(&w)?;
    Ok(w)
}

/// Counts a finished window, keeps it whole when it has a slow request (or was asked
/// for), and drops the oldest kept ones beyond the flight's `keep`.
fn add_window(
    flight: &mut Flight,
    mut wdir: ResultDir,
    mut w: LatencyResult,
    slower: SlowerThan,
    asked: bool,
) -> Result<(), Failure> {
    let agg = flight
        .result
        .aggregate
        .get_or_insert_with(Aggregate::default);
    agg.add(w.requests.iter().map(|q| q.duration_ns));
    // Slow against every request so far (a percentile of the flight, not of the window).
    let threshold = match slower {
        SlowerThan::Duration(ns) => ns,
        SlowerThan::Percentile(p) => agg.percentile(p),
    };
    crate::cause::assign(&mut w, SlowerThan::Duration(threshold));
    w.threshold_how = slower.describe();
    crate::requests_table::save_result(&mut wdir, &w)?;
    let slow = w.requests.iter().filter(|q| q.slow).count() as u64;
    agg.slow += slow;
    let keep = asked || slow > 0;
    agg.windows.push(Window {
        dir: keep.then(|| relative(wdir.path())),
        start_ns: w.first_ns,
        end_ns: w.last_ns,
        requests: w.requests.len() as u64,
        slow,
        why: if asked {
            "saved with SIGUSR1".into()
        } else if keep {
            format!("{slow} slow requests")
        } else {
            "no slow request: counted, dropped".into()
        },
    });
    let index = agg.windows.len() - 1;
    let r = &mut flight.result;
    r.threshold_ns = threshold;
    r.threshold_how = slower.describe();
    r.sample_period_ns = w.sample_period_ns;
    r.lost_records += w.lost_records;
    r.ends_without_begin += w.ends_without_begin;
    if r.first_ns == 0 {
        r.first_ns = w.first_ns;
    }
    r.last_ns = w.last_ns.max(r.last_ns);
    if keep {
        flight.kept.push_back((index, wdir.path().to_path_buf()));
        merge(&mut flight.result, w);
    } else {
        let _ = std::fs::remove_dir_all(wdir.path());
    }
    drop_oldest(flight);
    Ok(())
}

/// A window's directory as the flight's result names it (`windows/wNNNNN`).
fn relative(window: &Path) -> String {
    let top = window
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new(""));
    window.strip_prefix(top).map_or_else(
        |_| window.display().to_string(),
        |p| p.display().to_string(),
    )
}

/// Removes the oldest kept windows beyond the flight's `keep`, their requests with them.
fn drop_oldest(flight: &mut Flight) {
    while flight.kept.len() > flight.keep {
        let Some((old, path)) = flight.kept.pop_front() else {
            break;
        };
        let _ = std::fs::remove_dir_all(&path);
        let Some(win) = flight
            .result
            .aggregate
            .as_mut()
            .and_then(|a| a.windows.get_mut(old))
        else {
            continue;
        };
        win.dir = None;
        win.why = format!(
            "{}; dropped for newer windows ({} kept)",
            win.why, flight.keep
        );
        let (from, to) = (win.start_ns, win.end_ns);
        flight
            .result
            .requests
            .retain(|q| q.start_ns < from || q.start_ns > to);
    }
}

/// A kept window's requests into the flight's, their function numbers moved into the
/// flight's table.
fn merge(into: &mut LatencyResult, w: LatencyResult) {
    let map: Vec<u32> = w
        .functions
        .iter()
        .map(|name| match into.functions.iter().position(|f| f == name) {
            Some(i) => i as u32,
            None => {
                into.functions.push(name.clone());
                (into.functions.len() - 1) as u32
            }
        })
        .collect();
    into.requests
        .extend(w.requests.into_iter().map(|mut q: Request| {
            for f in &mut q.functions {
                f.0 = map.get(f.0 as usize).copied().unwrap_or(f.0);
            }
            q
        }));
    into.unfinished.extend(w.unfinished);
}

/// The flight's result so far: `latency.json`, the kept windows' requests as the
/// `requests` table, the manifest.
fn save(dir: &mut ResultDir, r: &LatencyResult) -> Result<(), Failure> {
    crate::requests_table::save_result(dir, r)
}
