//! The machine's I/O devices from sysfs: every PCI device that moves data (network,
//! storage, display, accelerators, InfiniBand) with its Linux names (`class/net`,
//! `class/block`, `class/infiniband`, `class/mic`, `class/drm`, `bus/dax`), its NUMA node
//! and local CPUs, the PCI host bridge it hangs under and its PCIe link; plus the named
//! devices with no PCI parent (virtual network interfaces, persistent-memory regions).
//!
//! The node matters because inbound device data (DMA, and with DDIO the L3 fill) lands on
//! the device's socket: threads reading it from another node pay a remote access.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::numa::{format_cpulist, parse_cpulist, Topology};
use crate::read_trim;

/// What a device is for, as the topology check groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    Network,
    Storage,
    Accelerator,
    Display,
    Other,
}

impl DeviceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Network => "network",
            DeviceKind::Storage => "storage",
            DeviceKind::Accelerator => "accelerator",
            DeviceKind::Display => "display",
            DeviceKind::Other => "other",
        }
    }
}

/// How the device's node was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeSource {
    /// The device's `numa_node` file.
    Sysfs,
    /// `numa_node` is -1 and `local_cpulist` is exactly one node's CPUs.
    LocalCpus,
    /// No node: -1 without a usable `local_cpulist`, or no device (virtual).
    Unknown,
}

/// A PCIe link as sysfs states it (`current_link_speed` is e.g. "8.0 GT/s PCIe").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub current_speed: Option<String>,
    pub current_width: Option<u32>,
    pub max_speed: Option<String>,
    pub max_width: Option<u32>,
}

impl Link {
    /// `x8 at 8.0 GT/s PCIe (max x16 at 8.0 GT/s PCIe)`.
    pub fn describe(&self) -> String {
        let one = |w: Option<u32>, s: &Option<String>| match (w, s) {
            (Some(w), Some(s)) => format!("x{w} at {s}"),
            (Some(w), None) => format!("x{w}"),
            (None, Some(s)) => s.clone(),
            (None, None) => "unknown".into(),
        };
        let cur = one(self.current_width, &self.current_speed);
        let max = one(self.max_width, &self.max_speed);
        if max == cur || max == "unknown" {
            cur
        } else {
            format!("{cur} (max {max})")
        }
    }
}

/// One device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// Linux names, e.g. `net:eth0`, `infiniband:mlx4_0`, `block:nvme0n1`.
    pub names: Vec<String>,
    pub kind: DeviceKind,
    /// PCI address (`0000:82:00.0`); None for a device with no PCI parent.
    pub pci_address: Option<String>,
    /// The PCI class in words (`Ethernet controller`), or the Linux class.
    pub class: String,
    /// `8086:1521`.
    pub id: Option<String>,
    pub node: Option<u32>,
    pub node_source: NodeSource,
    /// The raw `numa_node` value, when the file exists.
    pub sysfs_numa_node: Option<i32>,
    pub local_cpus: Vec<u32>,
    /// The PCI host bridge (`pci0000:80`) it hangs under.
    pub root: Option<String>,
    pub link: Option<Link>,
    /// Set for devices under `devices/virtual`: software interfaces with no hardware.
    pub virtual_device: bool,
    /// Why the node is what it is, where that is not simply the `numa_node` file.
    pub note: Option<String>,
}

impl Device {
    /// `eth0 (0000:02:00.0)` or the class when it has no Linux name.
    pub fn label(&self) -> String {
        let names: Vec<&str> = self
            .names
            .iter()
            .map(|n| n.split_once(':').map_or(n.as_str(), |(_, b)| b))
            .collect();
        let mut short: Vec<&str> = Vec::new();
        for n in names {
            if !short.contains(&n) {
                short.push(n);
            }
        }
        match (short.is_empty(), &self.pci_address) {
            (false, Some(a)) => format!("{} ({a})", short.join("/")),
            (false, None) => short.join("/"),
            (true, Some(a)) => format!("{} {a}", self.class),
            (true, None) => self.class.clone(),
        }
    }
}

