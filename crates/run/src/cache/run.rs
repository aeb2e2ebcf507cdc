//! `kairos run --cache-ways N [--level L2|L3] [--cpus LIST] [--lock] -- PROGRAM`: runs the
//! program in a resctrl group of its own (`kairos-PID`) holding N exclusive ways, records
//! the group's LLC occupancy and memory bandwidth and the program's LLC misses over time,
//! and undoes every change (group, default-group mask) when the program ends, crashes or
//! is stopped with Ctrl-C / SIGTERM / SIGHUP, and when Kairos itself fails.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kairos_resctrl::avail::{self, CpuRow, DomainUse};
use kairos_resctrl::plan::{Plan, Request};
use kairos_resctrl::topology::CacheTopology;
use kairos_resctrl::{mask, monitor as counters, write, Tree};
use kairos_result::{ResultDir, TargetExit};

use super::group::{self, NewGroup};
use super::launch::{self as in_group, Placing};
use super::llc::{LlcFigures, LlcMisses};
use super::monitor::{self, FirstPeakLast, Monitor, Series};
use super::topology;
use crate::launch::{self, Forward, StopSignals, Waited};
use crate::program::{self, args_of, program_of, NewResult};
use crate::{Caller, Error, Notice, Sink};

/// The refusal of an empty program shows this.
const EXAMPLE: &str = "kairos run --cache-ways 4 -- ./rt_loop";

/// What to run, and in how many ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheRunRequest {
    pub ways: u32,
    /// L3 or L2 (any case); L3CODE/L3DATA under CDP.
    pub level: String,
    /// Run the program on these CPUs, which also join its group.
    pub cpus: Option<Vec<u32>>,
    /// Pseudo-lock the ways in the cache of the first of `cpus`.
    pub lock: bool,
    pub resctrl_root: PathBuf,
    /// CPU directory with cpuN/cache/indexK (tests).
    pub cpu_root: Option<PathBuf>,
    /// Milliseconds between readings (10 to 60000).
    pub interval_ms: u64,
    pub result_dir: Option<PathBuf>,
    /// The program and its arguments.
    pub program: Vec<String>,
}

/// The group's counters over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct OccupancySummary {
    pub readings: usize,
    pub every_ms: u128,
    /// Readings with an occupancy value.
    pub with_value: usize,
    /// LLC occupancy in KiB.
    pub kib: Option<FirstPeakLast>,
    /// MB/s from mbm_total_bytes (None: unknown, the notes say why).
    pub bandwidth_mb_s: Option<f64>,
}

/// How the run went.
#[derive(Debug)]
pub struct CacheRunOutcome {
    /// What was done and undone to the resctrl tree, one sentence a line.
    pub journal: Vec<String>,
    pub elapsed_s: f64,
    pub exit: TargetExit,
    /// None when the group's occupancy was not recorded (the notes say why).
    pub occupancy: Option<OccupancySummary>,
    /// None when the misses were not counted (the notes say why).
    pub llc: Option<LlcFigures>,
    pub notes: Vec<String>,
    /// The result written (when asked), or why it could not be.
    pub result: Option<Result<PathBuf, Error>>,
    /// Changes Kairos could not undo.
    pub not_restored: Vec<String>,
}

impl CacheRunOutcome {
    /// An error when a change could not be undone.
    pub fn restored(&self) -> Result<(), Error> {
        if self.not_restored.is_empty() {
            Ok(())
        } else {
            Err(Error::NotRestored {
                caller: Caller::Run,
                left: self.not_restored.clone(),
            })
        }
    }
}

