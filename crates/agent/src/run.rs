//! The agent's loop: record a window, hand it to a thread that converts and spools it
//! while the next window records, and keep one sender per destination busy with the
//! spool; on the end (Ctrl-C, SIGTERM, `-d`, the service exiting) the open window is
//! finished and the senders get `flush_timeout` to empty the spool.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kairos_collector::{CollectOptions, EventChoice, StopReason, Target};
use kairos_export::otlp::AttrValue;

use crate::config::Kind;
use crate::latency::Flight;
use crate::send::{Outcome, Sender};
use crate::spool::Spool;
use crate::usage::{Meter, Usage};
use crate::window::{self, Converter, Filter};
use crate::{log, AgentError, AgentOptions, Summary};

/// What the main loop and the senders share.
#[derive(Default)]
struct Shared {
    /// Set when the agent ends: senders empty their spool, then return.
    stopping: AtomicBool,
    deadline: Mutex<Option<Instant>>,
    /// Bumped on every new window and on stop; senders wait on it.
    bell: (Mutex<u64>, Condvar),
    sent: AtomicU64,
    refused: AtomicU64,
    /// Windows dropped by this run (spool bound or a failed write).
    dropped: AtomicU64,
}

impl Shared {
    fn ring(&self) {
        *lock(&self.bell.0) += 1;
        self.bell.1.notify_all();
    }

    /// Waits up to `d`, less if the bell rings.
    fn wait(&self, d: Duration) {
        let g = lock(&self.bell.0);
        let start = *g;
        let _ = self.bell.1.wait_timeout_while(g, d, |n| *n == start);
    }

    fn past_deadline(&self) -> bool {
        lock(&self.deadline).is_some_and(|d| Instant::now() >= d)
    }
}

/// A poisoned lock still holds usable data here (counters, a spool of files).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One destination: its kind and its spool (its client is its sender thread's).
struct Lane {
    kind: Kind,
    spool: Arc<Mutex<Spool>>,
}

pub fn run(opts: &AgentOptions) -> Result<Summary, AgentError> {
    let (lanes, clients) = lanes(opts)?;
    // The windows' recordings stay apart from the spool, so that a full spool disk stops
    // spooling, not recording.
    let work = std::env::temp_dir().join(format!("{WORK_PREFIX}{}", std::process::id()));
    remove_stale_work();
    std::fs::create_dir_all(&work).map_err(|source| AgentError::Spool {
        dir: work.clone(),
        source,
    })?;
    let kallsyms = kairos_session::snapshot_kallsyms(&work).ok();
    let convert = Converter::new(kairos_session::convert_options(kallsyms));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handlers = Vec::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        handlers.push(
            signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(|e| {
                AgentError::Config(format!("cannot install the signal handlers ({e})"))
            })?,
        );
    }
    let resource = crate::host::resource(&opts.labels);
    let shared = Arc::new(Shared::default());
    let labels = crate::host::as_labels(&resource);
    let senders: Vec<JoinHandle<()>> = lanes
        .iter()
        .zip(clients)
        .map(|(lane, sender)| {
            let (spool, shared, labels) =
                (Arc::clone(&lane.spool), Arc::clone(&shared), labels.clone());
            std::thread::Builder::new()
                .name(format!("kairos-send-{}", lane.kind.name()))
                .spawn(move || send_loop(&sender, &spool, &shared, &labels))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| AgentError::Config(format!("cannot start the sender threads ({e})")))?;
    log(&start_line(opts));
    let mut flight = start_flight(opts, &work)?;
    let setup = Setup {
        opts,
        lanes: &lanes,
        convert: &convert,
        resource: &resource,
        stop: &stop,
        shared: &shared,
        work: &work,
    };
    let recorded = windows(&setup, flight.as_mut());
    if let Some(f) = flight.as_mut() {
        f.stop();
        spool_slow_requests(f, &lanes, &resource, &shared);
    }
    for h in handlers {
        signal_hook::low_level::unregister(h);
    }
    *lock(&shared.deadline) = Some(Instant::now() + opts.flush_timeout);
    shared.stopping.store(true, Ordering::SeqCst);
    shared.ring();
    for h in senders {
        let _ = h.join();
    }
    let _ = std::fs::remove_dir_all(&work);
    let mut summary = recorded?;
    summary.sent = shared.sent.load(Ordering::SeqCst);
    summary.refused = shared.refused.load(Ordering::SeqCst);
    summary.dropped = shared.dropped.load(Ordering::SeqCst);
    for lane in &lanes {
        let spool = lock(&lane.spool);
        summary.waiting += spool.entries().map_or(0, |e| e.len() as u64);
    }
    log(&format!(
        "stopped after {} windows ({} samples): {} sent, {} refused, {} dropped by the spool bound, {} waiting in {} for the next start",
        summary.windows,
        summary.samples,
        summary.sent,
        summary.refused,
        summary.dropped,
        summary.waiting,
        opts.spool_dir.display()
    ));
    Ok(summary)
}