/// PCI class code (the `class` file, `0x020000`) in words and as a kind.
pub fn pci_class(code: u32) -> (&'static str, DeviceKind) {
    let (base, sub) = (code >> 16, (code >> 8) & 0xff);
    match (base, sub) {
        (0x01, 0x08) => ("NVMe controller", DeviceKind::Storage),
        (0x01, 0x06) => ("SATA controller", DeviceKind::Storage),
        (0x01, 0x07) => ("SAS controller", DeviceKind::Storage),
        (0x01, 0x04) => ("RAID controller", DeviceKind::Storage),
        (0x01, _) => ("storage controller", DeviceKind::Storage),
        (0x02, 0x00) => ("Ethernet controller", DeviceKind::Network),
        (0x02, 0x07) | (0x02, 0x80) => ("network controller", DeviceKind::Network),
        (0x02, _) => ("network controller", DeviceKind::Network),
        (0x03, _) => ("display controller", DeviceKind::Display),
        (0x0b, 0x40) => ("co-processor", DeviceKind::Accelerator),
        (0x0c, 0x06) => ("InfiniBand controller", DeviceKind::Network),
        (0x12, _) => ("processing accelerator", DeviceKind::Accelerator),
        _ => ("other", DeviceKind::Other),
    }
}

/// The class of NVDIMM namespaces (`pmem*`, `dax*`).
pub const PERSISTENT_MEMORY: &str = "persistent memory";

/// Linux classes whose members name devices, with the kind a non-PCI member gets.
const CLASSES: [(&str, DeviceKind); 6] = [
    ("class/net", DeviceKind::Network),
    ("class/infiniband", DeviceKind::Network),
    ("class/block", DeviceKind::Storage),
    ("class/mic", DeviceKind::Accelerator),
    ("class/drm", DeviceKind::Display),
    ("bus/dax/devices", DeviceKind::Storage),
];

