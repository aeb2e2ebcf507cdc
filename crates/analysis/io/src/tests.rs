//! Planning on fake sysfs trees with the perfmon files of three recorded CPUs, and the
//! formulas on hand-built counts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use crate::encode::{bytes_per_count, place};
use crate::model::{Scope, Series};
use crate::uncore::{plan, stack_bus, Places};

pub(crate) fn perfmon() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../../shared/fixtures/perfmon")
}

pub(crate) fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The kernel's format layouts (arch/x86/events/intel/uncore_snbep.c) per generation:
/// (IIO fields, CHA fields).
type Formats = (
    &'static [(&'static str, &'static str)],
    &'static [(&'static str, &'static str)],
);
const SKX: Formats = (
    &[
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        ("ch_mask", "config:36-43"),
        ("fc_mask", "config:44-46"),
    ],
    &[
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        // The kernel's SKX CHA filter fields: FILTER0 low, FILTER1 high in config1.
        ("filter_tid4", "config1:0-8"),
        ("filter_state5", "config1:17-26"),
        ("filter_rem", "config1:32"),
        ("filter_loc", "config1:33"),
        ("filter_all_op", "config1:35"),
        ("filter_nm", "config1:36"),
        ("filter_not_nm", "config1:37"),
        ("filter_opc0", "config1:41-50"),
        ("filter_opc1", "config1:51-60"),
        ("filter_nc", "config1:62"),
        ("filter_isoc", "config1:63"),
    ],
);
/// SKX as an older kernel exposed it: no filter fields.
const SKX_NO_FILTER: Formats = (SKX.0, &[("event", "config:0-7"), ("umask", "config:8-15")]);
const ICX: Formats = (
    &[
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        ("ch_mask", "config:36-47"),
        ("fc_mask", "config:48-50"),
    ],
    &[("event", "config:0-7"), ("umask", "config:8-15,32-57")],
);
const SPR: Formats = (
    &[
        ("event", "config:0-7"),
        ("umask", "config:8-15,32-55"),
        ("ch_mask", "config:36-47"),
        ("fc_mask", "config:48-50"),
    ],
    &[("event", "config:0-7"), ("umask", "config:8-15,32-63")],
);

/// Two sockets (CPU 0 and 1), one IIO PMU whose stack is bus 0x16 on socket 0 and 0x85 on
/// socket 1, two CHAs.
pub(crate) fn tree(root: &Path, f: Formats) -> Places {
    let pmus = root.join("bus/event_source/devices");
    for (name, ty, fields) in [
        ("uncore_iio_0", 60, f.0),
        ("uncore_cha_0", 30, f.1),
        ("uncore_cha_1", 31, f.1),
    ] {
        write(&pmus.join(name).join("type"), &format!("{ty}\n"));
        write(&pmus.join(name).join("cpumask"), "0,1\n");
        for (k, v) in fields {
            write(&pmus.join(name).join("format").join(k), &format!("{v}\n"));
        }
    }
    write(&pmus.join("uncore_iio_0/die0"), "0000:16\n");
    write(&pmus.join("uncore_iio_0/die1"), "0000:85\n");
    for cpu in 0..2 {
        write(
            &root.join(format!(
                "devices/system/cpu/cpu{cpu}/topology/physical_package_id"
            )),
            &format!("{cpu}\n"),
        );
    }
    Places {
        pmus,
        sys: root.to_path_buf(),
    }
}

pub(crate) fn files(cpu: &str, stem: &str) -> (String, String) {
    let d = perfmon().join(cpu);
    (
        std::fs::read_to_string(d.join(format!("events/{stem}_uncore.json"))).unwrap(),
        std::fs::read_to_string(d.join(format!("metrics/{stem}_metrics.json"))).unwrap(),
    )
}

fn counter<'a>(p: &'a crate::uncore::Plan, pmu: &str, event: &str) -> &'a crate::uncore::Counter {
    p.counters
        .iter()
        .find(|c| c.pmu == pmu && c.event == event)
        .unwrap_or_else(|| panic!("{event} on {pmu} not planned"))
}

fn config(p: &crate::uncore::Plan, pmu: &str, event: &str) -> u64 {
    counter(p, pmu, event).config
}

