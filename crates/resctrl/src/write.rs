//! Applying a [`Plan`]: shrink the default group, create the new group, write its masks,
//! and move tasks and CPUs into it. Every change goes into a [`Journal`] first; the journal
//! undoes them in reverse order when dropped (normal exit, error return, panic unwind)
//! or when [`Journal::undo`] is called. A SIGKILL of Kairos cannot be undone: the group's
//! name `kairos-PID` tells what to remove.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::mask::{self, Cbm};
use crate::plan::Plan;
use crate::schemata::{Line, Schemata};
use crate::tree::RootKind;
use crate::{Error, Tree};

#[derive(Debug)]
enum Step {
    /// A group directory we made: removing it returns its tasks and CPUs to the default group.
    Created(PathBuf),
    /// A schemata file and its content before we wrote it.
    Schemata(PathBuf, String),
}

/// The changes made so far, undone in reverse.
#[derive(Debug)]
pub struct Journal {
    root: PathBuf,
    kind: RootKind,
    steps: Vec<Step>,
    /// What was done and undone, one sentence a line, for the user and for tests.
    pub log: Vec<String>,
}

impl Journal {
    pub fn new(tree: &Tree) -> Journal {
        Journal {
            root: tree.root.clone(),
            kind: tree.kind,
            steps: Vec::new(),
            log: Vec::new(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Undoes every change, newest first. Returns the failures (empty = all restored).
    pub fn undo(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        while let Some(step) = self.steps.pop() {
            match step {
                Step::Created(dir) => {
                    let r = std::fs::remove_dir(&dir).or_else(|e| {
                        // On resctrl rmdir takes the group's files with it; a plain
                        // directory (a copy of a tree) keeps them, so remove them too.
                        if self.kind == RootKind::Directory {
                            std::fs::remove_dir_all(&dir)
                        } else {
                            Err(e)
                        }
                    });
                    match r {
                        Ok(()) => self.log.push(format!("removed group {}", dir.display())),
                        Err(e) => failed.push(format!(
                            "could not remove {} ({e}); as root: rmdir {}",
                            dir.display(),
                            dir.display()
                        )),
                    }
                }
                Step::Schemata(file, old) => match write_file(&file, &old) {
                    Ok(()) => self.log.push(format!(
                        "restored {} to {}",
                        file.display(),
                        old.trim().replace('\n', " ")
                    )),
                    Err(e) => failed.push(format!(
                        "could not restore {} ({e}); as root: printf '{}' > {}",
                        file.display(),
                        old.replace('\n', "\\n"),
                        file.display()
                    )),
                },
            }
        }
        self.log.extend(failed.iter().cloned());
        failed
    }

    /// Writes `new` to a group's schemata, remembering the old content when `record`
    /// (a group we made needs no restoring: it goes away as a whole, and writing shared
    /// masks back to an exclusive or locked group would fail).
    fn set_schemata(&mut self, file: &Path, new: &Schemata, record: bool) -> Result<(), Error> {
        let text = new.render();
        if record {
            let old = std::fs::read_to_string(file).map_err(|e| Error::io("read", file, e))?;
            let old = Schemata::parse(&old)?.render();
            self.steps.push(Step::Schemata(file.to_path_buf(), old));
        }
        write_file(file, &text).map_err(|e| {
            self.kernel_error(
                format!(
                    "write {} to {}",
                    text.trim().replace('\n', " "),
                    file.display()
                ),
                e,
            )
        })?;
        self.log.push(format!(
            "wrote {} to {}",
            text.trim().replace('\n', " "),
            file.display()
        ));
        Ok(())
    }

    /// A failed write, with the kernel's own explanation from info/last_cmd_status.
    fn kernel_error(&self, what: String, e: std::io::Error) -> Error {
        let status = std::fs::read_to_string(self.root.join("info/last_cmd_status"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let status = if status.is_empty() || status == "ok" {
            e.to_string()
        } else {
            format!("{status} ({e})")
        };
        Error::Kernel { what, status }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if !self.steps.is_empty() {
            for f in self.undo() {
                eprintln!("kairos: {f}");
            }
        }
    }
}

/// The new group as made.
#[derive(Debug, Clone)]
pub struct Applied {
    pub path: PathBuf,
    /// Kernel exclusive mode set (else: exclusive by planning only, and why).
    pub exclusive_mode: Result<(), String>,
    /// `/dev/pseudo_lock/NAME` when locked.
    pub lock_device: Option<PathBuf>,
}

/// Applies `plan`: every change is in `journal` before it is made.
pub fn apply(tree: &Tree, plan: &Plan, journal: &mut Journal) -> Result<Applied, Error> {
    shrink_default_group(tree, plan, journal)?;
    let dir = create_group(tree, plan, journal)?;
    set_masks(&dir, plan, journal)?;
    verify_masks(&dir, plan)?;
    let mut applied = Applied {
        path: dir.clone(),
        exclusive_mode: Ok(()),
        lock_device: None,
    };
    if plan.lock {
        applied.lock_device = Some(lock_device(tree, plan, &dir)?);
    } else {
        // Kernel exclusive mode also keeps groups made later off our ways; it is refused
        // when the group shares another resource (e.g. the other cache level).
        applied.exclusive_mode = write_file(&dir.join("mode"), "exclusive\n").map_err(|e| {
            journal
                .kernel_error("set exclusive mode".into(), e)
                .to_string()
        });
    }
    Ok(applied)
}

/// Step 1: shrinks the default group where the plan needs its ways.
fn shrink_default_group(tree: &Tree, plan: &Plan, journal: &mut Journal) -> Result<(), Error> {
    let full = plan.cbm_mask;
    let mut root = tree.default_group().schemata.clone();
    let mut changed = false;
    for r in &plan.resources {
        let Some(line) = root.line(r).cloned() else {
            continue;
        };
        let mut line = line;
        for dp in &plan.domains {
            if let Some((_, _, new)) = dp.shrink.iter().find(|(res, _, _)| res == r) {
                set_dom(&mut line, dp.domain, &mask::format_cbm(*new, full));
                changed = true;
            }
        }
        root.set_line(line);
    }
    if changed {
        journal.set_schemata(&tree.root.join("schemata"), &root, true)?;
    }
    Ok(())
}

/// Step 2: the group (in pseudo-locksetup mode when locking). EEXIST / ENOSPC come with
/// the kernel's reason.
fn create_group(tree: &Tree, plan: &Plan, journal: &mut Journal) -> Result<PathBuf, Error> {
    let dir = tree.root.join(&plan.group);
    std::fs::create_dir(&dir).map_err(|e| {
        let why = if e.raw_os_error() == Some(libc::ENOSPC) {
            "no class of service (CLOS) or monitoring id (RMID) is free".to_string()
        } else {
            e.to_string()
        };
        journal.kernel_error(
            format!("create group {}", dir.display()),
            std::io::Error::other(why),
        )
    })?;
    journal.steps.push(Step::Created(dir.clone()));
    journal.log.push(format!("created group {}", dir.display()));
    wait_for(tree.kind, &dir.join("schemata"))?;
    if plan.lock {
        write_file(&dir.join("mode"), "pseudo-locksetup\n")
            .map_err(|e| journal.kernel_error("enter pseudo-locksetup mode".into(), e))?;
        journal.log.push(format!(
            "wrote pseudo-locksetup to {}",
            dir.join("mode").display()
        ));
    }
    Ok(dir)
}

/// Step 3: the group's masks: the kernel's initial schemata with our lines replaced. A
/// region to pseudo-lock gets exactly one line with one domain, as the kernel demands.
fn set_masks(dir: &Path, plan: &Plan, journal: &mut Journal) -> Result<(), Error> {
    let initial = std::fs::read_to_string(dir.join("schemata"))
        .map_err(|e| Error::io("read", dir.join("schemata"), e))?;
    let mut ours = if plan.lock {
        Schemata::default()
    } else {
        Schemata::parse(&initial)?
    };
    for r in &plan.resources {
        let mut line = ours.line(r).cloned().unwrap_or(Line {
            resource: r.clone(),
            domains: Vec::new(),
        });
        for dp in &plan.domains {
            set_dom(
                &mut line,
                dp.domain,
                &mask::format_cbm(dp.mask, plan.cbm_mask),
            );
        }
        ours.set_line(line);
    }
    journal.set_schemata(&dir.join("schemata"), &ours, false)
}

/// Verifies what the kernel kept (it may also normalise the text).
fn verify_masks(dir: &Path, plan: &Plan) -> Result<(), Error> {
    let now = Schemata::parse(&std::fs::read_to_string(dir.join("schemata")).unwrap_or_default())?;
    for r in &plan.resources {
        for dp in &plan.domains {
            let got = now
                .line(r)
                .and_then(|l| l.get(dp.domain))
                .and_then(|v| mask::parse_cbm(v).ok());
            if got != Some(dp.mask) {
                return Err(Error::Kernel {
                    what: format!("set {r}:{}={:x}", dp.domain, dp.mask),
                    status: format!("the group's schemata shows {got:x?}"),
                });
            }
        }
    }
    Ok(())
}

/// The pseudo-locked region's device, once the kernel has locked it.
fn lock_device(tree: &Tree, plan: &Plan, dir: &Path) -> Result<PathBuf, Error> {
    let mode = std::fs::read_to_string(dir.join("mode")).unwrap_or_default();
    let dev = PathBuf::from("/dev/pseudo_lock").join(&plan.group);
    if mode.trim() != "pseudo-locked" || !dev.exists() {
        let st =
            std::fs::read_to_string(tree.root.join("info/last_cmd_status")).unwrap_or_default();
        return Err(Error::Kernel {
            what: "pseudo-lock the region".into(),
            status: format!(
                "the group's mode is '{}' and {} does not exist ({}); the kernel pseudo-locks only on Broadwell-X and Goldmont/Goldmont Plus CPUs",
                mode.trim(),
                dev.display(),
                if st.trim().is_empty() { "no status" } else { st.trim() }
            ),
        });
    }
    Ok(dev)
}

/// Moves a task into a group (children it forks later follow it).
pub fn move_task(group: &Path, pid: u32) -> Result<(), Error> {
    append(&group.join("tasks"), &format!("{pid}\n"))
        .map_err(|e| Error::io("write a task id to", group.join("tasks"), e))
}

/// Assigns CPUs to a group: default-group tasks running there use its masks.
pub fn assign_cpus(group: &Path, cpus: &[u32]) -> Result<(), Error> {
    write_file(
        &group.join("cpus_list"),
        &format!("{}\n", mask::format_list(cpus)),
    )
    .map_err(|e| Error::io("write", group.join("cpus_list"), e))
}

fn set_dom(line: &mut Line, d: u32, v: &str) {
    match line.domains.iter_mut().find(|(id, _)| *id == d) {
        Some(x) => x.1 = v.to_string(),
        None => line.domains.push((d, v.to_string())),
    }
}

/// One write(2) of the whole text, as the kernel parses each write on its own.
fn write_file(p: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(p)?;
    f.write_all(text.as_bytes())
}

/// Appends (the kernel ignores the offset; a plain file keeps every id written).
fn append(p: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().append(true).open(p)?;
    f.write_all(text.as_bytes())
}

/// The kernel fills a group directory during mkdir; on a plain directory a stand-in for
/// the kernel (tests) does it a little later, so wait for it there.
fn wait_for(kind: RootKind, file: &Path) -> Result<(), Error> {
    let until = Instant::now() + Duration::from_secs(if kind == RootKind::Kernel { 0 } else { 3 });
    while !file.exists() {
        if Instant::now() >= until {
            return Err(Error::Refused(format!(
                "{} did not appear after creating the group: is this a resctrl file system?",
                file.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Schemata values as masks, for callers checking a tree.
pub fn cbm_of(s: &Schemata, resource: &str, domain: u32) -> Option<Cbm> {
    s.line(resource)
        .and_then(|l| l.get(domain))
        .and_then(|v| mask::parse_cbm(v).ok())
}
