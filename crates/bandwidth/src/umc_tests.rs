//! The memory-controller source on a hand-built sysfs tree: two `amd_umc` PMUs on two
//! sockets, their format files as the kernel writes them (`event` = `config:0-7`,
//! `rdwrmask` = `config:8-9`, arch/x86/events/amd/uncore.c), a small event file in the
//! kernel's `memory-controller.json` form, and rates from count deltas worked out by hand.

use std::path::Path;

use super::*;
use crate::record::{capability, open_with_umc, Places};

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    }
    std::fs::write(p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
}

/// `devices/amd_umc_{0,1}` (types far from any real PMU, so opening them fails here),
/// counted on CPU 0 (socket 0) and CPU 8 (socket 1); `rdwrmask` where the kernel puts it
/// unless the test moves it.
fn tree(root: &Path, rdwrmask: &str) -> Places {
    for (n, cpu) in [(0, 0), (1, 8)] {
        let d = root.join(format!("devices/amd_umc_{n}"));
        write(&d.join("type"), &format!("{}\n", 0x7fff_0000 + n));
        write(&d.join("cpumask"), &format!("{cpu}\n"));
        write(&d.join("format/event"), "config:0-7\n");
        write(&d.join("format/rdwrmask"), &format!("{rdwrmask}\n"));
        write(
            &root.join(format!("cpu/cpu{cpu}/topology/physical_package_id")),
            &format!("{}\n", cpu / 8),
        );
    }
    Places {
        pmus: root.join("devices"),
        cpus: root.join("cpu"),
        resctrl: root.join("no-resctrl"),
    }
}

/// Three events of the kernel's file, in its form (the codes of amdzen4 and amdzen5).
const JSON: &str = r#"[
  {"EventName": "umc_mem_clk", "EventCode": "0x00", "PerPkg": "1", "Unit": "UMCPMC"},
  {"EventName": "umc_cas_cmd.rd", "EventCode": "0x0a", "RdWrMask": "0x1", "PerPkg": "1", "Unit": "UMCPMC"},
  {"EventName": "umc_cas_cmd.wr", "EventCode": "0x0a", "RdWrMask": "0x2", "PerPkg": "1", "Unit": "UMCPMC"}
]"#;

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn discovery_and_sockets_from_the_cpumask_cpu() {
    let dir = tempdir();
    let p = tree(dir.path(), "config:8-9");
    // Another PMU and a name that only looks like one are not memory controllers.
    write(&dir.path().join("devices/amd_df/type"), "11\n");
    write(&dir.path().join("devices/amd_umc_x/type"), "12\n");
    let pmus = discover(&p.pmus);
    let names: Vec<(&str, u32, &[u32])> = pmus
        .iter()
        .map(|u| (u.pmu.name.as_str(), u.pmu.type_, u.pmu.cpus.as_slice()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("amd_umc_0", 0x7fff_0000, &[0][..]),
            ("amd_umc_1", 0x7fff_0001, &[8][..])
        ]
    );
    assert_eq!(
        pmus[1].format.get("rdwrmask").map(String::as_str),
        Some("config:8-9")
    );
    let sockets: Vec<u32> = pmus
        .iter()
        .map(|u| crate::record::socket_of(&p.cpus, u.pmu.cpus[0]))
        .collect();
    assert_eq!(sockets, vec![0, 1]);
    assert!(discover(&dir.path().join("none")).is_empty());
}