pub(crate) fn experimental(cpu: &str, stem: &str) -> String {
    std::fs::read_to_string(
        perfmon()
            .join(cpu)
            .join(format!("events/{stem}_uncore_experimental.json")),
    )
    .unwrap()
}

/// The events summed into a socket series `flow`: (event, config, config1) on one CHA.
fn parts(p: &crate::uncore::Plan, flow: &str) -> Vec<(String, u64, u64)> {
    p.counters
        .iter()
        .filter(|c| c.pmu == "uncore_cha_0" && c.cpu == 0 && p.series[c.series].flow == flow)
        .map(|c| (c.event.clone(), c.config, c.config1))
        .collect()
}

#[test]
fn skx_opcode_filters_make_the_hit_miss_and_latency_events() {
    let dir = tempfile::tempdir().unwrap();
    let places = tree(dir.path(), SKX);
    let (events, metrics) = files("SKX", "skylakex");
    let exp = experimental("SKX", "skylakex");
    let p = crate::uncore::plan_files(&places, &[&events, &exp], Some(&metrics)).unwrap();
    // Hits: the IO_HIT umask 0x14 with each miss event's FILTER1 in config1 bits 32-63
    // (opcode in FILTER1 bits 9-18 = filter_opc0, config1:41-50).
    assert_eq!(
        parts(&p, "UNC_CHA_TOR_INSERTS.IO_HIT"),
        [
            (
                "UNC_CHA_TOR_INSERTS.IO_HIT_PCIRDCUR".into(),
                0x1435,
                0x43C33 << 32
            ),
            (
                "UNC_CHA_TOR_INSERTS.IO_HIT_ITOM".into(),
                0x1435,
                0x49033 << 32
            ),
            (
                "UNC_CHA_TOR_INSERTS.IO_HIT_RFO".into(),
                0x1435,
                0x40033 << 32
            ),
        ]
    );
    assert_eq!(
        parts(&p, "UNC_CHA_TOR_INSERTS.IO_MISS"),
        [
            (
                "UNC_CHA_TOR_INSERTS.IO_MISS_RDCUR".into(),
                0x2435,
                0x43C33 << 32
            ),
            (
                "UNC_CHA_TOR_INSERTS.IO_MISS_ITOM".into(),
                0x2435,
                0x49033 << 32
            ),
            (
                "UNC_CHA_TOR_INSERTS.IO_MISS_RFO".into(),
                0x2435,
                0x40033 << 32
            ),
        ]
    );
    // 0x21E (PCIRdCur) and 0x248 (ItoM) in bits 41-50.
    assert_eq!((0x43C33u64 << 32 >> 41) & 0x3ff, 0x21E);
    assert_eq!((0x49033u64 << 32 >> 41) & 0x3ff, 0x248);
    // All requests of an opcode and their occupancy: the IO umask 0x34.
    assert_eq!(
        parts(&p, "UNC_CHA_TOR_OCCUPANCY.IO_ITOM"),
        [(
            "UNC_CHA_TOR_OCCUPANCY.IO_ITOM".into(),
            0x3436,
            0x49033 << 32
        )]
    );
    assert_eq!(
        parts(&p, "UNC_CHA_TOR_INSERTS.IO_PCIRDCUR"),
        [(
            "UNC_CHA_TOR_INSERTS.IO_PCIRDCUR".into(),
            0x3435,
            0x43C33 << 32
        )]
    );
    // An older kernel without the filter fields: said, and nothing counts the wrong thing.
    let dir = tempfile::tempdir().unwrap();
    let places = tree(dir.path(), SKX_NO_FILTER);
    let p = crate::uncore::plan_files(&places, &[&events, &exp], Some(&metrics)).unwrap();
    assert!(parts(&p, "UNC_CHA_TOR_INSERTS.IO_HIT").is_empty());
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("IO_HIT_PCIRDCUR is not counted")
                && n.contains("has no config1 fields")),
        "{:?}",
        p.notes
    );
}

