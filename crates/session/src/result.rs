//! The result directory: created for a collection, saved, opened for a report, and the
//! lines every report prints about it (what was run, the notes).

use std::path::Path;
use std::time::SystemTime;

use kairos_analysis_api::{Failure, Knobs, ReportRequest};
use kairos_model::Profile;
use kairos_result::{Capability, ResultDir, Source};

/// Name of the raw recording inside a result directory.
pub const PERF_DATA: &str = "perf.data";

/// Creates the result directory: `-r DIR` as given (refusing an existing result), or the
/// next free `rNNN<suffix>` in the current directory.
pub fn create_result_dir(explicit: Option<&Path>, suffix: &str) -> Result<ResultDir, Failure> {
    let made = match explicit {
        Some(p) => ResultDir::create(p),
        None => ResultDir::create_next(Path::new("."), suffix),
    };
    made.map_err(|e| match e {
        kairos_result::Error::AlreadyExists { path } => Failure::failed(format!(
            "result directory {} already exists and is not empty; choose another with -r DIR or remove it first",
            path.display()
        )),
        other => Failure::failed(format!("cannot create the result directory: {other}")),
    })
}

pub fn save(dir: &ResultDir) -> Result<(), Failure> {
    dir.save_manifest().map_err(|e| {
        Failure::failed(format!(
            "cannot write the manifest of {}: {e}; check free disk space and permissions",
            dir.path().display()
        ))
    })
}

/// What every collected result's manifest starts with: its kind, the command line, the
/// target, the knobs, the start time, this host.
pub fn start_manifest(
    dir: &mut ResultDir,
    kind: &str,
    knobs: &Knobs,
    target: kairos_result::Target,
) {
    let m = dir.manifest_mut();
    m.kind = Some(kind.to_string());
    m.command_line = Some(std::env::args().collect());
    m.target = Some(target);
    m.knobs = knobs.all().clone();
    m.start_time = Some(kairos_result::rfc3339_utc(SystemTime::now()));
    m.clock_offset_ns = clock_offset_ns();
    m.host = Some(crate::host::this_host());
    m.source = Some(Source::Collected);
    // The sockets, nodes and devices, so topology reports work on another machine later.
    if let Err(e) =
        kairos_platform::Platform::read(&kairos_platform::SystemRoot::live()).write(dir.path())
    {
        dir.manifest_mut().notes.push(format!("no platform snapshot: {e}; `kairos report topology` will not know this machine's devices"));
    }
}

/// This machine's capabilities (`kairos info`), as a sampling result records them.
pub fn platform_capabilities() -> Vec<Capability> {
    kairos_platform::detect()
        .items
        .into_iter()
        .map(|c| Capability {
            name: c.name,
            available: c.available,
            detail: Some(c.detail),
            reason: c.reason,
        })
        .collect()
}

/// `--format` of a report: text, csv or json.
pub fn report_format(req: &ReportRequest) -> Result<kairos_report::Format, Failure> {
    req.format
        .parse()
        .map_err(|e| Failure::usage(format!("{e}")))
}

/// A result directory for a report that reads its own tables.
pub fn open_result(path: &Path) -> Result<ResultDir, Failure> {
    ResultDir::open(path).map_err(|e| {
        Failure::failed(format!(
            "cannot open result {}: {e}; give a directory made by `kairos collect`",
            path.display()
        ))
    })
}

/// The result and the samples of its default event (the first that has samples).
pub fn open(path: &Path) -> Result<(ResultDir, Profile), Failure> {
    open_event(path, None)
}

/// The result and the samples of one event (`--event NAME`; None: the default).
pub fn open_event(path: &Path, event: Option<&str>) -> Result<(ResultDir, Profile), Failure> {
    let dir = ResultDir::open(path).map_err(|e| {
        Failure::failed(format!("cannot open result {}: {e}; give a directory made by `kairos collect` or `kairos import`", path.display()))
    })?;
    let profile = kairos_result::read_profile_of_event(&dir, event).map_err(|e| match e {
        kairos_result::Error::UnknownEvent { .. } => {
            Failure::usage(format!("{e}; choose one with --event NAME"))
        }
        e => Failure::failed(format!(
            "result {} is damaged: {e}; collect or import it again",
            path.display()
        )),
    })?;
    Ok((dir, profile))
}

