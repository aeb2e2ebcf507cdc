//! Cache options that hold for every analysis of `kairos collect`:
//! `-k cache-group=NAME` runs the target in an existing resctrl group, `-k cache-group=new
//! -k cache-ways=N [-k cache-level=L3|L2]` in a new group holding N exclusive ways (as
//! `kairos run --cache-ways` does), and every collection on a machine with resctrl
//! monitoring records the target's group's LLC occupancy and memory-bandwidth counters
//! over time into the result (`cache` in its manifest). Everything changed is undone when
//! the collection ends, however it ends.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kairos_analysis_registry::TargetStep;
use kairos_resctrl::plan::{self, Plan, Request};
use kairos_resctrl::write::{self, Journal};
use kairos_resctrl::{monitor, why, Tree};

use crate::error::{CliResult, UserError};

const NAMES: [&str; 4] = ["cache-group", "cache-ways", "cache-level", "resctrl-root"];
const TICK: Duration = Duration::from_millis(100);

/// The collection-wide cache knobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKnobs {
    pub group: Option<String>,
    pub ways: Option<u32>,
    pub level: String,
    pub root: PathBuf,
}

/// Takes the cache knobs out of `raw`; the rest belong to the analysis.
pub fn split(raw: &[String]) -> CliResult<(Vec<String>, CacheKnobs)> {
    let mut k = CacheKnobs {
        group: None,
        ways: None,
        level: "L3".into(),
        root: PathBuf::from("/sys/fs/resctrl"),
    };
    let mut rest = Vec::new();
    for r in raw {
        let Some((name, value)) = r.split_once('=').filter(|(n, _)| NAMES.contains(n)) else {
            rest.push(r.clone());
            continue;
        };
        match name {
            "cache-group" if !value.is_empty() => k.group = Some(value.to_string()),
            "cache-ways" => {
                k.ways = Some(value.parse::<u32>().ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| {
                    UserError::usage(format!("-k cache-ways={value}: give a number of cache ways from 1 to 64 (see `kairos cache`)"))
                })?)
            }
            "cache-level" if matches!(value.to_ascii_uppercase().as_str(), "L2" | "L3") => k.level = value.to_ascii_uppercase(),
            "resctrl-root" if !value.is_empty() => k.root = PathBuf::from(value),
            _ => return Err(UserError::usage(format!("-k {r}: cache-group takes a group name or 'new', cache-level L2 or L3, resctrl-root a directory"))),
        }
    }
    match (k.group.as_deref(), k.ways) {
        (Some("new"), None) => Err(UserError::usage("-k cache-group=new needs -k cache-ways=N: how many exclusive ways the new group holds")),
        (Some(g), Some(_)) if g != "new" => Err(UserError::usage(format!("-k cache-ways applies to a new group; group {g} keeps its own ways (or use -k cache-group=new)"))),
        (None, Some(_)) => Err(UserError::usage("-k cache-ways needs -k cache-group=new")),
        _ => Ok((rest, k)),
    }
}

/// The monitoring thread: its readings, each with its time in seconds.
type MonitorThread = std::thread::JoinHandle<Vec<(f64, Vec<monitor::Reading>)>>;

/// What runs while the analysis collects.
pub struct CacheRun {
    root: PathBuf,
    group: PathBuf,
    label: String,
    plan: Option<Plan>,
    journal: Option<Journal>,
    /// Threads of `-p` moved into the group, with the group each came from.
    moved: Arc<Mutex<Vec<(i32, PathBuf)>>>,
    stop: Arc<AtomicBool>,
    monitor: Option<MonitorThread>,
    pub step: Option<TargetStep>,
}

