//! Capability detection on recorded system trees (tests/data/*), with recorded
//! perf_event_open answers.

use kairos_platform::{
    detect_with, names, Capabilities, PerfProbe, ProbeOutcome, Prober, SystemRoot,
};
use std::collections::HashMap;
use std::path::PathBuf;

struct Recorded {
    answers: HashMap<PerfProbe, ProbeOutcome>,
    default: ProbeOutcome,
    glibc: Option<String>,
}

impl Prober for Recorded {
    fn perf_open(&self, probe: PerfProbe) -> ProbeOutcome {
        let key = match probe {
            PerfProbe::Tracepoint(_) => PerfProbe::Tracepoint(0),
            p => p,
        };
        self.answers
            .get(&key)
            .cloned()
            .unwrap_or_else(|| self.default.clone())
    }
    fn glibc_version(&self) -> Option<String> {
        self.glibc.clone()
    }
}

fn root(name: &str) -> SystemRoot {
    SystemRoot::under(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
}

fn detail<'a>(c: &'a Capabilities, name: &str) -> &'a str {
    c.get(name)
        .map(|c| c.detail.as_str())
        .unwrap_or("<missing>")
}

fn reason<'a>(c: &'a Capabilities, name: &str) -> &'a str {
    c.get(name).and_then(|c| c.reason.as_deref()).unwrap_or("")
}

const ENOENT: i32 = 2;
const EACCES: i32 = 13;

#[test]
fn kvm_guest_without_pmu() {
    let prober = Recorded {
        answers: HashMap::from([(PerfProbe::CpuClock, ProbeOutcome::Opened)]),
        default: ProbeOutcome::Failed { errno: ENOENT },
        glibc: Some("2.36".into()),
    };
    let c = detect_with(&root("kvm_guest"), &prober);
    let text = c.render_text();
    assert!(c.is_available(names::CPU), "{text}");
    assert!(c.cpu.is_intel() && c.cpu.is_virtual());
    assert_eq!(c.cpu.logical_cpus, 2);
    assert!(!c.is_available(names::HARDWARE_PMU));
    assert!(reason(&c, names::HARDWARE_PMU).contains("ENOENT"), "{text}");
    assert!(
        reason(&c, names::HARDWARE_PMU).contains("virtual machine"),
        "{text}"
    );
    assert!(c.is_available(names::CPU_CLOCK));
    for n in [
        names::LBR,
        names::LBR_CYCLES,
        names::PEBS,
        names::IBS,
        names::UNCORE,
        names::RESCTRL,
    ] {
        assert!(!c.is_available(n), "{n} should be missing\n{text}");
        assert!(!reason(&c, n).is_empty(), "{n} needs a reason\n{text}");
    }
    assert!(c.lbr_depth.is_none());
    assert!(
        reason(&c, names::TRACEPOINTS).contains("not mounted"),
        "{text}"
    );
    assert!(c.is_available(names::UPROBES));
    assert!(c.is_available(names::EBPF_BTF));
    assert!(c.is_available(names::HUGETLBFS));
    assert!(!c.is_available(names::HUGEPAGES_2M));
    assert!(detail(&c, names::THP).contains("[madvise]"));
    assert_eq!(c.perf_event_paranoid, Some(2));
    assert_eq!(c.perf_event_max_sample_rate, Some(100_000));
    assert!(c.privileges.is_root());
    assert!(detail(&c, names::GLIBC).contains("2.36"));
}