/// The agent's working folder in the temporary directory, followed by its pid.
const WORK_PREFIX: &str = "kairos-agent-";

/// Removes the working folders of agents that are gone without cleaning up (killed).
fn remove_stale_work() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(WORK_PREFIX)
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() as i32 && !kairos_collector::process_alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Each destination's spool, opened (windows left by an earlier run are sent first), and
/// its client.
fn lanes(opts: &AgentOptions) -> Result<(Vec<Lane>, Vec<Sender>), AgentError> {
    if opts.destinations.is_empty() {
        return Err(AgentError::Config("no destination given".into()));
    }
    let mut lanes = Vec::new();
    let mut clients = Vec::new();
    for d in &opts.destinations {
        let dir = opts.spool_dir.join(d.kind.name());
        let spool = Spool::open(&dir, opts.spool_max_bytes)
            .map_err(|source| AgentError::Spool { dir, source })?;
        let waiting = spool.entries().map_or(0, |e| e.len());
        if waiting > 0 {
            log(&format!(
                "{waiting} windows of an earlier run wait for {} {}; they go first",
                d.kind.name(),
                d.url
            ));
        }
        clients.push(Sender::new(d.clone()).map_err(AgentError::Config)?);
        lanes.push(Lane {
            kind: d.kind,
            spool: Arc::new(Mutex::new(spool)),
        });
    }
    Ok((lanes, clients))
}

fn start_line(opts: &AgentOptions) -> String {
    let what = match &opts.target {
        Target::Pid(pid) => format!("process {pid}"),
        _ => "every process".to_string(),
    };
    let filter = match (&opts.comm, &opts.cgroup) {
        (Some(c), _) => format!(" named {c}"),
        (_, Some(g)) => format!(" in cgroup {g}"),
        _ => String::new(),
    };
    let to: Vec<String> = opts
        .destinations
        .iter()
        .map(|d| format!("{} {}", d.kind.name(), d.url))
        .collect();
    format!(
        "sampling {what}{filter} at {} Hz per CPU in windows of {:.0} s, sent to {}; spool {} (at most {} MB per destination)",
        opts.hz,
        opts.window.as_secs_f64(),
        to.join(" and "),
        opts.spool_dir.display(),
        opts.spool_max_bytes / (1 << 20)
    )
}

/// A window being converted and spooled: the number of samples it kept.
type Finishing = JoinHandle<u64>;

/// The latency flight recorder `--latency` asks for, started on the agent's process.
fn start_flight(opts: &AgentOptions, work: &Path) -> Result<Option<Flight>, AgentError> {
    let Some(latency) = &opts.latency else {
        return Ok(None);
    };
    let Target::Pid(pid) = opts.target else {
        return Err(AgentError::Config(
            "--latency needs the service's process: give -p PID".into(),
        ));
    };
    let flight = Flight::start(
        latency,
        pid,
        opts.window.as_secs_f64(),
        &work.join("latency"),
    )
    .map_err(AgentError::Config)?;
    log(&format!(
        "latency flight recorder on process {pid} (requests from {}): slow requests go to every destination as profiles of their own",
        latency.request
    ));
    Ok(Some(flight))
}

/// What the loop of windows works with.
struct Setup<'a> {
    opts: &'a AgentOptions,
    lanes: &'a [Lane],
    convert: &'a Converter,
    resource: &'a [(String, AttrValue)],
    stop: &'a Arc<AtomicBool>,
    shared: &'a Arc<Shared>,
    work: &'a Path,
}

