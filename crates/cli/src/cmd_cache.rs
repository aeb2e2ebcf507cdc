//! `kairos cache [--resctrl-root DIR] [--format text|csv|json]`: the machine's cache
//! allocation and monitoring (resctrl) and which ways each CPU may fill; where resctrl
//! is missing, exactly why and what still works.

use std::path::{Path, PathBuf};

use clap::Args;
use kairos_report::{Cell, Document, Format, Section};
use kairos_resctrl::topology::CacheTopology;
use kairos_resctrl::{why, Error, Tree, DEFAULT_ROOT};

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct CacheArgs {
    /// Where resctrl is mounted (or a copy of a resctrl tree to read as if mounted).
    #[arg(long = "resctrl-root", default_value = DEFAULT_ROOT)]
    pub resctrl_root: PathBuf,
    /// CPU directory with cpuN/cache/indexK (default: /sys/devices/system/cpu for the
    /// live tree, none for another root).
    #[arg(long = "cpu-root", hide = true)]
    pub cpu_root: Option<PathBuf>,
    /// text, csv or json.
    #[arg(long, default_value = "text")]
    pub format: String,
}

/// The CPU-to-cache map that belongs to `root`: the live one only for the live tree.
pub fn topology(root: &Path, cpu_root: Option<&Path>) -> CacheTopology {
    match cpu_root {
        Some(p) => CacheTopology::read(p),
        None if root == Path::new(DEFAULT_ROOT) => {
            CacheTopology::read(Path::new("/sys/devices/system/cpu"))
        }
        None => CacheTopology::default(),
    }
}

/// Reads the tree; a missing one at the default root is explained (`Ok(Err(doc))`).
pub fn open(root: &Path) -> CliResult<Result<Tree, Document>> {
    match Tree::read(root) {
        Ok(t) => Ok(Ok(t)),
        Err(Error::NotResctrl(_)) if root == Path::new(DEFAULT_ROOT) => {
            let a = why::explain_live(root);
            let mut d = Document::new("Cache allocation: resctrl is not available here");
            let mut s = Section::new("Why");
            for (i, c) in a.causes.iter().enumerate() {
                s.push(format!("{}", i + 1), Cell::text(c.clone()));
            }
            s.push("What still works", Cell::text(why::STILL_WORKS));
            d.push_section(s);
            Ok(Err(d))
        }
        Err(Error::NotResctrl(p)) => Err(UserError::failed(format!(
            "{} is not a resctrl tree (it has no info/ directory); give the mount point, normally {DEFAULT_ROOT}",
            p.display()
        ))),
        Err(e) => Err(UserError::failed(format!("cannot read the resctrl tree at {}: {e}", root.display()))),
    }
}

/// Text width: long enough for the sentences of the absence report.
pub const TEXT_WIDTH: usize = 400;

pub fn run(args: CacheArgs) -> CliResult {
    let format: Format = args
        .format
        .parse()
        .map_err(|e: kairos_report::ParseFormatError| UserError::usage(e.to_string()))?;
    let doc = match open(&args.resctrl_root)? {
        Ok(tree) => {
            let topo = topology(&args.resctrl_root, args.cpu_root.as_deref());
            kairos_resctrl::report::document(&tree, &topo).map_err(|e| {
                UserError::failed(format!(
                    "cannot read the resctrl tree at {}: {e}",
                    args.resctrl_root.display()
                ))
            })?
        }
        Err(absent) => absent,
    };
    // Wider than report tables: the sentences and group lists are the point here.
    let text = match format {
        Format::Text => doc.to_text_width(TEXT_WIDTH),
        f => doc.render(f),
    };
    print!("{text}");
    Ok(())
}
