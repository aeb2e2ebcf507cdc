//! The device inventory and sockets of a real 2-socket machine (hwloc's capture of a Sandy
//! Bridge-EP in `shared/fixtures/topology`, extracted here at run time), against the
//! oracle table of that folder's README.
#![allow(clippy::unwrap_used, clippy::panic, clippy::type_complexity)]

use std::path::{Path, PathBuf};

use kairos_platform::{Device, DeviceKind, NodeSource, Platform, SystemRoot};

/// The extracted tree; removed when dropped.
struct Extracted(PathBuf);

impl Drop for Extracted {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn extract(tag: &str) -> Extracted {
    let tarball = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/topology/hwloc-snb-ep-2s-pci.tar.bz2");
    assert!(
        tarball.is_file(),
        "the topology fixture is missing: {}",
        tarball.display()
    );
    let dir = std::env::temp_dir().join(format!("kairos-devices-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ok = std::process::Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dir)
        .status()
        .expect("tar runs");
    assert!(ok.success(), "tar xjf {} failed", tarball.display());
    Extracted(dir)
}

fn platform(dir: &Path) -> Platform {
    Platform::read(&SystemRoot::under(dir.join("32em64t-2n8c+1mic")))
}

fn by_address<'a>(devices: &'a [Device], bdf: &str) -> &'a Device {
    devices
        .iter()
        .find(|d| d.pci_address.as_deref() == Some(bdf))
        .unwrap_or_else(|| panic!("{bdf} missing from {devices:#?}"))
}

#[test]
fn devices_match_the_oracle() {
    let x = extract("oracle");
    let p = platform(&x.0);
    let devices = p.devices.as_deref().expect("a sysfs tree lists devices");
    // BDF, kind, class words, id, node, local CPUs, names, host bridge.
    let oracle: [(
        &str,
        DeviceKind,
        &str,
        &str,
        Option<u32>,
        &str,
        &[&str],
        &str,
    ); 7] = [
        (
            "0000:02:00.0",
            DeviceKind::Network,
            "Ethernet controller",
            "8086:1521",
            Some(0),
            "0-7",
            &["net:eth0"],
            "pci0000:00",
        ),
        (
            "0000:02:00.3",
            DeviceKind::Network,
            "Ethernet controller",
            "8086:1521",
            Some(0),
            "0-7",
            &["net:eth1"],
            "pci0000:00",
        ),
        (
            "0000:82:00.0",
            DeviceKind::Network,
            "network controller",
            "15b3:1003",
            Some(1),
            "8-15",
            &["net:ib0", "infiniband:mlx4_0"],
            "pci0000:80",
        ),
        (
            "0000:83:00.0",
            DeviceKind::Accelerator,
            "co-processor",
            "8086:225c",
            Some(1),
            "8-15",
            &["mic:mic0"],
            "pci0000:80",
        ),
        (
            "0000:00:02.0",
            DeviceKind::Storage,
            "NVMe controller",
            "8086:0953",
            None,
            "0-3",
            &["block:nvme0n1"],
            "pci0000:00",
        ),
        (
            "0000:00:1f.2",
            DeviceKind::Storage,
            "SATA controller",
            "8086:1d02",
            Some(0),
            "0-7",
            &["block:sda"],
            "pci0000:00",
        ),
        (
            "0000:05:00.0",
            DeviceKind::Display,
            "display controller",
            "1a03:2000",
            Some(0),
            "0-7",
            &[],
            "pci0000:00",
        ),
    ];
    for (bdf, kind, class, id, node, cpus, names, root) in oracle {
        let d = by_address(devices, bdf);
        assert_eq!(d.kind, kind, "{bdf}");
        assert_eq!(d.class, class, "{bdf}");
        assert_eq!(d.id.as_deref(), Some(id), "{bdf}");
        assert_eq!(d.node, node, "{bdf}");
        assert_eq!(
            kairos_platform::numa::format_cpulist(&d.local_cpus),
            cpus,
            "{bdf}"
        );
        assert_eq!(d.names, names, "{bdf}");
        assert_eq!(d.root.as_deref(), Some(root), "{bdf}");
        assert!(!d.virtual_device);
    }
    // The grafted NVMe: -1 from the firmware, and a local_cpulist (0-3) that is only half
    // of node 0, so no node is guessed and the note says why.
    let nvme = by_address(devices, "0000:00:02.0");
    assert_eq!(
        (nvme.sysfs_numa_node, nvme.node_source),
        (Some(-1), NodeSource::Unknown)
    );
    let note = nvme.note.as_deref().unwrap_or("");
    assert!(
        note.contains("-1") && note.contains("0-3") && note.contains("not trusted"),
        "{note}"
    );
    // Virtual interfaces link to devices/virtual: no node.
    for name in ["net:br0", "net:eth0.1015", "net:lo", "net:mic0"] {
        let d = devices
            .iter()
            .find(|d| d.names.iter().any(|n| n == name))
            .unwrap_or_else(|| panic!("{name} missing"));
        assert!(
            d.virtual_device && d.node.is_none() && d.pci_address.is_none(),
            "{d:?}"
        );
    }
    // Virtual block devices and partitions are not listed.
    assert!(!devices
        .iter()
        .any(|d| d.names.iter().any(|n| n.starts_with("block:loop")
            || n.starts_with("block:ram")
            || n == "block:sda1")));
    // Persistent memory: its region's node (region0 on node 0, region1 on node 1).
    let pmem = |n: &str| {
        devices
            .iter()
            .find(|d| d.names.iter().any(|x| x == n))
            .and_then(|d| d.node)
    };
    assert_eq!(pmem("block:pmem0.1"), Some(0));
    assert_eq!(pmem("block:pmem1"), Some(1));
    assert_eq!(pmem("dax:dax1.3"), Some(1));
    // No uncore device (class 0x0880 etc. under pci0000:7f/ff) is an I/O device.
    assert!(!devices
        .iter()
        .any(|d| matches!(d.root.as_deref(), Some("pci0000:7f" | "pci0000:ff"))));
}

#[test]
fn sockets_nodes_and_memory() {
    let x = extract("sockets");
    let p = platform(&x.0);
    assert_eq!(p.sockets.len(), 2, "{:?}", p.sockets);
    assert_eq!(p.sockets[0].cpus, (0..8).collect::<Vec<u32>>());
    assert_eq!(p.sockets[1].cpus, (8..16).collect::<Vec<u32>>());
    assert_eq!((p.sockets[0].cores, p.sockets[1].cores), (8, 8));
    assert_eq!(
        p.nodes.iter().map(|n| n.mem_total_kb).collect::<Vec<_>>(),
        vec![Some(16_747_124), Some(16_777_216)]
    );
    assert_eq!(p.node_of_cpu(12), Some(1));
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    // The snapshot round-trips through the result's file.
    p.write(&x.0).expect("written");
    let back = Platform::load(&x.0).expect("read").expect("present");
    assert_eq!(back, p);
    assert!(Platform::load(&x.0.join("no-such-dir"))
        .expect("absent is not an error")
        .is_none());
    std::fs::write(x.0.join(kairos_platform::PLATFORM_FILE), "{").expect("write");
    assert!(Platform::load(&x.0).is_err());
}

/// A -1 device whose local CPUs are exactly one node's gets that node, marked as derived.
#[test]
fn a_node_derived_from_local_cpus_says_so() {
    let x = extract("derived");
    let dev =
        x.0.join("32em64t-2n8c+1mic/sys/devices/pci0000:80/0000:80:02.2/0000:82:00.0");
    std::fs::write(dev.join("numa_node"), "-1\n").expect("write");
    let p = platform(&x.0);
    let d = by_address(p.devices.as_deref().unwrap_or_default(), "0000:82:00.0");
    assert_eq!((d.node, d.node_source), (Some(1), NodeSource::LocalCpus));
    assert!(
        d.note
            .as_deref()
            .unwrap_or("")
            .contains("derived from local_cpulist 8-15"),
        "{:?}",
        d.note
    );
}

#[test]
fn the_live_machine_never_panics() {
    let p = Platform::read(&SystemRoot::live());
    assert!(!p.nodes.is_empty());
    for d in p.devices.unwrap_or_default() {
        assert!(
            d.node.is_none() || p.nodes.iter().any(|n| Some(n.id) == d.node),
            "{d:?}"
        );
    }
}

/// The header of a real 2-socket recording (perf 3.3): nodes and sockets as
/// `perf report --header-only -I` prints them (the fixture README), no devices.
#[test]
fn a_perf_data_header_gives_nodes_and_sockets_but_no_devices() {
    let f = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/topology/snb-ep-2s-numatopology.perf.data");
    let p = header_platform(&std::fs::read(&f).expect("read")).expect("topology features present");
    let list = |v: &[u32]| kairos_platform::numa::format_cpulist(v);
    assert_eq!(
        p.nodes
            .iter()
            .map(|n| (n.id, list(&n.cpus), n.mem_total_kb))
            .collect::<Vec<_>>(),
        vec![
            (0, "0-7,16-23".to_string(), Some(33_479_172)),
            (1, "8-15,24-31".to_string(), Some(33_554_432)),
        ]
    );
    assert_eq!(
        p.sockets
            .iter()
            .map(|s| (s.id, list(&s.cpus), s.cores))
            .collect::<Vec<_>>(),
        vec![
            (0, "0-7,16-23".to_string(), 8),
            (1, "8-15,24-31".to_string(), 8)
        ]
    );
    assert!(
        p.devices.is_none() && p.notes.iter().any(|n| n.contains("devices unknown")),
        "{:?}",
        p.notes
    );
    // Not a perf.data file, or one cut short: no platform, no panic.
    assert!(header_platform(b"not a perf file").is_none());
    let bytes = std::fs::read(&f).expect("read");
    for cut in [0, 8, 60, 104, bytes.len() / 2, bytes.len() - 1] {
        let _ = header_platform(&bytes[..cut]);
    }
}

/// The platform of a perf.data file's header, read by kairos-perf-data as `kairos import`
/// reads it.
fn header_platform(bytes: &[u8]) -> Option<Platform> {
    let file = kairos_perf_data::PerfFile::from_bytes(bytes.to_vec()).ok()?;
    let f = file.features();
    let nodes: Vec<kairos_platform::HeaderNode<'_>> = f
        .numa_nodes
        .iter()
        .map(|n| kairos_platform::HeaderNode {
            id: n.id,
            mem_total_kb: n.mem_total_kb,
            cpus: &n.cpus,
        })
        .collect();
    Platform::from_perf_header(&nodes, &f.core_siblings, &f.thread_siblings)
}