/// Plans the group, applies it, starts the program in it, watches, undoes, and writes
/// the result. A refusal changes nothing; a failure after the group was made undoes it.
pub fn run(req: &CacheRunRequest, sink: &Sink) -> Result<CacheRunOutcome, Error> {
    if req.lock && req.cpus.is_none() {
        return Err(Error::LockNeedsCpus);
    }
    let program = program_of(&req.program, EXAMPLE)?;
    let (tree, topo, plan) = prepare(req)?;
    let dir = NewResult::create(req.result_dir.as_deref())?;
    let mut group = NewGroup::apply(&tree, plan, Caller::Run)?;
    tell_placements(&group, sink);
    join_cpus(&mut group, req.cpus.as_deref(), sink)?;
    let before = Availability::read(&req.resctrl_root, &topo);
    let started = start(&mut group, program, req, sink)?;
    let watched = watch(started, &group, req, &before);
    let not_restored = group.undo();
    let (occupancy, llc, notes) = summarize(&watched, group.plan.lock);
    let result = dir.keep().map(|d| {
        let record = Record {
            req,
            group: &group,
            before: &before,
            watched: &watched,
            notes: &notes,
            not_restored: &not_restored,
        };
        record.write(d)
    });
    Ok(CacheRunOutcome {
        journal: group.log().to_vec(),
        elapsed_s: watched.waited.elapsed_s,
        exit: watched.waited.exit(),
        occupancy,
        llc,
        notes,
        result,
        not_restored,
    })
}

/// The tree, the CPU-to-cache map and the plan, checked before anything is changed.
fn prepare(req: &CacheRunRequest) -> Result<(Tree, CacheTopology, Plan), Error> {
    let level = req.level.to_ascii_uppercase();
    let tree = group::open_for_run(&req.resctrl_root)?;
    if let Some(c) = &req.cpus {
        check_cpus(&tree, c)?;
    }
    let topo = topology(&req.resctrl_root, req.cpu_root.as_deref());
    let lock_domain = lock_domain(req, &level, &topo)?;
    let ask = Request {
        level,
        ways: req.ways,
        lock_domain,
        group: group::own_name(),
    };
    let plan = group::plan(&tree, &ask, Caller::Run)?;
    Ok((tree, topo, plan))
}

/// `--cpus` must be this machine's, and the default group's: removing our group gives
/// its CPUs to the default group, so one taken from another group could not be given back.
fn check_cpus(tree: &Tree, cpus: &[u32]) -> Result<(), Error> {
    let known: Vec<u32> = tree
        .groups
        .iter()
        .flat_map(|g| g.cpus.iter().copied())
        .collect();
    if let Some(&bad) = cpus
        .iter()
        .find(|x| !known.is_empty() && !known.contains(x))
    {
        return Err(Error::UnknownCpu {
            cpu: bad,
            known: mask::format_list(&tree.default_group().cpus),
        });
    }
    match tree
        .groups
        .iter()
        .skip(1)
        .find(|g| cpus.iter().any(|x| g.cpus.contains(x)))
    {
        Some(g) => Err(Error::CpusInGroup {
            cpus: mask::format_list(cpus),
            group_cpus: mask::format_list(&g.cpus),
            group: g.name.clone(),
        }),
        None => Ok(()),
    }
}

/// With `--lock`: the cache instance of the first CPU, at the level asked for.
fn lock_domain(
    req: &CacheRunRequest,
    level: &str,
    topo: &CacheTopology,
) -> Result<Option<u32>, Error> {
    let lvl: u8 = if level.starts_with("L2") { 2 } else { 3 };
    match (req.cpus.as_deref().and_then(<[u32]>::first), req.lock) {
        (Some(&cpu), true) => topo
            .domain_of(lvl, cpu)
            .map(Some)
            .ok_or(Error::UnknownDomain { level: lvl, cpu }),
        _ => Ok(None),
    }
}

/// Tells where the group's ways are, and whether the kernel made them exclusive.
fn tell_placements(group: &NewGroup, sink: &Sink) {
    for p in group.placements() {
        sink(&Notice::Placement(p));
    }
    if let Err(why) = &group.applied.exclusive_mode {
        sink(&Notice::Shareable(why.clone()));
    }
}

