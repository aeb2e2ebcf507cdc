//! Event choice on fake sysfs trees (Skylake-SP, Sapphire Rapids, hybrid, AMD IBS, a VM
//! without a PMU, malformed trees) and on this machine's real sysfs.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use kairos_mem_source::choice::{Sampling, DEVICES};
use kairos_mem_source::{choose, tma, CpuId, Options, RefusalKind, Source, Vendor};
use kairos_perf_data::*;

const INTEL_FORMATS: &[(&str, &str)] = &[
    ("event", "config:0-7"),
    ("umask", "config:8-15"),
    ("edge", "config:18"),
    ("any", "config:21"),
    ("inv", "config:23"),
    ("cmask", "config:24-31"),
    ("ldlat", "config1:0-15"),
    ("offcore_rsp", "config1:0-63"),
    ("frontend", "config1:0-23"),
];

fn pmu(root: &Path, name: &str, type_: u32, formats: &[(&str, &str)], events: &[(&str, &str)]) {
    let d = root.join(name);
    std::fs::create_dir_all(d.join("format")).unwrap();
    std::fs::create_dir_all(d.join("events")).unwrap();
    std::fs::write(d.join("type"), format!("{type_}\n")).unwrap();
    for (f, v) in formats {
        std::fs::write(d.join("format").join(f), format!("{v}\n")).unwrap();
    }
    for (e, v) in events {
        std::fs::write(d.join("events").join(e), format!("{v}\n")).unwrap();
    }
}

fn vm(root: &Path) {
    for n in ["breakpoint", "msr", "software", "tracepoint", "uprobe"] {
        pmu(root, n, 1, &[], &[]);
    }
}

fn intel(model: u32) -> CpuId {
    CpuId {
        vendor: Vendor::Intel,
        family: 6,
        model,
        stepping: 4,
    }
}

