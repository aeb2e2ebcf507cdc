//! The cache set-up that holds for every analysis of `kairos collect`: `-k
//! cache-group=NAME` runs the target in an existing resctrl group, `-k cache-group=new -k
//! cache-ways=N [-k cache-level=L3|L2]` in a new group holding N exclusive ways (made as
//! `kairos run --cache-ways` makes it), and every collection on a machine with resctrl
//! monitoring records the target's group's LLC occupancy and memory-bandwidth counters
//! over time into the result (`cache` in its manifest). Everything changed is undone when
//! the collection ends, however it ends.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kairos_analysis_api::TargetStep;
use kairos_resctrl::plan::Request;
use kairos_resctrl::{write, Tree};

use super::group::{self, NewGroup};
use super::monitor::{self, FirstPeakLast, Monitor};
use crate::{Caller, Error};

/// How often the group's counters are read.
const TICK: Duration = Duration::from_millis(100);

/// The collection-wide cache knobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKnobs {
    /// An existing group's name, or `new`.
    pub group: Option<String>,
    /// For a new group.
    pub ways: Option<u32>,
    /// L3 or L2.
    pub level: String,
    pub root: PathBuf,
}

impl Default for CacheKnobs {
    fn default() -> Self {
        CacheKnobs {
            group: None,
            ways: None,
            level: "L3".into(),
            root: PathBuf::from(super::DEFAULT_RESCTRL_ROOT),
        }
    }
}

/// Threads of `-p` moved into the group, with the group each came from.
type Moved = Arc<Mutex<Vec<(i32, PathBuf)>>>;

/// What runs while the analysis collects.
pub struct CacheRun {
    root: PathBuf,
    group: PathBuf,
    label: String,
    new: Option<NewGroup>,
    moved: Moved,
    monitor: Option<Monitor>,
    /// Puts the target's threads into the group (None: the target stays where it is).
    pub step: Option<TargetStep>,
}

/// What the recording saw and what undoing left.
#[derive(Debug)]
pub struct CacheFinished {
    /// The group's name ("default" for the root group).
    pub label: String,
    pub readings: usize,
    pub every_ms: u128,
    /// LLC occupancy in KiB.
    pub kib: Option<FirstPeakLast>,
    /// What was done and undone to the resctrl tree, one sentence a line.
    pub journal: Vec<String>,
    /// Adding the recording to the result.
    pub recorded: Result<(), Error>,
    /// Changes Kairos could not undo.
    pub not_restored: Vec<String>,
}

impl CacheFinished {
    /// The first failure: recording into the result, then undoing.
    pub fn into_result(self) -> Result<(), Error> {
        self.recorded?;
        if self.not_restored.is_empty() {
            Ok(())
        } else {
            Err(Error::NotRestored {
                caller: Caller::Collect,
                left: self.not_restored,
            })
        }
    }
}

impl CacheRun {
    /// Sets up the group (when asked) and the occupancy recording (when resctrl monitors).
    /// `None` when there is nothing to do: no cache knob and no resctrl monitoring here.
    pub fn start(
        k: &CacheKnobs,
        system_wide: bool,
        pid: Option<i32>,
    ) -> Result<Option<CacheRun>, Error> {
        let Some(wanted) = k.group.as_deref() else {
            return Ok(Tree::read(&k.root)
                .ok()
                .and_then(|tree| monitor_only(k, &tree, system_wide, pid)));
        };
        if system_wide {
            return Err(Error::SystemWideGroup);
        }
        let tree = group::open_for_collect(&k.root)?;
        if wanted != "new" {
            let g = tree
                .group(wanted)
                .ok_or_else(|| no_such_group(&tree, wanted))?;
            let (path, label) = (g.path.clone(), g.label().to_string());
            return Ok(Some(CacheRun::new(k, &tree, path, label, None)));
        }
        let ask = Request {
            level: k.level.clone(),
            ways: k.ways.unwrap_or(1),
            lock_domain: None,
            group: group::own_name(),
        };
        let plan = group::plan(&tree, &ask, Caller::Collect)?;
        let new = NewGroup::apply(&tree, plan, Caller::Collect)?;
        let path = new.applied.path.clone();
        Ok(Some(CacheRun::new(k, &tree, path, ask.group, Some(new))))
    }