fn hex(p: &Path) -> Option<u32> {
    let s = read_trim(p)?;
    u32::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// The node a device gets from `numa_node` and `local_cpulist`, and why.
fn node_of(
    raw: Option<i32>,
    local: &[u32],
    topo: &Topology,
) -> (Option<u32>, NodeSource, Option<String>) {
    match raw {
        Some(n) if n >= 0 => (Some(n as u32), NodeSource::Sysfs, None),
        _ => {
            let why = match raw {
                Some(_) => "numa_node is -1 (the firmware gave no node)",
                None => "no numa_node file",
            };
            if local.is_empty() {
                return (
                    None,
                    NodeSource::Unknown,
                    Some(format!("{why}; node unknown")),
                );
            }
            let list = format_cpulist(local);
            if let Some(n) = topo
                .nodes
                .iter()
                .find(|n| !n.cpus.is_empty() && n.cpus == local)
            {
                return (Some(n.id), NodeSource::LocalCpus, Some(format!("{why}; node {} derived from local_cpulist {list}, which is exactly node {}'s CPUs", n.id, n.id)));
            }
            // A list that is only part of a node, or spans nodes, is not a placement to trust.
            let within: Vec<String> = topo
                .nodes
                .iter()
                .filter(|n| local.iter().all(|c| n.cpus.contains(c)))
                .map(|n| format!("{} ({})", n.id, format_cpulist(&n.cpus)))
                .collect();
            let detail = match within.first() {
                Some(n) => format!("local_cpulist {list} lies within node {n} but is not its CPU list, so it is not trusted"),
                None => format!("local_cpulist {list} is no single node's CPU list"),
            };
            (
                None,
                NodeSource::Unknown,
                Some(format!("{why}; {detail}; node unknown")),
            )
        }
    }
}

/// Reads the devices of the sysfs tree at `sys_dir`, PCI devices by address, then the
/// named devices without one.
pub fn read_devices(sys_dir: &Path, topo: &Topology) -> Vec<Device> {
    let devices_dir = sys_dir.join("devices");
    let base = std::fs::canonicalize(&devices_dir).unwrap_or(devices_dir);
    let mut pci: Vec<(PathBuf, Device)> = Vec::new();
    for name in crate::list_dir(&sys_dir.join("bus/pci/devices")) {
        let Ok(path) = std::fs::canonicalize(sys_dir.join("bus/pci/devices").join(&name)) else {
            continue;
        };
        if let Some(d) = pci_device(&path, &base, name, topo) {
            pci.push((path, d));
        }
    }
    let mut others: Vec<Device> = Vec::new();
    for (class_dir, kind) in CLASSES {
        let class = class_dir.split('/').nth(1).unwrap_or(class_dir);
        for entry in crate::list_dir(&sys_dir.join(class_dir)) {
            let link = sys_dir.join(class_dir).join(&entry);
            let path = match std::fs::canonicalize(&link) {
                Ok(p) => p,
                // A captured tree may hold the link without its target: the link still says
                // whether it is virtual.
                Err(_) => match std::fs::read_link(&link) {
                    Ok(t) if t.to_string_lossy().contains("devices/virtual/") => {
                        base.join("virtual").join(class).join(&entry)
                    }
                    _ => continue,
                },
            };
            if class == "block" && is_partition(&path) {
                continue;
            }
            let label = format!("{class}:{entry}");
            if let Some((_, d)) = pci.iter_mut().find(|(p, _)| path.starts_with(p)) {
                if !d.names.contains(&label) {
                    d.names.push(label);
                }
                continue;
            }
            let virtual_device = path
                .strip_prefix(&base)
                .is_ok_and(|r| r.starts_with("virtual"));
            // Virtual block devices (loop, ram, zram) carry no data from hardware.
            if virtual_device && class != "net" {
                continue;
            }
            others.push(named_device(
                &path,
                &base,
                label,
                class,
                kind,
                virtual_device,
                topo,
            ));
        }
    }
    let mut out: Vec<Device> = pci.into_iter().map(|(_, d)| d).collect();
    out.extend(others);
    out
}

/// The PCI device at `path` (canonical), addressed `name`; None for a class Kairos does
/// not check (or no class).
fn pci_device(path: &Path, base: &Path, name: String, topo: &Topology) -> Option<Device> {
    let code = hex(&path.join("class"))?;
    let (class, kind) = pci_class(code);
    if kind == DeviceKind::Other {
        return None;
    }
    let raw = read_trim(&path.join("numa_node")).and_then(|s| s.parse::<i32>().ok());
    let local = read_trim(&path.join("local_cpulist"))
        .and_then(|s| parse_cpulist(&s))
        .unwrap_or_default();
    let (node, node_source, note) = node_of(raw, &local, topo);
    let id = match (
        read_trim(&path.join("vendor")),
        read_trim(&path.join("device")),
    ) {
        (Some(v), Some(d)) => Some(format!(
            "{}:{}",
            v.trim_start_matches("0x"),
            d.trim_start_matches("0x")
        )),
        _ => None,
    };
    let root = path
        .strip_prefix(base)
        .ok()
        .and_then(|r| r.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    let link = read_link(path);
    Some(Device {
        names: vec![],
        kind,
        pci_address: Some(name),
        class: class.into(),
        id,
        node,
        node_source,
        sysfs_numa_node: raw,
        local_cpus: local,
        root,
        link,
        virtual_device: false,
        note,
    })
}

fn is_partition(path: &Path) -> bool {
    path.join("partition").exists()
        || path
            .parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "block")
}

/// A named device with no PCI parent: its node from the nearest ancestor that states one.
fn named_device(
    path: &Path,
    base: &Path,
    label: String,
    class: &str,
    kind: DeviceKind,
    virtual_device: bool,
    topo: &Topology,
) -> Device {
    let mut raw = None;
    let mut local = Vec::new();
    if !virtual_device {
        let mut at = Some(path);
        while let Some(p) = at.filter(|p| p.starts_with(base) && *p != base) {
            if let Some(n) = read_trim(&p.join("numa_node")).and_then(|s| s.parse::<i32>().ok()) {
                raw = Some(n);
                local = read_trim(&p.join("local_cpulist"))
                    .and_then(|s| parse_cpulist(&s))
                    .unwrap_or_default();
                break;
            }
            at = p.parent();
        }
    }
    let (node, node_source, note) = match virtual_device {
        true => (
            None,
            NodeSource::Unknown,
            Some("a virtual interface with no device below it: no node".to_string()),
        ),
        false => node_of(raw, &local, topo),
    };
    // PCI host bridges are named pciDDDD:BB; ACPI and platform parents are not roots.
    let root = path
        .strip_prefix(base)
        .ok()
        .and_then(|r| r.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|r| r.starts_with("pci"));
    // NVDIMM namespaces (pmem block devices, device-dax) are memory on their region's node.
    let class = if path
        .components()
        .any(|c| c.as_os_str().to_string_lossy().starts_with("ndbus"))
    {
        PERSISTENT_MEMORY
    } else {
        class
    };
    Device {
        names: vec![label],
        kind,
        pci_address: None,
        class: class.to_string(),
        id: None,
        node,
        node_source,
        sysfs_numa_node: raw,
        local_cpus: local,
        root,
        link: None,
        virtual_device,
        note,
    }
}

fn read_link(path: &Path) -> Option<Link> {
    let width = |f: &str| {
        read_trim(&path.join(f))
            .and_then(|s| s.parse::<u32>().ok())
            .filter(|&w| w > 0)
    };
    let speed =
        |f: &str| read_trim(&path.join(f)).filter(|s| !s.is_empty() && !s.starts_with("Unknown"));
    let l = Link {
        current_speed: speed("current_link_speed"),
        current_width: width("current_link_width"),
        max_speed: speed("max_link_speed"),
        max_width: width("max_link_width"),
    };
    (l != Link::default()).then_some(l)
}