/// What was run, as the head of a summary: target, source, event(s), knobs, how it
/// stopped, kernel and CPU.
pub fn meta(dir: &ResultDir) -> Vec<(String, String)> {
    meta_for(dir, None)
}

/// [`meta`] of a report showing event `asked` (`--event NAME`; None: the default).
pub fn meta_for(dir: &ResultDir, asked: Option<&str>) -> Vec<(String, String)> {
    let m = dir.manifest();
    let mut meta = Vec::new();
    let mut push = |k: &str, v: String| meta.push((k.to_string(), v));
    if let Some(t) = &m.target {
        push(
            "Target",
            match t {
                kairos_result::Target::Program { program, args } => {
                    format!("{program} {}", args.join(" "))
                        .trim_end()
                        .to_string()
                }
                kairos_result::Target::Pid { pid } => format!("PID {pid}"),
                kairos_result::Target::SystemWide => "system-wide".into(),
                kairos_result::Target::Unknown => "unknown".into(),
            },
        );
    }
    if let Some(s) = &m.source {
        push("Source", s.to_string());
    }
    // A recording of several events: each with its samples and total, reports show one.
    let sampled: Vec<&kairos_result::EventSummary> =
        m.events.iter().filter(|e| e.samples > 0).collect();
    // Which one, and why, is said after them ("Event shown") instead.
    if let Some(e) = m.event.as_ref().filter(|_| sampled.len() <= 1) {
        push(
            "Event",
            match &e.reason {
                Some(r) => format!("{} ({r})", e.name),
                None => e.name.clone(),
            },
        );
    }
    if sampled.len() > 1 {
        for e in &sampled {
            let total = if e.time {
                format!("{:.3} s of CPU time", e.weight as f64 / 1e9)
            } else {
                format!("{} events", kairos_report::thousands(e.weight))
            };
            push(
                "Events",
                format!(
                    "{}: {} samples, {total}",
                    e.name,
                    kairos_report::thousands(e.samples)
                ),
            );
        }
        let shown = match (asked, &m.event) {
            (Some(name), _) => Some(format!("{name} (asked for with --event)")),
            (None, Some(e)) => Some(format!(
                "{} ({}; --event NAME for another)",
                e.name,
                e.reason.as_deref().unwrap_or("the default")
            )),
            (None, None) => None,
        };
        if let Some(shown) = shown {
            push("Event shown", shown);
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
            kairos_result::TargetExit::Code { code } => {
                push("Target exit", format!("status {code}"))
            }
            kairos_result::TargetExit::Signal { signal } => {
                push("Target exit", format!("killed by signal {signal}"))
            }
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
/// so nobody reads a number without knowing what it lacks; each wraps to the line width.
pub fn print_notes(dir: &ResultDir) {
    print!("{}", notes_text(dir));
}

/// The result's notes as text reports end with them (nothing without notes).
pub fn notes_text(dir: &ResultDir) -> String {
    let notes = &dir.manifest().notes;
    let mut out = String::new();
    if !notes.is_empty() {
        out.push_str("\nNotes:\n");
        let width = kairos_report::text_layout().width;
        for n in notes {
            out.push_str(&kairos_report::wrap(n, width, "  - ", "    "));
        }
    }
    out
}

/// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC` now, in ns: what turns the samples' monotonic
/// times into Unix times (the manifest's `clock_offset_ns`).
pub fn clock_offset_ns() -> Option<i64> {
    let real = i64::try_from(kairos_collector::realtime_ns()).ok()?;
    let mono = i64::try_from(kairos_collector::monotonic_ns()).ok()?;
    Some(real - mono)
}