    /// `tree`: the groups as they were before anything was changed; each thread goes back
    /// to the group it was in then (a launched program: the group of Kairos, which it
    /// inherited).
    fn new(
        k: &CacheKnobs,
        tree: &Tree,
        group: PathBuf,
        label: String,
        new: Option<NewGroup>,
    ) -> CacheRun {
        let moved = Moved::default();
        // Only a group asked for gets the target; otherwise it stays where it is.
        let step = k
            .group
            .as_ref()
            .map(|_| move_into(tree, group.clone(), moved.clone()));
        let monitor = Monitor::start(&group, TICK, Instant::now());
        CacheRun {
            root: k.root.clone(),
            group,
            label,
            new,
            moved,
            monitor,
            step,
        }
    }

    /// Stops the recording, puts moved threads back, undoes the group, and writes what was
    /// recorded into the result at `dir` (when the collection made one).
    pub fn finish(mut self, dir: Option<&Path>) -> CacheFinished {
        let series = self.monitor.take().map(Monitor::finish).unwrap_or_default();
        let mut left = self.move_back();
        left.extend(self.new.as_mut().map(NewGroup::undo).unwrap_or_default());
        let journal = self
            .new
            .as_ref()
            .map(|g| g.log().to_vec())
            .unwrap_or_default();
        let recorded = match dir.filter(|d| d.join(kairos_result::MANIFEST_FILE).is_file()) {
            Some(dir) => self.record(dir, &series, &journal, &left),
            None => Ok(()),
        };
        CacheFinished {
            label: self.label,
            readings: series.len(),
            every_ms: TICK.as_millis(),
            kib: FirstPeakLast::of(&monitor::occupancy(&series)).map(FirstPeakLast::kib),
            journal,
            recorded,
            not_restored: left,
        }
    }

    /// Threads moved into the group go back where they came from (a thread that has
    /// ended needs nothing); the ones that could not.
    fn move_back(&self) -> Vec<String> {
        let moved = self.moved.lock().map(|m| m.clone()).unwrap_or_default();
        let mut left = Vec::new();
        for (tid, from) in moved {
            if Path::new(&format!("/proc/{tid}")).exists()
                && write::move_task(&from, tid as u32).is_err()
            {
                left.push(format!("thread {tid} stays in {}", self.group.display()));
            }
        }
        left
    }

    /// The manifest's `cache`.
    fn record(
        &self,
        dir: &Path,
        series: &monitor::Series,
        journal: &[String],
        left: &[String],
    ) -> Result<(), Error> {
        let mut d = kairos_result::ResultDir::open(dir).map_err(|source| Error::CannotRecord {
            what: "cache recording",
            dir: dir.to_path_buf(),
            source,
        })?;
        let plan = self.new.as_ref().map(|g| &g.plan);
        d.manifest_mut().extra.insert(
            "cache".into(),
            serde_json::json!({"group": self.label, "resctrl_root": self.root, "plan": plan, "occupancy": monitor::to_json(series),
                               "journal": journal, "not_restored": left}),
        );
        kairos_session::save(&d)?;
        Ok(())
    }
}

/// No group asked for: the occupancy of the group the target runs in is recorded, when
/// resctrl monitors it. The target's group: ours for a launched program (it inherits it).
fn monitor_only(
    k: &CacheKnobs,
    tree: &Tree,
    system_wide: bool,
    pid: Option<i32>,
) -> Option<CacheRun> {
    let member = pid.unwrap_or(std::process::id() as i32) as u32;
    let g = tree
        .groups
        .iter()
        .find(|g| !system_wide && g.tasks.contains(&member))
        .unwrap_or(tree.default_group());
    g.has_mon_data
        .then(|| CacheRun::new(k, tree, g.path.clone(), g.label().to_string(), None))
}

fn no_such_group(tree: &Tree, wanted: &str) -> Error {
    let names: Vec<&str> = tree
        .groups
        .iter()
        .skip(1)
        .map(|g| g.name.as_str())
        .collect();
    Error::NoSuchGroup {
        name: wanted.to_string(),
        groups: if names.is_empty() {
            "none but the default".to_string()
        } else {
            names.join(", ")
        },
    }
}

/// The step that puts each thread of the target into `to`, remembering where it was.
fn move_into(tree: &Tree, to: PathBuf, moved: Moved) -> TargetStep {
    let members: Vec<(PathBuf, Vec<u32>)> = tree
        .groups
        .iter()
        .map(|g| (g.path.clone(), g.tasks.clone()))
        .collect();
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
}