/// `--cpus` join the group (not a pseudo-locked one, which holds no CPUs).
fn join_cpus(group: &mut NewGroup, cpus: Option<&[u32]>, sink: &Sink) -> Result<(), Error> {
    let Some(c) = cpus.filter(|_| !group.plan.lock) else {
        return Ok(());
    };
    if let Err(source) = write::assign_cpus(&group.applied.path, c) {
        return Err(Error::AssignCpus {
            cpus: mask::format_list(c),
            source,
            undone: group.undo_for_error(),
        });
    }
    sink(&Notice::CpusJoined(mask::format_list(c)));
    Ok(())
}

/// Which ways each group and CPU may fill once the group is in place.
struct Availability {
    domains: Option<Vec<DomainUse>>,
    per_cpu: Option<Vec<CpuRow>>,
}

impl Availability {
    fn read(root: &Path, topo: &CacheTopology) -> Availability {
        let tree = Tree::read(root).ok();
        let domains = tree.as_ref().and_then(|t| avail::domains(t).ok());
        let per_cpu = match (&tree, &domains) {
            (Some(t), Some(a)) => avail::per_cpu(t, topo, a),
            _ => None,
        };
        Availability { domains, per_cpu }
    }
}

/// The program, started.
struct Started {
    pid: libc::pid_t,
    started: Instant,
    signals: StopSignals,
}

/// Starts the program in the group. Kairos catches Ctrl-C, SIGTERM and SIGHUP from here
/// on and passes them to the program, so that it can undo its changes after.
fn start(
    group: &mut NewGroup,
    program: &str,
    req: &CacheRunRequest,
    sink: &Sink,
) -> Result<Started, Error> {
    let in_group = !group.plan.lock;
    let how = Placing {
        group: &group.applied.path,
        in_group,
        cpus: req.cpus.as_deref(),
        lock_device: group.applied.lock_device.as_deref(),
    };
    let mut cmd = in_group::command(program, args_of(&req.program), &how)?;
    let signals = StopSignals::install(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP], &[]);
    let started = Instant::now();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(source) => {
            drop(signals);
            return Err(Error::StartInGroup {
                program: program.to_string(),
                source,
                undone: group.undo_for_error(),
            });
        }
    };
    let pid = child.id() as libc::pid_t;
    sink(&Notice::Started {
        program: program.to_string(),
        pid,
        group: in_group.then(|| group.applied.path.clone()),
    });
    Ok(Started {
        pid,
        started,
        signals,
    })
}

/// What was recorded while the program ran.
struct Watched {
    waited: Waited,
    /// The group's counters; None when it has no monitoring.
    samples: Option<Series>,
    every: Duration,
    /// Availability as other groups changed it while the program ran.
    changes: Vec<(f64, Vec<DomainUse>)>,
    llc: LlcMisses,
}

/// Waits for the program, recording the group's counters, its LLC misses and changes of
/// availability; the stop signals are Kairos's own again after.
fn watch(s: Started, group: &NewGroup, req: &CacheRunRequest, before: &Availability) -> Watched {
    let every = Duration::from_millis(req.interval_ms.clamp(10, 60_000));
    let mut llc = LlcMisses::start(s.pid);
    let monitor = if group.plan.lock {
        None
    } else {
        Monitor::start(&group.applied.path, every, s.started)
    };
    let mut changes = Changes::new(&req.resctrl_root, before.domains.clone());
    let waited = launch::wait(s.pid, s.started, every, Forward::EachNew, |t| {
        llc.tick(t);
        changes.check(t);
    });
    let samples = monitor.map(Monitor::finish);
    drop(s.signals);
    Watched {
        waited,
        samples,
        every,
        changes: changes.seen,
        llc,
    }
}

/// Other groups may change while the program runs: the availability is noted when it
/// does (looked at once a second).
struct Changes<'a> {
    root: &'a Path,
    last: Option<Vec<DomainUse>>,
    next_check: Instant,
    seen: Vec<(f64, Vec<DomainUse>)>,
}

