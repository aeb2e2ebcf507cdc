//! The platform snapshot a result keeps (`platform.json`): sockets and their cores, NUMA
//! nodes with memory and distances, and the I/O devices with their nodes, so that the
//! topology report and the page work later on another machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::devices::{read_devices, Device};
use crate::numa::{parse_cpulist, Node, Topology};
use crate::{read_trim, SystemRoot};

/// Name of the snapshot inside a result directory.
pub const PLATFORM_FILE: &str = "platform.json";

/// One socket (`physical_package_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Socket {
    pub id: u32,
    pub cpus: Vec<u32>,
    /// Distinct `core_id`s: physical cores, SMT siblings counted once.
    pub cores: u32,
}

/// The machine as the topology check needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// Where it was read: `sysfs`, a recorded tree, or a perf.data header.
    pub source: String,
    pub sockets: Vec<Socket>,
    pub nodes: Vec<Node>,
    /// None: the source cannot tell (a perf.data header holds no devices).
    pub devices: Option<Vec<Device>>,
    /// What could not be read, in words.
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a platform snapshot: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

impl Platform {
    /// Reads the system at `root` (sysfs only; nothing is opened for measuring).
    pub fn read(root: &SystemRoot) -> Platform {
        let topo = Topology::read(&root.sys_dir);
        let sockets = read_sockets(&root.sys_dir);
        let mut notes = Vec::new();
        if sockets.is_empty() {
            notes.push("devices/system/cpu/cpuN/topology/physical_package_id is not readable: sockets unknown".to_string());
        }
        let devices = read_devices(&root.sys_dir, &topo);
        if !root.sys_dir.join("bus/pci/devices").is_dir() {
            notes.push("bus/pci/devices is missing: PCI devices unknown".to_string());
        }
        let source = if root.sys_dir == Path::new("/sys") {
            "sysfs".to_string()
        } else {
            format!("sysfs tree {}", root.sys_dir.display())
        };
        Platform {
            source,
            sockets,
            nodes: topo.nodes,
            devices: Some(devices),
            notes,
        }
    }

    /// The node whose CPU list holds `cpu`.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    }

    pub fn write(&self, dir: &Path) -> Result<(), PlatformError> {
        let path = dir.join(PLATFORM_FILE);
        let text = serde_json::to_string_pretty(self).map_err(|e| PlatformError::Parse {
            path: path.display().to_string(),
            source: e,
        })?;
        std::fs::write(&path, text).map_err(|e| PlatformError::Write {
            path: path.display().to_string(),
            source: e,
        })
    }

    /// The snapshot of a result directory; Ok(None) when the result has none (older results).
    pub fn load(dir: &Path) -> Result<Option<Platform>, PlatformError> {
        let path = dir.join(PLATFORM_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(PlatformError::Read {
                    path: path.display().to_string(),
                    source: e,
                })
            }
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| PlatformError::Parse {
                path: path.display().to_string(),
                source: e,
            })
    }
}

/// Sockets from each online CPU's `topology/physical_package_id` and `core_id`.
pub fn read_sockets(sys_dir: &Path) -> Vec<Socket> {
    let cpu_dir = sys_dir.join("devices/system/cpu");
    let online = read_trim(&cpu_dir.join("online")).and_then(|s| parse_cpulist(&s));
    let cpus: Vec<u32> = match online {
        Some(c) => c,
        None => crate::list_dir(&cpu_dir)
            .iter()
            .filter_map(|n| n.strip_prefix("cpu").and_then(|x| x.parse().ok()))
            .collect(),
    };
    let mut by: BTreeMap<u32, (Vec<u32>, BTreeSet<u32>)> = BTreeMap::new();
    for cpu in cpus {
        let t = cpu_dir.join(format!("cpu{cpu}/topology"));
        let Some(pkg) =
            read_trim(&t.join("physical_package_id")).and_then(|s| s.parse::<i64>().ok())
        else {
            continue;
        };
        let core = read_trim(&t.join("core_id"))
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(cpu);
        // -1 is what some virtual machines report: one package.
        let e = by.entry(pkg.max(0) as u32).or_default();
        e.0.push(cpu);
        e.1.insert(core);
    }
    by.into_iter()
        .map(|(id, (mut cpus, cores))| {
            cpus.sort_unstable();
            Socket {
                id,
                cpus,
                cores: cores.len() as u32,
            }
        })
        .collect()
}
