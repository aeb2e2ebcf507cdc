//! The NUMA test machine works: topology, the NIC on node 1, file transfer, kairos inside,
//! and first-touch placement of the triad sample. Each test boots once and runs several
//! commands. Needs the release build (`cargo build --release -p kairos`, which also builds
//! the samples); when the machine cannot be built the tests fail with the reason.

// A failed check panics with the details: that is how a test fails.
#![allow(clippy::panic)]

use kairos_testvm::{Vm, VmError, VmOutput};

fn must(r: Result<VmOutput, VmError>) -> VmOutput {
    match r {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    }
}

/// The value after `key` on the line that starts with `key`.
fn line_after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    s.lines().find_map(|l| l.strip_prefix(key)).map(str::trim)
}

/// Prints the node of the virtio NIC (vendor 0x1af4, class 0x0200xx) from its PCI device,
/// and the same through /sys/class/net (a virtio NIC's `device` is the virtio device, whose
/// parent is the PCI function).
const NIC_NODE: &str = r#"
for d in /sys/bus/pci/devices/*; do
  if [ "$(cat $d/vendor)" = 0x1af4 ] && [ "$(cut -c1-6 $d/class)" = 0x0200 ]; then echo "nic_pci ${d##*/} node $(cat $d/numa_node)"; fi
done
for n in /sys/class/net/*; do
  if [ -e $n/device ]; then echo "nic_net ${n##*/} node $(cat $(readlink -f $n/device)/../numa_node)"; fi
done
"#;

#[test]
fn two_nodes_nic_files_and_kairos_info() {
    let script = format!(
        r#"echo "nodes $(ls -d /sys/devices/system/node/node* | wc -l)"
echo "node0 $(cat /sys/devices/system/node/node0/cpulist)"
echo "node1 $(cat /sys/devices/system/node/node1/cpulist)"
echo "distance0 $(cat /sys/devices/system/node/node0/distance)"
{NIC_NODE}
echo "paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
echo "tracepoint $(cat /sys/kernel/tracing/events/exceptions/page_fault_user/id)"
kairos info > info.txt 2>&1; echo "info_status $?"
echo hello > hello.txt
echo to-stderr >&2
exit 7"#
    );
    let out = must(Vm::new(2).run(&script));
    eprintln!(
        "boot {:.2} s, job {:.2} s, wall {:.2} s ({})",
        out.boot_s, out.job_s, out.wall_s, out.accel
    );
    let s = &out.stdout;
    assert_eq!(out.status, 7, "{out:?}");
    assert_eq!(out.stderr.trim(), "to-stderr", "{out:?}");
    assert_eq!(line_after(s, "nodes "), Some("2"), "{s}");
    assert_eq!(line_after(s, "node0 "), Some("0-1"), "{s}");
    assert_eq!(line_after(s, "node1 "), Some("2-3"), "{s}");
    assert_eq!(line_after(s, "distance0 "), Some("10 21"), "{s}");
    assert!(
        line_after(s, "nic_pci ").is_some_and(|v| v.ends_with("node 1")),
        "{s}"
    );
    assert_eq!(line_after(s, "nic_net "), Some("eth0 node 1"), "{s}");
    assert!(
        line_after(s, "tracepoint ").is_some_and(|v| v.parse::<u32>().is_ok()),
        "no exceptions:page_fault_user\n{s}"
    );
    assert_eq!(line_after(s, "info_status "), Some("0"), "{s}");
    let info = out.file("info.txt").unwrap_or_else(|e| panic!("{e}"));
    assert!(
        info.contains("numa_placement") && info.contains("node1"),
        "kairos info:\n{info}"
    );
    // The Debian kernel has resctrl; the emulated CPU has no RDT, so only the CPU is blamed
    // (the kernel registers resctrl only on CPUs with RDT: its configuration tells).
    let lines: Vec<&str> = info.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("resctrl"))
        .unwrap_or(lines.len());
    // Its line and the indented "why" line under it.
    let resctrl = lines[at.min(lines.len())..]
        .iter()
        .take(2)
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        resctrl.contains("none of the RDT flags")
            && resctrl.contains("kernel built with resctrl")
            && !resctrl.contains("built without"),
        "kairos info:\n{info}"
    );
    assert_eq!(out.file("hello.txt").ok().as_deref(), Some("hello\n"));
    assert!(
        out.boot_s > 0.0 && out.boot_s < 60.0,
        "boot took {} s",
        out.boot_s
    );
}