#[test]
fn icx_itom_occupancy_comes_from_the_experimental_file() {
    let dir = tempfile::tempdir().unwrap();
    let places = tree(dir.path(), ICX);
    let (events, metrics) = files("ICX", "icelakex");
    let p = plan(&places, &events, Some(&metrics)).unwrap();
    assert!(parts(&p, "UNC_CHA_TOR_OCCUPANCY.IO_ITOM").is_empty());
    let exp = experimental("ICX", "icelakex");
    let p = crate::uncore::plan_files(&places, &[&events, &exp], Some(&metrics)).unwrap();
    // 0x36 | 0x04 << 8 | UMaskExt 0xCC43FF << 32; no filter.
    assert_eq!(
        parts(&p, "UNC_CHA_TOR_OCCUPANCY.IO_ITOM"),
        [(
            "UNC_CHA_TOR_OCCUPANCY.IO_ITOM".into(),
            0x00CC_43FF_0000_0436,
            0
        )]
    );
    assert_eq!(
        parts(&p, "UNC_CHA_TOR_INSERTS.IO_ITOM"),
        [(
            "UNC_CHA_TOR_INSERTS.IO_ITOM".into(),
            0x00CC_43FF_0000_0435,
            0
        )]
    );
}

#[test]
fn encodings_of_the_three_recorded_cpus() {
    for (cpu, stem, formats) in [
        ("SKX", "skylakex", SKX),
        ("ICX", "icelakex", ICX),
        ("SPR", "sapphirerapids", SPR),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let places = tree(dir.path(), formats);
        let (events, metrics) = files(cpu, stem);
        let p = plan(&places, &events, Some(&metrics)).unwrap_or_else(|e| panic!("{cpu}: {e}"));
        // Two sockets x four flows, each the sum of PART0..3 at 4 bytes a count.
        let stacks: Vec<&Series> = p
            .series
            .iter()
            .filter(|s| s.scope == Scope::Stack)
            .collect();
        assert_eq!(stacks.len(), 8, "{cpu}");
        let iio: Vec<_> = p
            .counters
            .iter()
            .filter(|c| c.pmu == "uncore_iio_0" && p.series[c.series].scope == Scope::Stack)
            .collect();
        assert_eq!(iio.len(), 32, "{cpu}");
        assert!(iio.iter().all(|c| c.scale == 4.0), "{cpu}");
        match cpu {
            // event 0x83 | umask 0x04 << 8 | PortMask 0x04 << 36 | FCMask 0x07 << 44
            "SKX" => {
                assert_eq!(
                    config(&p, "uncore_iio_0", "UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART2"),
                    0x0000_7040_0000_0483
                );
                // The main file alone has no opcode events: IO_HIT/IO_MISS with FILTER1 0
                // would match nothing, so they are not planned (see the test below).
                assert!(parts(&p, "UNC_CHA_TOR_INSERTS.IO_MISS").is_empty());
                // io_bandwidth_* count UNC_IIO_PAYLOAD_BYTES_IN (the same encoding, deprecated
                // name), per socket over its IIO stacks; the file has no io_*_l3_miss.
                let names: Vec<&str> = p.metrics.iter().map(|m| m.name.as_str()).collect();
                assert_eq!(names, ["io_bandwidth_read", "io_bandwidth_write"]);
                assert_eq!(
                    config(
                        &p,
                        "uncore_iio_0",
                        "UNC_IIO_PAYLOAD_BYTES_IN.MEM_READ.PART0"
                    ),
                    0x0000_7010_0000_0483
                );
            }
            // 0x83 | 0x04 << 8 | PortMask 0x01 << 36 | FCMask 0x07 << 48
            "ICX" => {
                assert_eq!(
                    config(&p, "uncore_iio_0", "UNC_IIO_DATA_REQ_OF_CPU.MEM_READ.PART0"),
                    0x0007_0010_0000_0483
                );
                // 0x35 | 0x04 << 8 | UMaskExt 0xC8F3FD << 32
                assert_eq!(
                    config(&p, "uncore_cha_0", "UNC_CHA_TOR_INSERTS.IO_HIT_PCIRDCUR"),
                    0x00C8_F3FD_0000_0435
                );
                assert_eq!(p.metrics.len(), 5);
            }
            // BY_CPU.MEM_READ.PART1: 0xc0 | 0x04 << 8, UMaskExt 0x00070020 in bits 32-55,
            // which repeats PortMask 0x02 << 36 and FCMask 0x07 << 48.
            _ => {
                assert_eq!(
                    config(&p, "uncore_iio_0", "UNC_IIO_DATA_REQ_BY_CPU.MEM_READ.PART1"),
                    0x0007_0020_0000_04c0
                );
                assert_eq!(
                    config(&p, "uncore_cha_0", "UNC_CHA_TOR_INSERTS.IO_MISS_ITOM"),
                    0x00CC_43FE_0000_0435
                );
                let names: Vec<&str> = p.metrics.iter().map(|m| m.name.as_str()).collect();
                assert!(
                    names.contains(&"io_read_l3_miss") && names.contains(&"io_full_write_l3_miss"),
                    "{names:?}"
                );
            }
        }
        // The CHA clock once per socket, other CHA events on both CHAs of both sockets.
        assert_eq!(
            p.counters
                .iter()
                .filter(|c| c.event == "UNC_CHA_CLOCKTICKS")
                .count(),
            2,
            "{cpu}"
        );
        let hits = p
            .counters
            .iter()
            .filter(|c| c.event == "UNC_CHA_TOR_INSERTS.IO_HIT")
            .count();
        assert_eq!(hits, if cpu == "SKX" { 0 } else { 4 }, "{cpu}");
    }
}