/// Sets up the group (when asked) and the occupancy recording (when resctrl monitors).
/// `None` when there is nothing to do: no cache knob and no resctrl monitoring here.
pub fn start(k: &CacheKnobs, system_wide: bool, pid: Option<i32>) -> CliResult<Option<CacheRun>> {
    let tree = Tree::read(&k.root);
    let Some(wanted) = k.group.as_deref() else {
        let Ok(tree) = tree else { return Ok(None) };
        // The group the target runs in: ours for a launched program (it inherits it).
        let member = pid.unwrap_or(std::process::id() as i32) as u32;
        let g = tree
            .groups
            .iter()
            .find(|g| !system_wide && g.tasks.contains(&member))
            .unwrap_or(tree.default_group());
        if !g.has_mon_data {
            return Ok(None);
        }
        return Ok(Some(CacheRun::new(
            k,
            &tree,
            g.path.clone(),
            g.label().to_string(),
            None,
            None,
        )));
    };
    if system_wide {
        return Err(UserError::usage("-k cache-group cannot be used with -a: a group holds tasks, not the whole machine; give a program or -p PID"));
    }
    let tree = tree.map_err(|_| {
        let a = why::explain_live(&k.root);
        UserError::failed(format!(
            "cannot run the target in a cache group: resctrl is not available here: {}; nothing was changed ({})",
            a.causes.join("; "),
            why::STILL_WORKS
        ))
    })?;
    if wanted != "new" {
        let g = tree.group(wanted).ok_or_else(|| {
            let names: Vec<&str> = tree.groups.iter().skip(1).map(|g| g.name.as_str()).collect();
            UserError::failed(format!(
                "there is no resctrl group '{wanted}' (groups: {}); give one of them, or -k cache-group=new -k cache-ways=N",
                if names.is_empty() { "none but the default".to_string() } else { names.join(", ") }
            ))
        })?;
        return Ok(Some(CacheRun::new(
            k,
            &tree,
            g.path.clone(),
            g.label().to_string(),
            None,
            None,
        )));
    }
    let name = format!("kairos-{}", std::process::id());
    let req = Request {
        level: k.level.clone(),
        ways: k.ways.unwrap_or(1),
        lock_domain: None,
        group: name.clone(),
    };
    let plan = plan::plan(&tree, &req).map_err(|e| {
        UserError::failed(format!(
            "cannot give the target {} exclusive {} ways: {e}; nothing was changed",
            req.ways, k.level
        ))
    })?;
    let mut journal = Journal::new(&tree);
    match write::apply(&tree, &plan, &mut journal) {
        Ok(a) => Ok(Some(CacheRun::new(
            k,
            &tree,
            a.path,
            name,
            Some(plan),
            Some(journal),
        ))),
        Err(e) => {
            let left = journal.undo();
            let restored = if left.is_empty() {
                "everything was restored".to_string()
            } else {
                format!("NOT restored: {}", left.join("; "))
            };
            Err(UserError::failed(format!(
                "cannot set up the cache group: {e}; {restored}"
            )))
        }
    }
}

