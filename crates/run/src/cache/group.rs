//! A resctrl group of N exclusive ways, made by Kairos for one program and removed after:
//! the tree read, the ways planned, the plan applied with every change in a journal, and
//! the journal undone. Written once for `kairos run --cache-ways` and `kairos collect -k
//! cache-group=new`.

use std::path::Path;

use kairos_resctrl::plan::{self, Plan, Request};
use kairos_resctrl::write::{self, Applied, Journal};
use kairos_resctrl::{mask, why, Tree};

use crate::{Caller, Error, Placement, Shrink, Undone};

/// The name of the group Kairos makes: its own pid tells a group left by a killed Kairos.
pub(crate) fn own_name() -> String {
    format!("kairos-{}", std::process::id())
}

/// Why resctrl cannot be used at `root`, in one sentence for `caller`.
fn absent(root: &Path, caller: Caller) -> Error {
    Error::NoResctrl {
        caller,
        causes: why::explain_live(root).causes.join("; "),
    }
}

/// The tree at `root` for `kairos run`: a missing resctrl at the default root is explained;
/// another root must be a resctrl tree.
pub(crate) fn open_for_run(root: &Path) -> Result<Tree, Error> {
    match Tree::read(root) {
        Ok(t) => Ok(t),
        Err(kairos_resctrl::Error::NotResctrl(_))
            if root == Path::new(kairos_resctrl::DEFAULT_ROOT) =>
        {
            Err(absent(root, Caller::Run))
        }
        Err(kairos_resctrl::Error::NotResctrl(p)) => Err(Error::NotResctrl(p)),
        Err(source) => Err(Error::CannotRead {
            root: root.to_path_buf(),
            source,
        }),
    }
}

/// The tree at `root` for `kairos collect`: any failure to read it is explained.
pub(crate) fn open_for_collect(root: &Path) -> Result<Tree, Error> {
    Tree::read(root).map_err(|_| absent(root, Caller::Collect))
}

/// Plans `req` on `tree`; the refusal says why, and that nothing was changed.
pub(crate) fn plan(tree: &Tree, req: &Request, caller: Caller) -> Result<Plan, Error> {
    plan::plan(tree, req).map_err(|source| Error::Refused {
        caller,
        ways: req.ways,
        level: req.level.clone(),
        source,
    })
}

/// A group Kairos made. Dropped without [`NewGroup::undo`], its journal undoes it all
/// the same.
pub(crate) struct NewGroup {
    pub(crate) plan: Plan,
    pub(crate) applied: Applied,
    journal: Journal,
    caller: Caller,
}

impl NewGroup {
    /// Applies `plan`; a failure undoes whatever was done and says so.
    pub(crate) fn apply(tree: &Tree, plan: Plan, caller: Caller) -> Result<NewGroup, Error> {
        let mut journal = Journal::new(tree);
        match write::apply(tree, &plan, &mut journal) {
            Ok(applied) => Ok(NewGroup {
                plan,
                applied,
                journal,
                caller,
            }),
            Err(source) => Err(Error::SetUp {
                source,
                undone: Undone {
                    left: journal.undo(),
                    caller,
                },
            }),
        }
    }

    /// Undoes every change, newest first; what could not be undone.
    pub(crate) fn undo(&mut self) -> Vec<String> {
        self.journal.undo()
    }

    /// Undoes every change after a failure, for the error that says so.
    pub(crate) fn undo_for_error(&mut self) -> Undone {
        Undone {
            left: self.undo(),
            caller: self.caller,
        }
    }

    /// What was done and undone, one sentence a line.
    pub(crate) fn log(&self) -> &[String] {
        &self.journal.log
    }

    /// Where the group's ways are, one [`Placement`] per distinct placement with the
    /// domains that share it.
    pub(crate) fn placements(&self) -> Vec<Placement> {
        let plan = &self.plan;
        let full = plan.cbm_mask;
        let mut out: Vec<(Placement, Vec<u32>)> = Vec::new();
        for dp in &plan.domains {
            let p = Placement {
                group: plan.group.clone(),
                resources: plan.resources.clone(),
                domains: String::new(),
                ways: mask::way_list(dp.mask),
                mask: mask::format_cbm(dp.mask, full),
                shrunk: dp
                    .shrink
                    .iter()
                    .map(|(r, o, n)| Shrink {
                        resource: r.clone(),
                        from: mask::format_cbm(*o, full),
                        to: mask::format_cbm(*n, full),
                    })
                    .collect(),
            };
            match out.iter_mut().find(|(q, _)| *q == p) {
                Some((_, d)) => d.push(dp.domain),
                None => out.push((p, vec![dp.domain])),
            }
        }
        out.into_iter()
            .map(|(p, d)| Placement {
                domains: mask::format_list(&d),
                ..p
            })
            .collect()
    }
}
