//! The kernel-counter source on a fake sysfs tree.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use crate::kernel::{link_bytes_per_s, Kernel};
use crate::tests::write;

/// A NIC `eth1` at 0000:86:00.0 behind the root port of bus 0x85 (host bridge
/// pci0000:85), on node 1, x8 at 8 GT/s; its byte counters start at 1,000 and 10.
pub(crate) fn nic(root: &Path) {
    let dev = root.join("devices/pci0000:85/0000:85:00.0/0000:86:00.0");
    for (f, v) in [
        ("class", "0x020000"),
        ("numa_node", "1"),
        ("vendor", "0x8086"),
        ("device", "0x1521"),
        ("current_link_speed", "8.0 GT/s PCIe"),
        ("current_link_width", "8"),
    ] {
        write(&dev.join(f), &format!("{v}\n"));
    }
    write(&dev.join("net/eth1/statistics/rx_bytes"), "1000\n");
    write(&dev.join("net/eth1/statistics/tx_bytes"), "10\n");
    for (link, target) in [
        (
            "bus/pci/devices/0000:86:00.0",
            "../../../devices/pci0000:85/0000:85:00.0/0000:86:00.0",
        ),
        (
            "class/net/eth1",
            "../../devices/pci0000:85/0000:85:00.0/0000:86:00.0/net/eth1",
        ),
    ] {
        std::fs::create_dir_all(root.join(link).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, root.join(link)).unwrap();
    }
    write(&root.join("devices/system/node/node1/cpulist"), "1\n");
}

#[test]
fn device_counters_with_node_block_and_link() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    nic(root);
    // sda: 8 sectors read, 16 written so far (fields 3 and 7).
    write(&root.join("block/sda/stat"), "1 0 8 0 2 0 16 0 0 0 0\n");
    let mut k = Kernel::open(root).unwrap();
    let names: Vec<(String, String)> = k
        .series
        .iter()
        .map(|s| (s.name.clone(), s.flow.clone()))
        .collect();
    assert_eq!(
        names,
        [
            ("eth1", "rx"),
            ("eth1", "tx"),
            ("sda", "read"),
            ("sda", "write")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let eth = &k.series[0];
    assert_eq!(
        (eth.socket, eth.pci.as_deref(), eth.block.as_deref()),
        (Some(1), Some("0000:86:00.0"), Some("pci0000:85"))
    );
    assert_eq!(eth.label, "Ethernet controller");
    // 8 GT/s x 8 lanes x 128/130 / 8 bits = 7,876,923,076.9 bytes/s.
    assert!((eth.link_bytes_per_s.unwrap() - 7_876_923_076.923).abs() < 1.0);
    assert_eq!(k.series[2].label, "block device (no PCI device)");
    let dev = root.join("devices/pci0000:85/0000:85:00.0/0000:86:00.0/net/eth1/statistics");
    write(&dev.join("rx_bytes"), "5096\n");
    write(&root.join("block/sda/stat"), "2 0 10 0 3 0 116 0 0 0 0\n");
    // 4,096 received, none sent, 2 sectors read, 100 written.
    assert_eq!(k.tick(), vec![4096.0, 0.0, 1024.0, 51200.0]);
    // A counter that goes back (interface re-created) counts 0, then counts on from there.
    write(&dev.join("rx_bytes"), "100\n");
    assert_eq!(k.tick()[0], 0.0);
    write(&dev.join("rx_bytes"), "150\n");
    assert_eq!(k.tick()[0], 50.0);
}

#[test]
fn no_devices_and_links_without_speed() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Kernel::open(dir.path()).is_none());
    let link = |s: &str, w| kairos_platform::Link {
        current_speed: Some(s.into()),
        current_width: Some(w),
        ..Default::default()
    };
    // 2.5 GT/s x1 with 8b/10b: 250 MB/s.
    assert_eq!(link_bytes_per_s(&link("2.5 GT/s PCIe", 1)), Some(250e6));
    assert_eq!(link_bytes_per_s(&link("Unknown", 4)), None);
}