impl CacheRun {
    /// `tree`: the groups as they were before anything was changed; each thread goes back
    /// to the group it was in then (a launched program: the group of Kairos, which it
    /// inherited).
    fn new(
        k: &CacheKnobs,
        tree: &Tree,
        group: PathBuf,
        label: String,
        plan: Option<Plan>,
        journal: Option<Journal>,
    ) -> CacheRun {
        let moved: Arc<Mutex<Vec<(i32, PathBuf)>>> = Arc::default();
        // Only a group asked for gets the target; otherwise it stays where it is.
        let step = k.group.as_ref().map(|_| {
            let members: Vec<(PathBuf, Vec<u32>)> = tree
                .groups
                .iter()
                .map(|g| (g.path.clone(), g.tasks.clone()))
                .collect();
            let (to, moved) = (group.clone(), moved.clone());
            TargetStep(Arc::new(move |tid: i32| {
                let group_of = |t: u32| {
                    members
                        .iter()
                        .find(|(_, tasks)| tasks.contains(&t))
                        .map(|(p, _)| p.clone())
                };
                let from = group_of(tid as u32).or_else(|| group_of(std::process::id()));
                write::move_task(&to, tid as u32).map_err(|e| {
                    format!(
                        "cannot put thread {tid} in cache group {}: {e}",
                        to.display()
                    )
                })?;
                if let (Some(from), Ok(mut m)) = (from, moved.lock()) {
                    m.push((tid, from));
                }
                Ok(())
            }))
        });
        let stop = Arc::new(AtomicBool::new(false));
        let monitor = group.join("mon_data").is_dir().then(|| {
            let (g, stop) = (group.clone(), stop.clone());
            std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut series = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(r) = monitor::read(&g) {
                        series.push((t0.elapsed().as_secs_f64(), r));
                    }
                    std::thread::sleep(TICK);
                }
                series
            })
        });
        CacheRun {
            root: k.root.clone(),
            group,
            label,
            plan,
            journal,
            moved,
            stop,
            monitor,
            step,
        }
    }

    /// Stops the recording, puts moved threads back, undoes the group, and writes what was
    /// recorded into the result at `dir` (when the collection made one).
    pub fn finish(mut self, dir: Option<&Path>) -> CliResult {
        self.stop.store(true, Ordering::SeqCst);
        let series = self
            .monitor
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let mut left = Vec::new();
        for (tid, from) in self.moved.lock().map(|m| m.clone()).unwrap_or_default() {
            // A thread that has ended needs nothing.
            if Path::new(&format!("/proc/{tid}")).exists()
                && write::move_task(&from, tid as u32).is_err()
            {
                left.push(format!("thread {tid} stays in {}", self.group.display()));
            }
        }
        left.extend(self.journal.as_mut().map(|j| j.undo()).unwrap_or_default());
        let log = self
            .journal
            .as_ref()
            .map(|j| j.log.clone())
            .unwrap_or_default();
        let occ: Vec<u64> = series
            .iter()
            .filter_map(|(_, r)| monitor::total_occupancy(r))
            .collect();
        println!(
            "Cache: group {} ({} readings every {} ms)",
            self.label,
            series.len(),
            TICK.as_millis()
        );
        if let (Some(first), Some(peak), Some(last)) = (occ.first(), occ.iter().max(), occ.last()) {
            println!(
                "Cache: LLC occupancy first {} KiB, peak {} KiB, last {} KiB",
                first / 1024,
                peak / 1024,
                last / 1024
            );
        }
        for l in &log {
            println!("Cache: {l}");
        }
        if let Some(dir) = dir.filter(|d| d.join("manifest.json").is_file()) {
            let mut d = kairos_result::ResultDir::open(dir).map_err(|e| {
                UserError::failed(format!(
                    "cannot add the cache recording to {}: {e}",
                    dir.display()
                ))
            })?;
            d.manifest_mut().extra.insert(
                "cache".into(),
                serde_json::json!({"group": self.label, "resctrl_root": self.root, "plan": self.plan, "occupancy": series.iter().map(|(t, r)| serde_json::json!({"t_s": t, "domains": r})).collect::<Vec<_>>(),
                                   "journal": log, "not_restored": left}),
            );
            kairos_session::save(&d)?;
        }
        if !left.is_empty() {
            return Err(UserError::failed(format!(
                "the collection ran, but Kairos could not restore everything: {}",
                left.join("; ")
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn cache_knobs_are_taken_out_and_checked() {
        let (rest, k) = split(&s(&[
            "event=cpu-clock",
            "cache-group=new",
            "cache-ways=4",
            "cache-level=l2",
        ]))
        .unwrap();
        assert_eq!(rest, ["event=cpu-clock"]);
        assert_eq!(
            (k.group.as_deref(), k.ways, k.level.as_str()),
            (Some("new"), Some(4), "L2")
        );
        for bad in [
            &["cache-group=new"][..],
            &["cache-ways=4"],
            &["cache-group=g1", "cache-ways=2"],
            &["cache-ways=0", "cache-group=new"],
            &["cache-level=L1"],
        ] {
            assert!(split(&s(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(split(&s(&[])).unwrap().1.group, None);
    }
}