#[test]
fn intel_skylake_server_unprivileged() {
    let prober = Recorded {
        answers: HashMap::from([(
            PerfProbe::Tracepoint(0),
            ProbeOutcome::Failed { errno: EACCES },
        )]),
        default: ProbeOutcome::Opened,
        glibc: Some("2.28".into()),
    };
    let c = detect_with(&root("intel_skylake_sp"), &prober);
    let text = c.render_text();
    assert_eq!(c.cpu.family, Some(6));
    assert_eq!(c.cpu.model, Some(85));
    assert!(detail(&c, names::CPU).contains("Gold 6140"));
    assert!(detail(&c, names::CPU).contains("skylake"), "{text}");
    assert!(c.is_available(names::HARDWARE_PMU));
    assert!(c.is_available(names::LBR), "{text}");
    assert_eq!(c.lbr_depth, Some(32));
    assert!(detail(&c, names::LBR).contains("32 entries"), "{text}");
    assert!(c.is_available(names::LBR_CYCLES), "{text}");
    assert!(
        detail(&c, names::LBR_CYCLES).contains("pmu_name = skylake"),
        "{text}"
    );
    assert!(c.is_available(names::PEBS), "{text}");
    assert!(!c.is_available(names::IBS));
    assert!(c.is_available(names::UNCORE));
    assert!(detail(&c, names::UNCORE).contains("uncore_imc_0"), "{text}");
    assert!(
        detail(&c, names::UNCORE).starts_with("14 uncore PMUs"),
        "{text}"
    );
    assert!(!c.is_available(names::TRACEPOINTS), "{text}");
    assert!(reason(&c, names::TRACEPOINTS).contains("EACCES"), "{text}");
    assert!(detail(&c, names::TRACEPOINTS).contains("id 123"), "{text}");
    assert!(c.is_available(names::RESCTRL));
    assert!(detail(&c, names::RESCTRL).contains("L3_MON"), "{text}");
    assert!(
        detail(&c, names::HUGETLBFS).contains("/dev/hugepages (pagesize 2M)"),
        "{text}"
    );
    assert!(c.is_available(names::HUGEPAGES_2M));
    assert!(!c.is_available(names::HUGEPAGES_1G));
    // unprivileged, paranoid 2: usable, with limits
    let p = c.get(names::PERF_EVENT_PARANOID).cloned();
    assert!(
        p.as_ref()
            .is_some_and(|p| p.available && p.reason.is_some()),
        "{text}"
    );
    assert!(!c.is_available(names::KPTR_RESTRICT), "{text}");
    assert!(
        detail(&c, names::KPTR_RESTRICT).contains("zeroed"),
        "{text}"
    );
    assert!(reason(&c, names::GLIBC).contains("2.35"), "{text}");
}

#[test]
fn amd_zen4_as_root() {
    let prober = Recorded {
        answers: HashMap::new(),
        default: ProbeOutcome::Opened,
        glibc: Some("2.39".into()),
    };
    let c = detect_with(&root("amd_zen4"), &prober);
    let text = c.render_text();
    assert!(c.cpu.is_amd());
    assert_eq!(c.cpu.family, Some(25));
    assert!(c.is_available(names::LBR), "{text}");
    assert_eq!(c.lbr_depth, Some(16));
    assert!(detail(&c, names::LBR).contains("amd_lbr_v2"), "{text}");
    assert!(!c.is_available(names::LBR_CYCLES));
    assert!(
        detail(&c, names::LBR_CYCLES).contains("no cycle counts"),
        "{text}"
    );
    assert!(!c.is_available(names::PEBS));
    assert!(reason(&c, names::PEBS).contains("IBS"), "{text}");
    assert!(c.is_available(names::IBS), "{text}");
    assert!(c.is_available(names::UNCORE));
    assert!(detail(&c, names::UNCORE).contains("amd_umc_0"), "{text}");
    assert!(c.is_available(names::TRACEPOINTS), "{text}");
    assert!(
        detail(&c, names::TRACEPOINTS).contains("debug/tracing"),
        "{text}"
    );
    assert!(c.is_available(names::RESCTRL), "{text}");
    assert!(reason(&c, names::RESCTRL).contains("not mounted"), "{text}");
    assert!(!c.is_available(names::EBPF_BTF) || detail(&c, names::EBPF_BTF).contains("vmlinux"));
    assert!(c.is_available(names::HUGEPAGES_1G));
    assert!(!c.is_available(names::HUGEPAGES_2M));
    assert!(detail(&c, names::THP).contains("[always]"));
    assert!(
        detail(&c, names::PERF_EVENT_PARANOID).starts_with("-1"),
        "{text}"
    );
    assert!(c.is_available(names::KPTR_RESTRICT));
}

#[test]
fn lbr_without_call_return_filter_is_reported() {
    // Zen 3 BRS style: branch stacks only without a type filter.
    let prober = Recorded {
        answers: HashMap::from([(
            PerfProbe::BranchStackCallReturn,
            ProbeOutcome::Failed { errno: 95 },
        )]),
        default: ProbeOutcome::Opened,
        glibc: None,
    };
    let c = detect_with(&root("amd_zen4"), &prober);
    assert!(c.is_available(names::LBR));
    assert!(
        reason(&c, names::LBR).contains("EOPNOTSUPP"),
        "{}",
        c.render_text()
    );
    assert!(!c.is_available(names::GLIBC));
}