/// Records windows until the end; returns the counts (sent and refused are the senders').
fn windows(setup: &Setup<'_>, mut flight: Option<&mut Flight>) -> Result<Summary, AgentError> {
    let opts = setup.opts;
    let mut copts = CollectOptions::new(opts.target.clone(), PathBuf::new());
    copts.interval_us = (1_000_000 / u64::from(opts.hz.max(1))).max(10);
    copts.event = EventChoice::CpuClock;
    copts.unwinding = opts.unwinding;
    copts.stop = Some(Arc::clone(setup.stop));
    let started = Instant::now();
    let filter = Arc::new(Mutex::new(Filter::new(
        opts.comm.clone(),
        opts.cgroup.clone(),
    )));
    let mut meter = Meter::start();
    let mut summary = Summary::default();
    let mut finishing: Option<Finishing> = None;
    let mut last_offset: Option<i128> = None;
    for n in 0u64.. {
        let remaining = opts.duration.map(|d| d.saturating_sub(started.elapsed()));
        if remaining == Some(Duration::ZERO) || setup.stop.load(Ordering::SeqCst) {
            break;
        }
        copts.duration = Some(remaining.map_or(opts.window, |r| r.min(opts.window)));
        copts.output = setup.work.join(format!("window-{}.data", n % 2));
        let offset = clock_checked(&mut last_offset);
        let from_s = unix_s();
        let recorded = kairos_collector::collect(&copts, &mut |_| {});
        let until_s = unix_s();
        summary.samples += finishing.take().map_or(0, |h| h.join().unwrap_or(0));
        if let Some(f) = flight.as_deref_mut() {
            spool_slow_requests(f, setup.lanes, setup.resource, setup.shared);
        }
        let collected = match recorded {
            Ok(c) => c,
            Err(e) if n == 0 => {
                return Err(AgentError::Collect(
                    kairos_session::collect_error(e).to_string(),
                ))
            }
            Err(e) => {
                log(&format!(
                    "the collection cannot go on: {}",
                    kairos_session::collect_error(e)
                ));
                break;
            }
        };
        summary.windows += 1;
        let job = Job {
            n,
            perf_data: copts.output.clone(),
            from_s,
            until_s,
            wall_offset_ns: offset,
            lost: collected.lost_records,
            usage: meter.lap(),
            resource: setup.resource.to_vec(),
            convert: setup.convert.clone(),
            filter: Arc::clone(&filter),
            spools: setup
                .lanes
                .iter()
                .map(|l| (l.kind, Arc::clone(&l.spool)))
                .collect(),
            shared: Arc::clone(setup.shared),
        };
        finishing = Some(std::thread::spawn(move || job.finish()));
        if !goes_on(&collected.stopped_by) {
            break;
        }
    }
    summary.samples += finishing.take().map_or(0, |h| h.join().unwrap_or(0));
    Ok(summary)
}

/// Whether the windows go on after one that stopped for this reason (said in the log).
fn goes_on(stopped_by: &StopReason) -> bool {
    match stopped_by {
        StopReason::Duration => true,
        StopReason::TargetExited => {
            log("the process ended; its last window is sent and the agent stops");
            false
        }
        StopReason::Signal(_) => false,
        StopReason::WriteError(e) => {
            log(&format!(
                "the window could not be written in full ({e}); what was written is sent and the agent stops: free space in {}",
                std::env::temp_dir().display()
            ));
            false
        }
    }
}

/// The wall-clock offset for the next window, saying so when the clock jumped since
/// the last one.
fn clock_checked(last: &mut Option<i128>) -> i128 {
    let offset = wall_offset_ns();
    if let Some(prev) = last.filter(|p| (p - offset).abs() > 1_000_000_000) {
        log(&format!(
            "the host clock moved by {:+.1} s since the last window; sample times follow the new clock",
            (offset - prev) as f64 / 1e9
        ));
    }
    *last = Some(offset);
    offset
}

fn wall_offset_ns() -> i128 {
    kairos_session::clock_offset_ns().map_or(0, i128::from)
}