#[test]
fn no_uncore_pmus_or_a_bad_file_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let places = Places {
        pmus: dir.path().join("none"),
        sys: dir.path().into(),
    };
    assert_eq!(
        plan(&places, "{}", None).unwrap_err(),
        "no uncore PMUs (a virtual machine exposes none)"
    );
    let places = tree(dir.path(), ICX);
    assert!(plan(&places, "not json", None)
        .unwrap_err()
        .contains("not perfmon JSON"));
}

#[test]
fn format_fields_and_bytes_per_count() {
    assert_eq!(place("config:36-43", 0x05), Some(0x05 << 36));
    assert_eq!(
        place("config:8-15,32-57", 0xC8F3FD04),
        Some(0x04 << 8 | 0xC8F3FD << 32)
    );
    assert_eq!(
        place("config:8-15", 0x104),
        None,
        "a value wider than its field is refused"
    );
    assert_eq!(place("config1:0-7", 1), None);
    let e = |d: &str| crate::encode::Event {
        event_name: "X".into(),
        event_code: "0".into(),
        umask: "0".into(),
        umask_ext: None,
        port_mask: None,
        fc_mask: None,
        brief_description: d.into(),
        unit: "IIO".into(),
        public_description: String::new(),
        filter: None,
        filter_value: None,
    };
    assert_eq!(
        bytes_per_count(&e(
            "Four byte data request of the CPU : Card writing to DRAM"
        )),
        Some(4.0)
    );
    assert_eq!(
        bytes_per_count(&e("Read request for 4 bytes made by IIO Part0 to Memory")),
        Some(4.0)
    );
    assert_eq!(bytes_per_count(&e("Clockticks of the IIO")), None);
}

#[test]
fn each_stack_maps_to_its_root_bus_and_the_devices_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let places = tree(dir.path(), ICX);
    crate::kernel_tests::nic(dir.path());
    assert_eq!(
        stack_bus(&places.pmus, "uncore_iio_0", 1).as_deref(),
        Some("0000:85")
    );
    assert_eq!(stack_bus(&places.pmus, "uncore_iio_0", 2), None);
    let (events, _) = files("ICX", "icelakex");
    let p = plan(&places, &events, None).unwrap();
    let s1 = p
        .series
        .iter()
        .find(|s| s.scope == Scope::Stack && s.socket == Some(1))
        .unwrap();
    assert_eq!(
        (s1.pci.as_deref(), s1.block.as_deref()),
        (Some("0000:85"), Some("pci0000:85"))
    );
    assert_eq!(s1.label, "eth1 (0000:86:00.0)");
    let s0 = p
        .series
        .iter()
        .find(|s| s.scope == Scope::Stack && s.socket == Some(0))
        .unwrap();
    assert_eq!(s0.label, "no devices");
}