const AMD_ZEN4: CpuId = CpuId {
    vendor: Vendor::Amd,
    family: 25,
    model: 17,
    stepping: 1,
};
const SKX_EVENTS: &[(&str, &str)] = &[
    ("mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
    ("mem-stores", "event=0xd0,umask=0x82"),
];

#[test]
fn skylake_sp_from_sysfs() {
    let t = tempfile::tempdir().unwrap();
    pmu(t.path(), "cpu", 4, INTEL_FORMATS, SKX_EVENTS);
    let p = choose(t.path(), Some(&intel(0x55)), &Options::default()).unwrap();
    assert_eq!(
        (p.source, p.loads.len(), p.stores.len()),
        (Source::IntelPebs, 1, 1)
    );
    let l = &p.loads[0].event;
    assert!(p.loads[0].leader.is_none());
    assert_eq!(
        (l.type_, l.config, l.config1, l.precise_ip, l.name.as_str()),
        (4, 0x1cd, 30, 3, "cpu/mem-loads,ldlat=30/P")
    );
    let want = PERF_SAMPLE_ADDR
        | PERF_SAMPLE_DATA_SRC
        | PERF_SAMPLE_WEIGHT_STRUCT
        | PERF_SAMPLE_PHYS_ADDR
        | PERF_SAMPLE_CPU
        | PERF_SAMPLE_CALLCHAIN;
    assert_eq!(l.sample_type & want, want);
    assert_eq!(l.sampling, Sampling::Frequency(4000));
    assert_eq!(
        (p.stores[0].event.config, p.stores[0].event.config1),
        (0x82d0, 0)
    );
    // The ldlat knob, and one too wide for config1:0-15.
    let o = Options {
        ldlat: 64,
        phys_addr: false,
        callchain: false,
        ..Options::default()
    };
    let p = choose(t.path(), Some(&intel(0x55)), &o).unwrap();
    assert_eq!(p.loads[0].event.config1, 64);
    assert_eq!(
        p.loads[0].event.sample_type & (PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CALLCHAIN),
        0
    );
    let e = choose(
        t.path(),
        Some(&intel(0x55)),
        &Options {
            ldlat: 70_000,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind, RefusalKind::BadOption, "{e}");
}

#[test]
fn sapphire_rapids_needs_the_aux_leader() {
    let t = tempfile::tempdir().unwrap();
    let ev = [
        ("mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
        ("mem-stores", "event=0xcd,umask=0x2"),
        ("mem-loads-aux", "event=0x03,umask=0x82"),
    ];
    pmu(t.path(), "cpu", 4, INTEL_FORMATS, &ev);
    let p = choose(t.path(), Some(&intel(0x8f)), &Options::default()).unwrap();
    let g = &p.loads[0];
    assert_eq!(
        g.leader.as_ref().map(|l| (l.config, l.name.as_str())),
        Some((0x8203, "cpu/mem-loads-aux/"))
    );
    assert_eq!(
        (g.event.config, g.event.config1, p.stores[0].event.config),
        (0x1cd, 30, 0x2cd)
    );
    // The same CPU on a kernel without the sysfs aliases: the model table.
    let t = tempfile::tempdir().unwrap();
    pmu(t.path(), "cpu", 4, INTEL_FORMATS, &[]);
    let p = choose(t.path(), Some(&intel(0x8f)), &Options::default()).unwrap();
    assert_eq!(p.loads[0].leader.as_ref().map(|l| l.config), Some(0x8203));
    assert_eq!(p.stores[0].event.config, 0x2cd);
    assert!(p.notes[0].contains("SapphireRapids"), "{:?}", p.notes);
}

#[test]
fn hybrid_and_model_tables() {
    let t = tempfile::tempdir().unwrap();
    pmu(
        t.path(),
        "cpu_core",
        8,
        INTEL_FORMATS,
        &[
            ("mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("mem-stores", "event=0xcd,umask=0x2"),
            ("mem-loads-aux", "event=0x03,umask=0x82"),
        ],
    );
    pmu(
        t.path(),
        "cpu_atom",
        10,
        INTEL_FORMATS,
        &[
            ("mem-loads", "event=0xd0,umask=0x5,ldlat=3"),
            ("mem-stores", "event=0xd0,umask=0x6"),
        ],
    );
    let p = choose(t.path(), Some(&intel(0x97)), &Options::default()).unwrap();
    let types: Vec<(u32, bool)> = p
        .loads
        .iter()
        .map(|g| (g.event.type_, g.leader.is_some()))
        .collect();
    assert_eq!(types, vec![(8, true), (10, false)]);
    assert_eq!(p.loads[1].event.config, 0x5d0);
    // Without `cpus` files every CPU; with them (Alder Lake: P-cores 0-15, E-cores 16-23)
    // each group only on its own kind of core, where the kernel accepts it.
    assert!(p.loads.iter().chain(&p.stores).all(|g| g.cpus.is_none()));
    std::fs::write(t.path().join("cpu_core/cpus"), "0-15\n").unwrap();
    std::fs::write(t.path().join("cpu_atom/cpus"), "16-23\n").unwrap();
    let p = choose(t.path(), Some(&intel(0x97)), &Options::default()).unwrap();
    let cpus: Vec<Option<Vec<u32>>> = p
        .loads
        .iter()
        .chain(&p.stores)
        .map(|g| g.cpus.clone())
        .collect();
    let (core, atom) = (
        Some((0..16).collect::<Vec<u32>>()),
        Some((16..24).collect::<Vec<u32>>()),
    );
    assert_eq!(cpus, vec![core.clone(), atom.clone(), core, atom]);
    // Skylake-SP and Nehalem without sysfs aliases; an unknown model.
    for (model, loads, stores) in [(0x55, 0x1cd, Some(0x82d0)), (0x1a, 0x100b, None)] {
        let t = tempfile::tempdir().unwrap();
        pmu(t.path(), "cpu", 4, INTEL_FORMATS, &[]);
        let p = choose(t.path(), Some(&intel(model)), &Options::default()).unwrap();
        assert_eq!(
            (p.loads[0].event.config, p.loads[0].event.config1),
            (loads, 30)
        );
        assert_eq!(p.stores.first().map(|g| g.event.config), stores);
    }
    let t = tempfile::tempdir().unwrap();
    pmu(t.path(), "cpu", 4, INTEL_FORMATS, &[]);
    assert_eq!(
        choose(t.path(), Some(&intel(0x01)), &Options::default())
            .unwrap_err()
            .kind,
        RefusalKind::UnknownModel
    );
}

#[test]
fn amd_ibs_op() {
    let t = tempfile::tempdir().unwrap();
    pmu(
        t.path(),
        "ibs_op",
        11,
        &[("cnt_ctl", "config:19"), ("l3missonly", "config:16")],
        &[],
    );
    let o = Options {
        sampling: Sampling::Period(1000),
        ..Options::default()
    };
    let p = choose(t.path(), Some(&AMD_ZEN4), &o).unwrap();
    assert_eq!(p.source, Source::AmdIbs);
    let e = &p.loads[0].event;
    assert_eq!(
        (e.type_, e.config, e.config1, e.precise_ip, e.no_exclude),
        (11, 0, 0, 0, true)
    );
    assert_eq!(e.sampling, Sampling::Period(1008));
    assert!(
        p.notes.iter().any(|n| n.contains("no load-latency filter")),
        "{:?}",
        p.notes
    );
    // An IBS with a load-latency field takes the knob; no CPU given: found by sysfs.
    let t = tempfile::tempdir().unwrap();
    pmu(
        t.path(),
        "ibs_op",
        11,
        &[("cnt_ctl", "config:19"), ("ldlat", "config1:0-11")],
        &[],
    );
    let p = choose(
        t.path(),
        None,
        &Options {
            ldlat: 256,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(p.loads[0].event.config1, 256);
}

#[test]
fn refusals_without_a_pmu_and_on_broken_trees() {
    let t = tempfile::tempdir().unwrap();
    vm(t.path());
    let e = choose(t.path(), Some(&intel(0x55)), &Options::default()).unwrap_err();
    assert_eq!(e.kind, RefusalKind::NoCorePmu);
    assert!(
        e.reason
            .contains("breakpoint msr software tracepoint uprobe"),
        "{e}"
    );
    assert_eq!(
        choose(t.path(), Some(&AMD_ZEN4), &Options::default())
            .unwrap_err()
            .kind,
        RefusalKind::NoIbs
    );
    let other = CpuId {
        vendor: Vendor::Other,
        family: 0,
        model: 0,
        stepping: 0,
    };
    assert_eq!(
        choose(t.path(), Some(&other), &Options::default())
            .unwrap_err()
            .kind,
        RefusalKind::UnsupportedVendor
    );
    assert_eq!(
        tma::availability(t.path(), Some(&intel(0x55)))
            .unwrap_err()
            .kind,
        RefusalKind::NoCorePmu
    );
    // Malformed: no type number, a garbage format, an event term without a format.
    for (formats, events, remove_type) in [
        (INTEL_FORMATS, SKX_EVENTS, true),
        (&[("ldlat", "bits:1")][..], SKX_EVENTS, false),
        (&[("event", "config:0-7")][..], SKX_EVENTS, false),
    ] {
        let t = tempfile::tempdir().unwrap();
        pmu(t.path(), "cpu", 4, formats, events);
        if remove_type {
            std::fs::remove_file(t.path().join("cpu/type")).unwrap();
        }
        let e = choose(t.path(), Some(&intel(0x55)), &Options::default()).unwrap_err();
        assert_eq!(e.kind, RefusalKind::Sysfs, "{e}");
    }
}

/// This machine: the answer must follow from what its sysfs shows (our KVM guests have
/// no core PMU and no IBS, so both say why).
#[test]
fn this_machine() {
    let devices = Path::new(DEVICES);
    let cpu = CpuId::from_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap());
    let got = choose(devices, cpu.as_ref(), &Options::default());
    let has = |n: &str| devices.join(n).join("type").is_file();
    eprintln!("this machine: {got:?}");
    match cpu.map(|c| c.vendor) {
        Some(Vendor::Amd) if !has("ibs_op") => {
            assert_eq!(got.unwrap_err().kind, RefusalKind::NoIbs)
        }
        Some(Vendor::Intel) if !has("cpu") && !has("cpu_core") => {
            assert_eq!(got.unwrap_err().kind, RefusalKind::NoCorePmu)
        }
        Some(Vendor::Amd | Vendor::Intel) => assert!(got.is_ok(), "{got:?}"),
        _ => assert!(got.is_err()),
    }
    let tma = tma::availability(devices, cpu.as_ref());
    assert_eq!(
        tma.is_ok(),
        cpu.is_some_and(|c| c.vendor == Vendor::Intel) && (has("cpu") || has("cpu_core")),
        "{tma:?}"
    );
    eprintln!("TMA here: {tma:?}");
}