fn unix_s() -> u64 {
    kairos_collector::realtime_ns() / 1_000_000_000
}

/// A recorded window on its way to the spools.
struct Job {
    n: u64,
    perf_data: PathBuf,
    from_s: u64,
    until_s: u64,
    wall_offset_ns: i128,
    lost: u64,
    usage: Usage,
    resource: Vec<(String, AttrValue)>,
    convert: Converter,
    filter: Arc<Mutex<Filter>>,
    spools: Vec<(Kind, Arc<Mutex<Spool>>)>,
    shared: Arc<Shared>,
}

impl Job {
    /// Converts, spools and logs the window; returns its samples.
    fn finish(self) -> u64 {
        let attrs = vec![
            (
                "kairos.agent.window".to_string(),
                AttrValue::Int(self.n as i64),
            ),
            (
                "kairos.agent.cpu_millipercent".to_string(),
                AttrValue::Int((self.usage.cpu_percent * 1000.0).round() as i64),
            ),
            (
                "kairos.agent.rss_bytes".to_string(),
                AttrValue::Int(self.usage.rss_bytes as i64),
            ),
            (
                "kairos.agent.lost_records".to_string(),
                AttrValue::Int(self.lost as i64),
            ),
        ];
        let kinds: Vec<_> = self.spools.iter().map(|(k, _)| *k).collect();
        let made = {
            let mut filter = lock(&self.filter);
            let made = window::make(
                &self.perf_data,
                &self.convert,
                &mut filter,
                &kinds,
                &window::Context {
                    resource: &self.resource,
                    profile_attributes: &attrs,
                    wall_offset_ns: self.wall_offset_ns,
                },
            );
            filter.forget_exited();
            made
        };
        let _ = std::fs::remove_file(&self.perf_data);
        let cost = format!(
            "agent {:.2}% of one CPU, {} MB resident",
            self.usage.cpu_percent,
            self.usage.rss_bytes >> 20
        );
        let made = match made {
            Ok(m) => m,
            Err(e) => {
                log(&format!(
                    "window {}: {e}; nothing sent for it ({cost})",
                    self.n
                ));
                return 0;
            }
        };
        if made.payloads.is_empty() {
            log(&format!(
                "window {}: no samples{}; nothing sent ({cost})",
                self.n,
                if made.filtered_out > 0 {
                    format!(
                        " of the processes asked for ({} of others left out)",
                        made.filtered_out
                    )
                } else {
                    String::new()
                }
            ));
            return 0;
        }
        let mut queued = Vec::new();
        for (kind, spool) in &self.spools {
            let Some((_, payload)) = made.payloads.iter().find(|(k, _)| k == kind) else {
                continue;
            };
            let what = format!("window {}", self.n);
            if let Some(waiting) = spool_payload(
                *kind,
                spool,
                &self.shared,
                self.from_s,
                self.until_s,
                payload,
                &what,
            ) {
                queued.push(format!(
                    "{} ({} KB, {waiting} waiting)",
                    kind.name(),
                    payload.len() >> 10
                ));
            }
        }
        self.shared.ring();
        let lost = if self.lost > 0 {
            format!(", {} records lost", self.lost)
        } else {
            String::new()
        };
        log(&format!(
            "window {}: {} samples of {} processes{lost}; queued for {}; {cost}",
            self.n,
            made.samples,
            made.processes,
            queued.join(", ")
        ));
        for note in made.notes.iter().take(3) {
            log(&format!("window {}: {note}", self.n));
        }
        made.samples as u64
    }
}

/// Adds a payload to a destination's spool; the windows then waiting, or None (said in
/// the log) when it could not be written.
fn spool_payload(
    kind: Kind,
    spool: &Mutex<Spool>,
    shared: &Shared,
    from_s: u64,
    until_s: u64,
    payload: &[u8],
    what: &str,
) -> Option<usize> {
    let mut s = lock(spool);
    match s.push(from_s, until_s, payload) {
        Ok(p) => {
            shared.dropped.fetch_add(p.dropped, Ordering::SeqCst);
            if p.dropped > 0 {
                log(&format!(
                    "the {} spool passed its bound: its {} oldest windows were dropped (counted, and reported to the backend when it answers)",
                    kind.name(),
                    p.dropped
                ));
            }
            Some(p.waiting)
        }
        Err(e) => {
            let _ = s.add_dropped(1);
            shared.dropped.fetch_add(1, Ordering::SeqCst);
            log(&format!(
                "{what} cannot be spooled for {} in {} ({e}); it is dropped and counted: free space there or give --spool on another disk",
                kind.name(),
                s.dir().display()
            ));
            None
        }
    }
}

