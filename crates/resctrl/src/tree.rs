//! A snapshot of a resctrl tree: capabilities, and the control groups (the root, i.e. the
//! default group, and each directory holding a `schemata`) with their masks, tasks and
//! CPUs.

use std::path::{Path, PathBuf};

use crate::info::{read_opt, Caps};
use crate::mask::{self, Cbm};
use crate::schemata::Schemata;
use crate::{Error, RESCTRL_MAGIC};

/// Whether the root is the kernel's file system or a plain directory (a copy of a tree,
/// given for tests and demonstrations): on a plain directory nothing reacts to writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    Kernel,
    Directory,
}

impl RootKind {
    pub fn of(root: &Path) -> RootKind {
        let Ok(c) = std::ffi::CString::new(root.as_os_str().as_encoded_bytes()) else {
            return RootKind::Directory;
        };
        // SAFETY: statfs fills a plain struct from a NUL-terminated path.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0 && st.f_type as i64 == RESCTRL_MAGIC {
            RootKind::Kernel
        } else {
            RootKind::Directory
        }
    }
}

/// One control group (a class of service).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Directory name; empty for the default group (the root).
    pub name: String,
    pub path: PathBuf,
    /// shareable, exclusive, pseudo-locksetup, pseudo-locked (absent in some trees).
    pub mode: Option<String>,
    pub tasks: Vec<u32>,
    /// CPUs assigned to the group: tasks of the default group running there use its masks.
    pub cpus: Vec<u32>,
    pub schemata: Schemata,
    pub mon_groups: Vec<String>,
    pub has_mon_data: bool,
}

impl Group {
    pub fn is_default(&self) -> bool {
        self.name.is_empty()
    }
    /// The name shown to users.
    pub fn label(&self) -> &str {
        if self.is_default() {
            "default"
        } else {
            &self.name
        }
    }
    /// The group's mask for `resource` in `domain`, if it has one.
    pub fn cbm(&self, resource: &str, domain: u32) -> Result<Option<Cbm>, Error> {
        match self.schemata.line(resource).and_then(|l| l.get(domain)) {
            Some(v) => mask::parse_cbm(v).map(Some),
            None => Ok(None),
        }
    }
    pub fn is_exclusive(&self) -> bool {
        matches!(
            self.mode.as_deref(),
            Some("exclusive") | Some("pseudo-locked") | Some("pseudo-locksetup")
        )
    }
}

/// The whole tree.
#[derive(Debug, Clone)]
pub struct Tree {
    pub root: PathBuf,
    pub kind: RootKind,
    pub caps: Caps,
    /// The default group first, then the others by name.
    pub groups: Vec<Group>,
    /// MB values are in MBps (mounted with `mba_MBps`) rather than percent.
    pub mba_mbps: bool,
    pub cdp_mounted: bool,
    pub last_cmd_status: Option<String>,
}

impl Tree {
    pub fn read(root: &Path) -> Result<Tree, Error> {
        let caps = Caps::read(root)?;
        let kind = RootKind::of(root);
        let mut groups = vec![read_group(root, String::new())?];
        let mut names: Vec<String> = std::fs::read_dir(root)
            .map_err(|e| Error::io("list", root, e))?
            .filter_map(Result::ok)
            .filter(|e| e.path().join("schemata").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !matches!(n.as_str(), "info" | "mon_groups" | "mon_data"))
            .collect();
        names.sort();
        for n in names {
            groups.push(read_group(&root.join(&n), n)?);
        }
        let mount_opts = if kind == RootKind::Kernel {
            mount_options(root)
        } else {
            None
        };
        // A copy of a tree has no mount options: MBps mode shows in values above 100 %.
        let mba_mbps = match &mount_opts {
            Some(o) => o.split(',').any(|x| x == "mba_MBps"),
            None => groups[0].schemata.line("MB").is_some_and(|l| {
                l.domains
                    .iter()
                    .any(|(_, v)| v.parse::<u64>().is_ok_and(|x| x > 100))
            }),
        };
        let cdp_mounted = caps.caches.iter().any(|c| c.is_cdp());
        Ok(Tree {
            root: root.to_path_buf(),
            kind,
            caps,
            groups,
            mba_mbps,
            cdp_mounted,
            last_cmd_status: read_opt(&root.join("info/last_cmd_status"))
                .map(|s| s.trim().to_string()),
        })
    }

    pub fn default_group(&self) -> &Group {
        &self.groups[0]
    }
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }
    /// Domain ids of `resource`, from the default group's schemata.
    pub fn domains(&self, resource: &str) -> Vec<u32> {
        self.default_group()
            .schemata
            .line(resource)
            .map(|l| l.domains.iter().map(|(d, _)| *d).collect())
            .unwrap_or_default()
    }
    /// Bytes per way of `resource` in `domain`: the default group's `size` over its ways.
    pub fn way_bytes(&self, resource: &str, domain: u32) -> Option<u64> {
        let size = read_opt(&self.root.join("size")).and_then(|s| Schemata::parse(&s).ok())?;
        let bytes: u64 = size.line(resource)?.get(domain)?.parse().ok()?;
        let m = self.default_group().cbm(resource, domain).ok()??;
        (m != 0).then(|| bytes / u64::from(mask::ways(m)))
    }
}

fn read_group(dir: &Path, name: String) -> Result<Group, Error> {
    let sp = dir.join("schemata");
    let text = std::fs::read_to_string(&sp).map_err(|e| Error::io("read", &sp, e))?;
    let schemata =
        Schemata::parse(&text).map_err(|e| Error::Parse(format!("{}: {e}", sp.display())))?;
    let tasks = read_opt(&dir.join("tasks"))
        .map(|s| {
            s.split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let cpus = match read_opt(&dir.join("cpus_list")) {
        Some(s) => mask::parse_cpu_list(&s)?,
        None => Vec::new(),
    };
    let mon_groups = match std::fs::read_dir(dir.join("mon_groups")) {
        Ok(rd) => {
            let mut v: Vec<String> = rd
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect();
            v.sort();
            v
        }
        Err(_) => Vec::new(),
    };
    Ok(Group {
        name,
        path: dir.to_path_buf(),
        mode: read_opt(&dir.join("mode"))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty()),
        tasks,
        cpus,
        schemata,
        mon_groups,
        has_mon_data: dir.join("mon_data").is_dir(),
    })
}

/// The options of the resctrl mount at `root`, from /proc/mounts.
pub fn mount_options(root: &Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && f[2] == "resctrl" && Path::new(f[1]) == root).then(|| f[3].to_string())
    })
}
