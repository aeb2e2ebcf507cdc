//! `-k watchpoints=on`: hardware watchpoints armed in rotation, while the collection runs,
//! on the lines that sampling saw shared (see [`crate::live`]), to settle their verdict
//! with exact accesses. Duty-cycled by kairos-collector's schedule so that the traps slow
//! the target by at most [`DutyConfig::default`]'s budget. Nothing here fails the
//! collection: every problem becomes a note, and hits collected before it are kept.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use kairos_collector::sample_hook::SampleSender;
use kairos_collector::watch::rotate::{plan_sets, run};
use kairos_collector::watch::schedule::DutyConfig;
use kairos_collector::watch::{calibrate, Hit, Losses, WatchError, WatchTarget, Watcher};
use kairos_result::ResultDir;
use serde_json::{json, Value};

use crate::live::{self, Candidates, Shared};

/// Samples queued between the collector and the decoder; beyond it they are dropped (the
/// candidates only need the busy lines, which keep coming).
const QUEUE: usize = 1 << 14;
/// Rotation rounds: the candidates are re-read between two, so a round is short (a new
/// round re-probes each set with one short window, which costs little).
const ROUND: Duration = Duration::from_millis(200);
const WAIT_STEP: Duration = Duration::from_millis(20);

/// What the watching did, for the manifest and the tables.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub hits: Vec<Hit>,
    pub notes: Vec<String>,
    /// Lines and words armed at least once.
    pub lines: usize,
    pub words: usize,
    pub elapsed_ns: u64,
    pub armed_ns: u64,
    /// Trap time charged to the busiest thread, ns.
    pub charged_ns: u64,
    pub trap_cost_ns: u64,
    pub trap_cost_measured: bool,
    pub losses: Losses,
}

impl Outcome {
    pub fn slowdown(&self) -> f64 {
        let left = self.elapsed_ns.saturating_sub(self.charged_ns);
        if left == 0 {
            0.0
        } else {
            self.charged_ns as f64 / left as f64
        }
    }

    /// The manifest's record of it (`memory_access.watch`).
    pub fn to_json(&self) -> Value {
        json!({
            "lines": self.lines,
            "words": self.words,
            "hits": self.hits.len(),
            "elapsed_ns": self.elapsed_ns,
            "armed_ns": self.armed_ns,
            "estimated_slowdown": self.slowdown(),
            "budget": DutyConfig::default().budget,
            "trap_cost_ns": self.trap_cost_ns,
            "trap_cost_measured": self.trap_cost_measured,
            "lost": self.losses.lost,
            "throttled": self.losses.throttled,
        })
    }
}

/// The watching threads of one collection.
pub(crate) struct Watching {
    stop: Arc<AtomicBool>,
    observer: JoinHandle<()>,
    watcher: JoinHandle<Outcome>,
}

/// Starts the decoder and the watcher; the sender goes into `CollectOptions::on_sample`.
pub(crate) fn start() -> (SampleSender, Watching) {
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let stop = Arc::new(AtomicBool::new(false));
    let shared: Shared = Arc::new(Mutex::new(Candidates::default()));
    let observer = {
        let (shared, stop) = (shared.clone(), stop.clone());
        std::thread::spawn(move || live::observe(rx, shared, stop))
    };
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || watch(&shared, &stop))
    };
    (
        tx,
        Watching {
            stop,
            observer,
            watcher,
        },
    )
}

impl Watching {
    /// Stops both threads (the collection has ended) and returns what was watched.
    pub(crate) fn finish(self) -> Outcome {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.observer.join();
        self.watcher.join().unwrap_or_else(|_| Outcome {
            notes: vec![
                "watchpoints: the watching thread failed; the collection has no watchpoint hits"
                    .into(),
            ],
            ..Outcome::default()
        })
    }
}