impl<'a> Changes<'a> {
    fn new(root: &'a Path, last: Option<Vec<DomainUse>>) -> Changes<'a> {
        Changes {
            root,
            last,
            next_check: Instant::now(),
            seen: Vec::new(),
        }
    }

    fn check(&mut self, t: f64) {
        if Instant::now() < self.next_check {
            return;
        }
        self.next_check = Instant::now() + Duration::from_secs(1);
        let now = Tree::read(self.root)
            .ok()
            .and_then(|t| avail::domains(&t).ok());
        if now.is_some() && now != self.last {
            self.seen.push((t, now.clone().unwrap_or_default()));
            self.last = now;
        }
    }
}

/// The summary's figures, and notes for what could not be measured.
fn summarize(
    w: &Watched,
    lock: bool,
) -> (Option<OccupancySummary>, Option<LlcFigures>, Vec<String>) {
    let mut notes: Vec<String> = Vec::new();
    let occupancy = match &w.samples {
        None => {
            notes.push(if lock {
                "occupancy not recorded: a pseudo-locked region has no monitoring".into()
            } else {
                "occupancy not recorded: this resctrl has no monitoring (no mon_data in the group)"
                    .into()
            });
            None
        }
        Some(samples) => {
            let occ = monitor::occupancy(samples);
            let bandwidth_mb_s = bandwidth(samples).unwrap_or_else(|note| {
                notes.push(note);
                None
            });
            Some(OccupancySummary {
                readings: samples.len(),
                every_ms: w.every.as_millis(),
                with_value: occ.len(),
                kib: FirstPeakLast::of(&occ).map(FirstPeakLast::kib),
                bandwidth_mb_s,
            })
        }
    };
    let llc = w.llc.summary().map_err(|why| notes.push(why)).ok();
    (occupancy, llc, notes)
}

/// Memory bandwidth in MB/s from the first and last readings' mbm_total_bytes: Ok(None)
/// with no reading at all, Err with the note when it is unknown.
fn bandwidth(samples: &Series) -> Result<Option<f64>, String> {
    let (Some((ta, a)), Some((tb, b))) = (samples.first(), samples.last()) else {
        return Ok(None);
    };
    let total = |r: &[counters::Reading]| {
        r.iter()
            .map(|r| r.mbm_total_bytes)
            .collect::<Option<Vec<u64>>>()
            .map(|v| v.iter().sum::<u64>())
    };
    match counters::delta(total(a), total(b), 64) {
        counters::Delta::Bytes(by) if tb > ta => Ok(Some(by as f64 / (tb - ta) / 1e6)),
        counters::Delta::Reset => Err(
            "memory bandwidth unknown: mbm_total_bytes went down (the counter was reset)".into(),
        ),
        _ => Err("memory bandwidth unknown: mbm_total_bytes was Unavailable".into()),
    }
}

/// Everything the result's manifest records about the run.
struct Record<'a> {
    req: &'a CacheRunRequest,
    group: &'a NewGroup,
    before: &'a Availability,
    watched: &'a Watched,
    notes: &'a [String],
    not_restored: &'a [String],
}

impl Record<'_> {
    /// The manifest of the run, with its `cache` entry.
    fn write(&self, mut d: ResultDir) -> Result<PathBuf, Error> {
        let (w, g) = (self.watched, self.group);
        let m = d.manifest_mut();
        program::run_manifest(
            m,
            &self.req.program,
            w.waited.elapsed_s,
            w.waited.exit(),
            w.waited.signalled(),
        );
        let series = monitor::to_json(w.samples.as_ref().unwrap_or(&Vec::new()));
        let changes: Vec<serde_json::Value> = w
            .changes
            .iter()
            .map(|(t, a)| serde_json::json!({"t_s": t, "domains": a}))
            .collect();
        m.extra.insert(
            "cache".into(),
            serde_json::json!({"group": g.plan.group, "plan": g.plan, "kernel_exclusive_mode": g.applied.exclusive_mode.as_ref().err(),
                               "lock_device": g.applied.lock_device, "cpus": self.req.cpus, "availability": self.before.domains,
                               "availability_per_cpu": self.before.per_cpu, "availability_changes": changes, "occupancy": series,
                               "llc_misses": w.llc.to_json(), "journal": g.log(), "not_restored": self.not_restored, "notes": self.notes}),
        );
        program::save(&d)
    }
}