#[test]
fn reads_and_writes_planned_from_the_file_and_the_format() {
    let dir = tempdir();
    let pmus = discover(&tree(dir.path(), "config:8-9").pmus);
    let plan = plan_umc(&pmus, JSON).unwrap_or_else(|e| panic!("{e}"));
    let got: Vec<(&str, &str, u64, Flow)> = plan
        .iter()
        .map(|c| (c.pmu.as_str(), c.event.as_str(), c.config, c.flow))
        .collect();
    // Event 0x0a in bits 0-7; RdWrMask 1 (reads) or 2 (writes) in bits 8-9.
    assert_eq!(
        got,
        vec![
            ("amd_umc_0", "umc_cas_cmd.rd", 0x10a, Flow::DramRead),
            ("amd_umc_1", "umc_cas_cmd.rd", 0x10a, Flow::DramRead),
            ("amd_umc_0", "umc_cas_cmd.wr", 0x20a, Flow::DramWrite),
            ("amd_umc_1", "umc_cas_cmd.wr", 0x20a, Flow::DramWrite),
        ]
    );
    assert!(plan.iter().all(|c| c.bytes_per_count == 64.0));
    // The layout is the kernel's, read from sysfs: a field elsewhere goes elsewhere.
    let moved = tempdir();
    let pmus2 = discover(&tree(moved.path(), "config:16-17").pmus);
    let plan2 = plan_umc(&pmus2, JSON).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan2[0].config, 0x1_000a);
    // A field split in two ranges takes its low bits first.
    let split = tempdir();
    let pmus3 = discover(&tree(split.path(), "config:8,20").pmus);
    let plan3 = plan_umc(&pmus3, JSON).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((plan3[0].config, plan3[2].config), (0x10a, 0x10_000a));
}

#[test]
fn what_cannot_be_planned_is_a_sentence() {
    let dir = tempdir();
    let pmus = discover(&tree(dir.path(), "config:8-9").pmus);
    let err = |pmus: &[UmcPmu], json: &str| plan_umc(pmus, json).err().unwrap_or_default();
    assert!(err(&[], JSON).starts_with("no amd_umc PMUs"));
    assert!(err(&pmus, "{").contains("not the kernel's event JSON"));
    let no_wr = r#"[{"EventName": "umc_cas_cmd.rd", "EventCode": "0x0a", "RdWrMask": "0x1", "Unit": "UMCPMC"}]"#;
    assert_eq!(
        err(&pmus, no_wr),
        "the memory-controller file has no umc_cas_cmd.wr"
    );
    // RdWrMask 2 does not fit a one-bit field.
    let narrow = tempdir();
    let pmus1 = discover(&tree(narrow.path(), "config:8").pmus);
    assert_eq!(
        err(&pmus1, JSON),
        "rdwrmask 0x2 does not fit amd_umc_0's `config:8`"
    );
    // A kernel without the rdwrmask field.
    let old = tempdir();
    let _ = tree(old.path(), "config:8-9");
    let gone = old.path().join("devices/amd_umc_0/format/rdwrmask");
    std::fs::remove_file(&gone).unwrap_or_else(|e| panic!("{e}"));
    let pmus2 = discover(&old.path().join("devices"));
    assert!(err(&pmus2, JSON).starts_with("amd_umc_0 has no format/rdwrmask"));
}

#[test]
fn rates_per_socket_and_channel_from_count_deltas() {
    let dir = tempdir();
    let pmus = discover(&tree(dir.path(), "config:8-9").pmus);
    let plan = plan_umc(&pmus, JSON).unwrap_or_else(|e| panic!("{e}"));
    // (counter, socket, CAS count) over half a second: counters 0 and 1 read on umc 0 and
    // 1, counters 2 and 3 write on them.
    let deltas = [
        (0, 0, 1_000_000),
        (1, 1, 3_000_000),
        (2, 0, 250_000),
        (3, 1, 0),
    ];
    let r = crate::counters::rates(&plan, &deltas, 0.5);
    // 1e6 x 64 / 0.5 = 128e6; 3e6 x 64 / 0.5 = 384e6; 250e3 x 64 / 0.5 = 32e6.
    assert_eq!(r.get(&(0, Flow::DramRead)), Some(&128e6));
    assert_eq!(r.get(&(1, Flow::DramRead)), Some(&384e6));
    assert_eq!(r.get(&(0, Flow::DramWrite)), Some(&32e6));
    assert_eq!(r.get(&(1, Flow::DramWrite)), Some(&0.0));
    let ch = crate::counters::channel_rates(&plan, &deltas, 0.5);
    // The channel keeps the PMU's number: amd_umc_1 is channel 1 (on socket 1).
    assert_eq!(ch.get(&(0, 0, Flow::DramRead)), Some(&128e6));
    assert_eq!(ch.get(&(1, 1, Flow::DramRead)), Some(&384e6));
    assert_eq!(ch.get(&(0, 0, Flow::DramWrite)), Some(&32e6));
    assert_eq!(ch.len(), 4);
}

