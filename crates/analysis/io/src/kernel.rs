//! The source that works everywhere: each device's own byte counters as the kernel keeps
//! them (`class/net/*/statistics/{rx,tx}_bytes`, `block/*/stat` sectors x 512), with the
//! device's NUMA node, PCI address, PCIe block and link from kairos-platform. This is the
//! traffic of each device, not PCIe transactions: no L3 hit or miss is seen here.

use std::path::Path;

use kairos_platform::devices::{read_devices, Device, Link};
use kairos_platform::numa::Topology;

use crate::model::{Scope, Series};

/// Words for the result's list of sources.
pub const SOURCE: &str = "kernel device counters (network rx/tx bytes, block sectors read/written x 512): device traffic, not PCIe transactions";

/// A device counter: which file, which field.
#[derive(Debug, Clone, PartialEq)]
enum Reader {
    /// A file holding one number of bytes.
    Bytes(std::path::PathBuf),
    /// `block/X/stat`, field `index` (sectors of 512 bytes).
    Sectors(std::path::PathBuf, usize),
}

/// The device counters of a sysfs tree, opened.
pub struct Kernel {
    readers: Vec<Reader>,
    pub series: Vec<Series>,
    last: Vec<u64>,
}

fn read(r: &Reader) -> Option<u64> {
    match r {
        Reader::Bytes(p) => std::fs::read_to_string(p).ok()?.trim().parse().ok(),
        Reader::Sectors(p, i) => {
            let text = std::fs::read_to_string(p).ok()?;
            let v: u64 = text.split_whitespace().nth(*i)?.parse().ok()?;
            Some(v.saturating_mul(512))
        }
    }
}

/// Payload bytes a second of a PCIe link: GT/s x lanes x encoding efficiency / 8
/// (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s; 64 GT/s FLIT mode counted as 242/256).
pub fn link_bytes_per_s(link: &Link) -> Option<f64> {
    let gt: f64 = link
        .current_speed
        .as_deref()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let width = f64::from(link.current_width?);
    let efficiency = if gt <= 5.0 {
        8.0 / 10.0
    } else if gt < 64.0 {
        128.0 / 130.0
    } else {
        242.0 / 256.0
    };
    Some(gt * 1e9 * width * efficiency / 8.0)
}

/// The device named `kind:name` among `devices`.
fn find<'a>(devices: &'a [Device], kind: &str, name: &str) -> Option<&'a Device> {
    let want = format!("{kind}:{name}");
    devices.iter().find(|d| d.names.contains(&want))
}

fn series(name: &str, flow: &str, dev: Option<&Device>, label: &str) -> Series {
    Series {
        scope: Scope::Device,
        name: name.into(),
        flow: flow.into(),
        unit: "bytes".into(),
        socket: dev.and_then(|d| d.node),
        pci: dev.and_then(|d| d.pci_address.clone()),
        block: dev.and_then(|d| d.root.clone()),
        label: match dev {
            Some(d) if d.pci_address.is_some() => d.class.clone(),
            _ => format!("{label} (no PCI device)"),
        },
        link_bytes_per_s: dev.and_then(|d| d.link.as_ref()).and_then(link_bytes_per_s),
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

impl Kernel {
    /// Every network interface and block device of the tree at `sys_dir` (`/sys`), with
    /// the first reading taken; None when there is none.
    pub fn open(sys_dir: &Path) -> Option<Kernel> {
        let topo = Topology::read(sys_dir);
        let devices = read_devices(sys_dir, &topo);
        let mut readers = Vec::new();
        let mut series_list = Vec::new();
        for name in names(&sys_dir.join("class/net")) {
            let stats = sys_dir.join("class/net").join(&name).join("statistics");
            let dev = find(&devices, "net", &name);
            for flow in ["rx", "tx"] {
                readers.push(Reader::Bytes(stats.join(format!("{flow}_bytes"))));
                series_list.push(series(&name, flow, dev, "network interface"));
            }
        }
        for name in names(&sys_dir.join("block")) {
            let stat = sys_dir.join("block").join(&name).join("stat");
            let dev = find(&devices, "block", &name);
            // Fields 3 and 7 of block/stat: sectors read, sectors written.
            for (flow, field) in [("read", 2), ("write", 6)] {
                readers.push(Reader::Sectors(stat.clone(), field));
                series_list.push(series(&name, flow, dev, "block device"));
            }
        }
        if readers.is_empty() {
            return None;
        }
        let last = readers.iter().map(|r| read(r).unwrap_or(0)).collect();
        Some(Kernel {
            readers,
            series: series_list,
            last,
        })
    }

    /// Bytes since the previous reading, per series (a counter that went back, e.g. a
    /// re-created interface, counts 0).
    pub fn tick(&mut self) -> Vec<f64> {
        self.readers
            .iter()
            .zip(self.last.iter_mut())
            .map(|(r, last)| {
                let now = read(r).unwrap_or(*last);
                let d = now.saturating_sub(*last);
                *last = now;
                d as f64
            })
            .collect()
    }
}