fn watch(shared: &Shared, stop: &AtomicBool) -> Outcome {
    let mut out = Outcome::default();
    let mut cfg = DutyConfig::default();
    out.trap_cost_ns = cfg.trap_cost_ns;
    let snapshot = || shared.lock().map(|c| c.clone()).unwrap_or_default();
    let mut c = snapshot();
    while c.version == 0 {
        if stop.load(Ordering::Relaxed) {
            out.notes.push("watchpoints: no line was touched by two threads with a store among the samples: nothing was watched".into());
            return out;
        }
        std::thread::sleep(WAIT_STEP);
        c = snapshot();
    }
    let mut w = match Watcher::open(WatchTarget { pid: c.pid }, 4) {
        Ok(w) => w,
        Err(e) => {
            out.notes.push(not_watched(&e));
            return out;
        }
    };
    if let Some(e) = w.warning() {
        out.notes
            .push(format!("watchpoints: fewer slots than asked: {e}"));
    }
    // The schedule counts in traps: priced on this machine, not the 12 us of our guests.
    match calibrate::measure_trap_cost(3) {
        Ok(ns) => (cfg.trap_cost_ns, out.trap_cost_measured) = (ns.max(1), true),
        Err(e) => out.notes.push(format!(
            "watchpoints: the trap cost was not measured ({e}); {} us assumed",
            cfg.trap_cost_ns / 1000
        )),
    }
    out.trap_cost_ns = cfg.trap_cost_ns;
    let (mut lines, mut words) = (BTreeSet::new(), BTreeSet::new());
    while !stop.load(Ordering::Relaxed) {
        c = snapshot();
        let sets = plan_sets(&c.watches, w.slots(), true);
        // The pause is time the program ran unwatched: it counts in the elapsed time.
        let paused = std::time::Instant::now();
        repay(&out, cfg.budget, stop);
        out.elapsed_ns += paused.elapsed().as_nanos() as u64;
        let rep = run(&mut w, &sets, true, cfg, ROUND, stop);
        out.elapsed_ns += rep.elapsed_ns;
        out.armed_ns += rep.armed_ns;
        out.charged_ns += rep
            .sets
            .iter()
            .map(|s| s.hits)
            .sum::<u64>()
            .saturating_mul(cfg.trap_cost_ns);
        for (set, stats) in sets.iter().zip(&rep.sets) {
            if stats.windows > 0 {
                lines.extend(set.iter().map(|w| w.addr() / 64));
                words.extend(set.iter().map(|w| w.addr()));
            }
        }
        match rep.ended_by {
            None => {}
            // The program ended: the normal way for watching to stop.
            Some(WatchError::ProcessGone { .. }) => break,
            Some(e) => {
                out.notes.push(format!(
                    "watchpoints: stopped early: {e}; the hits until then are kept"
                ));
                break;
            }
        }
    }
    // Disarmed by `run`; what is still in the rings is collected with the hits.
    let _ = w.disarm();
    out.hits = w.take_hits();
    out.losses = w.losses();
    (out.lines, out.words) = (lines.len(), words.len());
    if out.losses.lost > 0 {
        out.notes.push(format!(
            "watchpoints: {} hits were lost (ring buffer full)",
            out.losses.lost
        ));
    }
    out
}

/// Pauses while the rounds so far have charged more than the budget allows (each round's
/// schedule starts afresh, so the debt of the last window of a round is paid here).
fn repay(out: &Outcome, budget: f64, stop: &AtomicBool) {
    let need = out.charged_ns as f64 * (1.0 + 1.0 / budget);
    let mut owed = (need - out.elapsed_ns as f64).max(0.0) as u64;
    while owed > 0 && !stop.load(Ordering::Relaxed) {
        let step = owed.min(WAIT_STEP.as_nanos() as u64);
        std::thread::sleep(Duration::from_nanos(step));
        owed -= step;
    }
}

/// The note for a watcher that could not open: the error's own sentence says what to do.
fn not_watched(e: &WatchError) -> String {
    match e {
        WatchError::ProcessGone { .. } => "watchpoints: none were armed: the program ended before the first shared line was found".into(),
        e => format!("watchpoints: none were armed: {e}. The collection went on without them (verdicts from sampling only)"),
    }
}

/// The summary's line about the watching, from the manifest entry.
pub(crate) fn meta(dir: &ResultDir) -> Option<(String, String)> {
    let w = dir.manifest().extra.get("memory_access")?.get("watch")?;
    let n = |k: &str| w[k].as_u64().unwrap_or(0);
    let f = |k: &str| w[k].as_f64().unwrap_or(0.0);
    let secs = n("elapsed_ns") as f64 / 1e9;
    let armed = if n("elapsed_ns") > 0 {
        100.0 * n("armed_ns") as f64 / n("elapsed_ns") as f64
    } else {
        0.0
    };
    if n("elapsed_ns") == 0 {
        return Some(("Watchpoints".into(), "none armed (see the notes)".into()));
    }
    let cost = if w["trap_cost_measured"].as_bool() == Some(true) {
        "measured"
    } else {
        "assumed"
    };
    Some((
        "Watchpoints".into(),
        format!(
            "{} hits on {} words of {} lines; estimated slowdown {:.1} % (budget {:.0} %, {:.1} us per hit, {cost}); rotation over {secs:.1} s, armed {armed:.1} % of it",
            n("hits"),
            n("words"),
            n("lines"),
            100.0 * f("estimated_slowdown"),
            100.0 * f("budget"),
            n("trap_cost_ns") as f64 / 1e3,
        ),
    ))
}