#[test]
fn four_nodes() {
    let script = format!(
        r#"for n in /sys/devices/system/node/node*; do echo "${{n##*/}} cpus $(cat $n/cpulist) mem_kb $(awk '/MemTotal/ {{print $4}}' $n/meminfo)"; done
{NIC_NODE}"#
    );
    let out = must(Vm::new(4).run(&script));
    assert_eq!(out.status, 0, "{out:?}");
    let s = &out.stdout;
    for n in 0..4 {
        let line =
            line_after(s, &format!("node{n} cpus ")).unwrap_or_else(|| panic!("no node{n}\n{s}"));
        let mut parts = line.split_whitespace();
        assert_eq!(parts.next(), Some(n.to_string().as_str()), "{s}");
        let mem_kb: u64 = parts.nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(
            mem_kb > 400 * 1024,
            "node{n} has {mem_kb} kB of 512 MiB\n{s}"
        );
    }
    assert!(!s.contains("node4"), "{s}");
    assert!(
        line_after(s, "nic_pci ").is_some_and(|v| v.ends_with("node 1")),
        "{s}"
    );
}

/// Per-node page counts of one array from `triad: placement NAME node0 P node1 P absent P`.
fn placement(stdout: &str, array: &str) -> Vec<u64> {
    let line = line_after(stdout, &format!("triad: placement {array} "))
        .unwrap_or_else(|| panic!("no placement of {array}\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .chunks(2)
        .filter(|kv| kv[0].starts_with("node"))
        .map(|kv| kv[1].parse().unwrap_or(u64::MAX))
        .collect()
}

#[test]
fn triad_first_touch_serial_on_one_node_parallel_split() {
    let triad = "triad --size 32M --threads 4 --iterations 2 --report-placement";
    let script = format!("{triad} --init serial && echo ===== && {triad} --init parallel");
    let out = must(Vm::new(2).run(&script));
    assert_eq!(out.status, 0, "{out:?}");
    let (serial, parallel) = out
        .stdout
        .split_once("=====")
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(
        serial.contains("triad: init_tid ") && serial.contains("init_node 0"),
        "{serial}"
    );
    assert!(
        parallel.contains("threads 4") && parallel.contains("nodes 2"),
        "{parallel}"
    );
    // Threads 0-1 on node 0 (CPUs 0, 1), 2-3 on node 1 (CPUs 2, 3).
    assert!(
        parallel.contains("thread 3 tid") && parallel.contains("node 1 cpu 3"),
        "{parallel}"
    );
    let pages = 32 * 1024 * 1024 / 4096;
    for array in ["a", "b", "c"] {
        let s = placement(serial, array);
        assert!(
            s.len() == 2 && s[0] >= pages && s[1] == 0,
            "serial init: {array} {s:?}\n{serial}"
        );
        // Halves, give or take the 2 MiB huge pages (THP is on) at the boundaries.
        let p = placement(parallel, array);
        let total = p.iter().sum::<u64>();
        assert!(total >= pages, "parallel init: {array} {p:?}\n{parallel}");
        for (node, &n) in p.iter().enumerate() {
            assert!(
                n * 10 >= total * 4 && n * 10 <= total * 6,
                "parallel init: node {node} holds {n} of {total} pages of {array}\n{parallel}"
            );
        }
    }
}

#[test]
fn bad_parameters_and_missing_binary_are_typed_errors() {
    assert!(matches!(Vm::new(0).run("true"), Err(VmError::Usage(_))));
    assert!(matches!(Vm::new(9).run("true"), Err(VmError::Usage(_))));
    assert!(matches!(
        Vm::new(3).cpus(4).run("true"),
        Err(VmError::Usage(_))
    ));
    assert!(matches!(
        Vm::new(2).nic_node(2).run("true"),
        Err(VmError::Usage(_))
    ));
    match Vm::new(2).kairos("/nonexistent/kairos").run("true") {
        Err(VmError::Unavailable { reason }) => {
            assert!(reason.contains("/nonexistent/kairos"), "{reason}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[test]
fn guest_crash_and_timeout_are_typed_errors() {
    // A kernel panic: the guest stops without writing a result.
    match Vm::new(2).run("echo c > /proc/sysrq-trigger") {
        Err(VmError::NoResult { console }) => assert!(console.contains("Kernel"), "{console}"),
        other => panic!("expected NoResult, got {other:?}"),
    }
    match Vm::new(2)
        .timeout(std::time::Duration::from_secs(3))
        .run("sleep 100")
    {
        Err(VmError::Timeout { after, .. }) => assert_eq!(after.as_secs(), 3),
        other => panic!("expected Timeout, got {other:?}"),
    }
}