/// The slow requests of the latency windows finished so far, into the spools: a request
/// per window to OTLP destinations, a profile per slow request to pprof ones.
fn spool_slow_requests(
    flight: &mut Flight,
    lanes: &[Lane],
    resource: &[(String, AttrValue)],
    shared: &Shared,
) {
    let now = unix_s();
    let pprof = lanes.iter().any(|l| !l.kind.is_otlp());
    for w in flight.take(resource, wall_offset_ns(), pprof) {
        for lane in lanes {
            if lane.kind.is_otlp() {
                let what = "a latency window";
                spool_payload(lane.kind, &lane.spool, shared, now, now, &w.otlp, what);
                continue;
            }
            for r in &w.pprof {
                let what = "a slow request";
                spool_payload(
                    lane.kind,
                    &lane.spool,
                    shared,
                    r.from_s,
                    r.until_s,
                    &r.pprof,
                    what,
                );
            }
        }
    }
    shared.ring();
}

/// Sends one destination's spool in order until the agent stops and the spool is empty
/// (or the flush deadline passes).
fn send_loop(sender: &Sender, spool: &Mutex<Spool>, shared: &Shared, labels: &[(String, String)]) {
    let dest = sender.destination();
    let name = format!("{} {}", dest.kind.name(), dest.url);
    let mut backoff = Duration::from_secs(1);
    let mut failing = false;
    loop {
        if shared.past_deadline() {
            return;
        }
        // The spool's lock is held for this call only, never while waiting below.
        let taken = lock(spool).take_oldest();
        let entry = match taken {
            Ok(Some(e)) => e,
            Ok(None) if shared.stopping.load(Ordering::SeqCst) => return,
            Ok(None) => {
                shared.wait(Duration::from_secs(1));
                continue;
            }
            Err(e) => {
                log(&format!(
                    "the spool of {name} cannot be read ({e}); retrying"
                ));
                shared.wait(backoff);
                continue;
            }
        };
        let payload = match std::fs::read(&entry.path) {
            Ok(p) => p,
            Err(e) => {
                log(&format!(
                    "spooled window {} for {name} cannot be read ({e}); it is skipped",
                    entry.seq
                ));
                lock(spool).done(&entry);
                continue;
            }
        };
        let dropped = lock(spool).dropped();
        match sender.send(&entry, &payload, dropped, labels) {
            Outcome::Accepted { status, note } => {
                let mut s = lock(spool);
                s.done(&entry);
                if dropped > 0 {
                    let _ = s.reported(dropped);
                    log(&format!(
                        "{name}: told it of {dropped} windows the spool had dropped"
                    ));
                }
                drop(s);
                if failing {
                    log(&format!("{name} answers again (HTTP {status}); sending the windows that waited, in order"));
                    failing = false;
                }
                if let Some(n) = note {
                    log(&format!(
                        "{name} accepted spooled window {} in part: {n}",
                        entry.seq
                    ));
                }
                shared.sent.fetch_add(1, Ordering::SeqCst);
                backoff = Duration::from_secs(1);
            }
            Outcome::Refused(why) => {
                lock(spool).done(&entry);
                shared.refused.fetch_add(1, Ordering::SeqCst);
                log(&format!(
                    "{name} refused spooled window {} ({why}); it is not sent again",
                    entry.seq
                ));
            }
            Outcome::Retry(why, after) => {
                lock(spool).keep();
                if !failing {
                    log(&format!(
                        "{name} cannot take window {} now ({why}); windows wait in the spool and are retried, backing off up to 30 s",
                        entry.seq
                    ));
                    failing = true;
                }
                shared.wait(after.unwrap_or(backoff).min(Duration::from_secs(60)));
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}
