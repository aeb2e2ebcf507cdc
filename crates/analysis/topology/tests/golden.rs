//! The topology report on the recorded 2-socket machine (`shared/fixtures/topology`,
//! extracted at run time) with measured use laid over it: golden text, CSV and JSON, and
//! the sentences the check must say.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kairos_analysis_topology::{check, render, ThreadUse, Usage, Verdict};
use kairos_platform::{Platform, SystemRoot};
use kairos_report::{assert_golden, Format};

fn fixture_platform(tag: &str) -> Platform {
    let tarball = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../shared/fixtures/topology/hwloc-snb-ep-2s-pci.tar.bz2");
    assert!(
        tarball.is_file(),
        "the topology fixture is missing: {}",
        tarball.display()
    );
    let dir = std::env::temp_dir().join(format!(
        "kairos-topology-report-{tag}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ok = std::process::Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dir)
        .status()
        .expect("tar runs");
    assert!(ok.success(), "tar xjf failed");
    let mut p = Platform::read(&SystemRoot::under(dir.join("32em64t-2n8c+1mic")));
    let _ = std::fs::remove_dir_all(&dir);
    // The extraction path changes per run; the golden files name the capture.
    p.source = "sysfs tree hwloc-snb-ep-2s-pci".into();
    p
}

/// 97 samples on node 0 (CPUs 2 and 5), 3 on node 1; pages 900 on node 0, 100 on node 1.
fn usage_on_node0(p: &Platform, pages: bool) -> Usage {
    let mut u = Usage::default();
    // Three threads: two readers, one on each of CPUs 2 and 5, and the main thread on 9.
    for (cpu, n, tid, name) in [
        (2u32, 60u64, 4242u32, "rx-worker"),
        (5, 37, 4243, "rx-worker"),
        (9, 3, 4241, "main"),
    ] {
        u.samples_by_cpu.insert(cpu, n);
        let node = p.node_of_cpu(cpu).expect("a node");
        *u.samples_by_node.entry(node).or_default() += n;
        let t = u.threads.entry(tid).or_insert_with(|| ThreadUse {
            name: name.into(),
            ..ThreadUse::default()
        });
        *t.samples_by_node.entry(node).or_default() += n;
    }
    if pages {
        u.pages_by_node = Some(BTreeMap::from([(0, 900), (1, 100)]));
    }
    u
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[test]
fn report_golden_text_csv_json() {
    let p = fixture_platform("golden");
    let u = usage_on_node0(&p, true);
    let f = check(&p, &u);
    // The snapshot itself: the page's browser test lays it into a result of this machine.
    assert_golden(
        &golden("platform-snb-ep-2s.json"),
        &(serde_json::to_string_pretty(&p).expect("serialisable") + "\n"),
    );
    for (format, ext) in [
        (Format::Text, "txt"),
        (Format::Csv, "csv"),
        (Format::Json, "json"),
    ] {
        assert_golden(
            &golden(&format!("topology.{ext}")),
            &render::render(&p, &u, &f, &[], format),
        );
    }
}

#[test]
fn threads_on_the_other_node_are_a_mismatch_with_the_fix() {
    let p = fixture_platform("mismatch");
    let f = check(&p, &usage_on_node0(&p, false));
    let ib = f
        .iter()
        .find(|f| f.device.starts_with("ib0/mlx4_0"))
        .expect("ib0 checked");
    assert_eq!(ib.verdict, Verdict::Mismatch);
    assert_eq!(
        ib.sentence,
        "ib0/mlx4_0 (0000:82:00.0) is on node 1; 97% of the samples of the target's threads ran on node 0 (threads mostly off node 1: 4242 rx-worker 100%, 4243 rx-worker 100%): inbound data lands in node 1's L3 and memory and every read of it is remote; pin the threads to node 1's CPUs 8-15 (taskset -c 8-15, or numactl --cpunodebind=1 --membind=1)"
    );
    let eth1 = f
        .iter()
        .find(|f| f.device.starts_with("eth1"))
        .expect("eth1 checked");
    assert_eq!(eth1.verdict, Verdict::Local, "{}", eth1.sentence);
    // The NVMe with numa_node -1 is not guessed.
    let nvme = f
        .iter()
        .find(|f| f.device.starts_with("nvme0n1"))
        .expect("nvme checked");
    assert_eq!((nvme.verdict, nvme.node), (Verdict::Unchecked, None));
    assert!(
        nvme.sentence.contains("-1") && nvme.sentence.contains("cannot be checked"),
        "{}",
        nvme.sentence
    );
    // Virtual interfaces and the display are not checked.
    assert!(!f
        .iter()
        .any(|f| f.device == "lo" || f.device.starts_with("display")));
    let mismatched: Vec<&str> = f
        .iter()
        .filter(|f| f.verdict == Verdict::Mismatch)
        .map(|f| f.device.as_str())
        .collect();
    assert_eq!(
        mismatched,
        [
            "ib0/mlx4_0 (0000:82:00.0)",
            "mic0 (0000:83:00.0)",
            "pmem1",
            "pmem1.1s",
            "pmem1.2",
            "dax1.3",
            "dax1.4"
        ]
    );
    let pmem = f.iter().find(|f| f.device == "pmem1").expect("pmem1");
    assert!(
        pmem.sentence.contains("its media is node 1's memory"),
        "{}",
        pmem.sentence
    );
}

#[test]
fn threads_on_the_device_node_are_local_and_no_samples_is_not_checked() {
    let p = fixture_platform("local");
    let mut u = Usage::default();
    u.samples_by_node.insert(1, 50);
    let f = check(&p, &u);
    assert!(f
        .iter()
        .filter(|f| f.node == Some(1))
        .all(|f| f.verdict == Verdict::Local));
    assert!(f
        .iter()
        .filter(|f| f.node == Some(0))
        .all(|f| f.verdict == Verdict::Mismatch));
    // Memory alone off the device's node is a mismatch too.
    let mut u = Usage::default();
    u.samples_by_node.insert(1, 50);
    u.pages_by_node = Some(BTreeMap::from([(0, 10)]));
    let ib = check(&p, &u)
        .into_iter()
        .find(|f| f.device.starts_with("ib0"))
        .expect("ib0");
    assert!(
        ib.verdict == Verdict::Mismatch
            && ib
                .sentence
                .contains("100% of the target's resident pages are on node 0"),
        "{}",
        ib.sentence
    );
    let f = check(&p, &Usage::default());
    assert!(f.iter().all(|f| f.verdict == Verdict::Unchecked), "{f:#?}");
    // A snapshot without devices (an imported recording) says the devices are unknown.
    let mut none = p.clone();
    none.devices = None;
    let text = render::render(&none, &Usage::default(), &[], &[], Format::Text);
    assert!(text.contains("the devices are unknown"), "{text}");
    assert!(text.contains("not measurable here"), "{text}");
}

/// Traced device use: ib0 judged by the threads that read from it (mostly on node 0),
/// eth1, which the target never used, is "not used" whatever the samples say.
#[test]
fn traced_device_use_judges_each_device_by_its_own_readers() {
    use kairos_session::device_use::{DeviceUse, Flow};
    let p = fixture_platform("traced");
    let flow = |device: &str, tid: u32, comm: &str, cpu: u32, read: u64| Flow {
        device: device.into(),
        pid: 4241,
        tid,
        comm: comm.into(),
        cpu,
        read_bytes: read,
        write_bytes: read / 10,
    };
    let traced = DeviceUse {
        flows: vec![
            flow("net:ib0", 4242, "rx-worker", 2, 1_000_000_000),
            flow("net:ib0", 4241, "main", 9, 30_000_000),
        ],
        ..DeviceUse::default()
    };
    let mut u = usage_on_node0(&p, false);
    u.traffic = Some(kairos_analysis_topology::traffic(&p, &traced));
    let f = check(&p, &u);
    let ib = f
        .iter()
        .find(|f| f.device.starts_with("ib0/mlx4_0"))
        .expect("ib0");
    assert_eq!(ib.verdict, Verdict::Mismatch);
    assert_eq!(
        ib.sentence,
        "ib0/mlx4_0 (0000:82:00.0) is on node 1; the target read 1.03 GB from it and wrote 103.0 MB, 97% of it on node 0's CPUs (thread mostly off node 1: 4242 rx-worker 100%): inbound data lands in node 1's L3 and memory and every read of it is remote; pin the threads to node 1's CPUs 8-15 (taskset -c 8-15, or numactl --cpunodebind=1 --membind=1)"
    );
    let eth1 = f
        .iter()
        .find(|f| f.device.starts_with("eth1"))
        .expect("eth1");
    assert_eq!(eth1.verdict, Verdict::Unused, "{}", eth1.sentence);
    // Only ib0 is a mismatch now: the samples alone made mic0 and pmem1 ones.
    let mismatched: Vec<&str> = f
        .iter()
        .filter(|f| f.verdict == Verdict::Mismatch)
        .map(|f| f.device.as_str())
        .collect();
    assert_eq!(mismatched, ["ib0/mlx4_0 (0000:82:00.0)"]);
    let text = render::render(&p, &u, &f, &[], Format::Text);
    assert!(
        text.contains("Traffic off node") && text.contains("was traced"),
        "{text}"
    );
}