#[test]
fn json_and_text_output() {
    let prober = Recorded {
        answers: HashMap::new(),
        default: ProbeOutcome::Failed { errno: ENOENT },
        glibc: Some("2.36".into()),
    };
    let c = detect_with(&root("kvm_guest"), &prober);
    let v: serde_json::Value = serde_json::from_str(&c.to_json()).expect("valid JSON");
    let items = v["items"].as_array().expect("items array");
    assert_eq!(items.len(), c.items.len());
    assert!(items
        .iter()
        .all(|i| i["name"].is_string() && i["available"].is_boolean()));
    let back: Capabilities = serde_json::from_value(v).expect("round trip");
    assert_eq!(back, c);
    let text = c.render_text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("capability"));
    // the status column starts at the same place on every capability line
    let col = lines[0].find("status").expect("status header");
    for l in lines.iter().skip(2).filter(|l| !l.starts_with(' ')) {
        let s = &l[col..];
        assert!(s.starts_with("yes") || s.starts_with("no "), "{l}");
    }
    // every item in the table, in order
    for item in &c.items {
        assert!(text.contains(&item.name));
    }
}

#[test]
fn live_detection_never_panics() {
    let c = kairos_platform::detect();
    assert!(!c.items.is_empty());
    assert!(c.get(names::CPU_CLOCK).is_some());
    assert!(!c.render_text().is_empty());
}

/// The NUMA nodes of a real 2-socket machine (hwloc's capture of a Sandy Bridge-EP, in
/// `fixtures/topology`), against the facts its README lists.
#[test]
fn two_socket_numa_topology() {
    let tarball = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/topology/hwloc-snb-ep-2s-pci.tar.bz2");
    assert!(
        tarball.is_file(),
        "the topology fixture is missing: {}",
        tarball.display()
    );
    let dir = std::env::temp_dir().join(format!("kairos-topology-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ok = std::process::Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dir)
        .status()
        .expect("tar runs");
    assert!(ok.success(), "tar xjf {} failed", tarball.display());
    let t = kairos_platform::numa::Topology::read(&dir.join("32em64t-2n8c+1mic/sys"));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(t.nodes.len(), 2, "{t:?}");
    assert_eq!(t.nodes[0].cpus, (0..8).collect::<Vec<u32>>());
    assert_eq!(t.nodes[1].cpus, (8..16).collect::<Vec<u32>>());
    assert_eq!(t.nodes[0].distances, vec![10, 21]);
    assert_eq!(t.nodes[1].distances, vec![21, 10]);
    assert_eq!(t.nodes[0].mem_total_kb, Some(16_747_124));
    assert_eq!(t.nodes[1].mem_total_kb, Some(16_777_216));
    assert_eq!(t.node_of_cpu(9), Some(1));
    assert_eq!(t.describe(), "node0: CPUs 0-7, node1: CPUs 8-15");
}

#[test]
fn numa_placement_says_what_it_needs() {
    struct Refused(i32);
    impl Prober for Refused {
        fn perf_open(&self, _: PerfProbe) -> ProbeOutcome {
            ProbeOutcome::Opened
        }
        fn glibc_version(&self) -> Option<String> {
            None
        }
        fn move_pages_query(&self) -> ProbeOutcome {
            ProbeOutcome::Failed { errno: self.0 }
        }
    }
    const ENOSYS: i32 = 38;
    let c = detect_with(&root("kvm_guest"), &Refused(ENOSYS));
    assert!(!c.is_available(names::NUMA_PLACEMENT));
    assert!(
        reason(&c, names::NUMA_PLACEMENT).contains("ENOSYS"),
        "{}",
        c.render_text()
    );
    assert!(
        reason(&c, names::NUMA_PLACEMENT).contains("ptrace read access"),
        "{}",
        c.render_text()
    );
    // Recorded answers that say nothing about move_pages: not tried, and why.
    let prober = Recorded {
        answers: HashMap::new(),
        default: ProbeOutcome::Opened,
        glibc: None,
    };
    let c = detect_with(&root("kvm_guest"), &prober);
    assert!(
        reason(&c, names::NUMA_PLACEMENT).contains("not tried"),
        "{}",
        c.render_text()
    );
}