/// The data fabric's file, cut to one DRAM channel and one link (codes of amdzen3).
const DF: &str = r#"[
  {"EventName": "dram_channel_data_controller_0", "EventCode": "0x07", "UMask": "0x38", "Unit": "DFPMC"},
  {"EventName": "remote_outbound_data_controller_0", "EventCode": "0x7c7", "UMask": "0x02", "Unit": "DFPMC"}
]"#;

#[test]
fn memory_controllers_before_the_data_fabric_which_adds_its_links() {
    let dir = tempdir();
    let p = tree(dir.path(), "config:8-9");
    // A type no PMU has here, so that opening it fails.
    write(&dir.path().join("devices/amd_df/type"), "2147418368\n");
    write(&dir.path().join("devices/amd_df/cpumask"), "0,8\n");
    let umc = discover(&p.pmus);
    let df = crate::amd::df_pmu(&p.pmus);
    let both = plan_amd(&umc, Ok(JSON.into()), df.as_ref(), Ok(DF.into()))
        .unwrap_or_else(|e| panic!("{e}"));
    let flows: Vec<(&str, Flow)> = both.iter().map(|c| (c.pmu.as_str(), c.flow)).collect();
    assert_eq!(flows.len(), 5, "{flows:?}");
    assert_eq!(flows[4], ("amd_df", Flow::LinkTx));
    assert!(!flows.contains(&("amd_df", Flow::DramAll)));
    // No memory-controller file: the data fabric alone.
    let no_file = Err("amdzen4/memory-controller.json is not in the perfmon folders".to_string());
    let df_only = plan_amd(&umc, no_file.clone(), df.as_ref(), Ok(DF.into()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(df_only.iter().all(|c| c.pmu == "amd_df"));
    let why = plan_amd(&umc, no_file.clone(), None, Err("no file".into()))
        .err()
        .unwrap_or_default();
    assert_eq!(why, "memory controllers: amdzen4/memory-controller.json is not in the perfmon folders; data fabric: no amd_df PMU");
    // The recorder opens the memory controllers (which fail here: no such PMU type).
    let why = open_with_umc(&p, Ok(DF.into()), Ok(JSON.into()))
        .err()
        .unwrap_or_default();
    assert!(
        why.contains("umc_cas_cmd.rd on amd_umc_0 (CPU 0) was refused"),
        "{why}"
    );
    let why = open_with_umc(&p, Ok(DF.into()), no_file)
        .err()
        .unwrap_or_default();
    assert!(why.contains("on amd_df (CPU 0) was refused"), "{why}");
    let c = capability(&p);
    assert!(
        c.available
            && c.detail
                .starts_with("AMD memory controllers (2 amd_umc PMUs)")
    );
}

#[test]
fn the_event_file_of_each_zen_generation() {
    assert_eq!(zen_dir(0x19, 0x11), Some("amdzen4"));
    assert_eq!(zen_dir(0x19, 0x01), None);
    assert_eq!(zen_dir(0x1a, 0x02), Some("amdzen5"));
    assert_eq!(zen_dir(0x17, 0x31), None);
    let dir = tempdir();
    write(&dir.path().join("amdzen4/memory-controller.json"), JSON);
    let dirs = [dir.path().join("none"), dir.path().to_path_buf()];
    assert_eq!(
        memory_controller_file(0x19, 0x11, &dirs).ok().as_deref(),
        Some(JSON)
    );
    let why = memory_controller_file(0x1a, 0x02, &dirs)
        .err()
        .unwrap_or_default();
    assert!(
        why.starts_with("amdzen5/memory-controller.json (the kernel's AMD event file"),
        "{why}"
    );
    assert!(memory_controller_file(6, 85, &dirs).is_err());
}
