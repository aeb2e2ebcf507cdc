//! NUMA of an imported perf.data: the recording machine's nodes from the header
//! (NUMA_TOPOLOGY) and the sampled pages' nodes from their physical addresses and the
//! header's memory layout (MEM_TOPOLOGY). A real recording made here by
//! `perf record --phys-data`; perf itself is the oracle (`perf script -F addr,phys_addr`,
//! `perf report --header-only -I`).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::json_report::json_report;
use common::{kairos_in, sample, tempdir};

fn perf(args: &[&str], dir: &std::path::Path) -> String {
    let out = Command::new("perf")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sampled_physical_addresses_place_pages_on_the_headers_nodes() {
    let t = tempdir();
    let prog = sample("false_sharing");
    perf(
        &[
            "record",
            "-q",
            "-o",
            "pf.data",
            "-e",
            "page-faults",
            "-c",
            "1",
            "-d",
            "--phys-data",
            "--",
            prog.to_str().unwrap(),
            "1",
            "1000",
        ],
        t.path(),
    );
    // The oracle: the distinct virtual pages of the samples that have a physical address.
    let script = perf(
        &["script", "-i", "pf.data", "-F", "addr,phys_addr"],
        t.path(),
    );
    let mut pages = BTreeSet::new();
    let mut with_phys = 0;
    for l in script.lines() {
        let w: Vec<u64> = l
            .split_whitespace()
            .filter_map(|x| u64::from_str_radix(x, 16).ok())
            .collect();
        if let [addr, phys] = w[..] {
            if phys != 0 {
                with_phys += 1;
                pages.insert(addr & !4095);
            }
        }
    }
    assert!(
        with_phys > 0,
        "perf recorded no physical address here:\n{script}"
    );
    let header = perf(
        &["report", "-i", "pf.data", "--header-only", "-I"],
        t.path(),
    );
    assert!(
        header.contains("# memory nodes (nr 1"),
        "one memory node on this machine:\n{header}"
    );

    let imported = kairos_in(t.path(), &["import", "-q", "pf.data", "-r", "res"]).ok();
    // Page faults are a software event: their addresses come from the kernel, not a PMU,
    // and carry no latency.
    assert!(
        imported
            .stdout
            .contains("Address source:               software event (kernel-recorded addresses)"),
        "{}",
        imported.stdout
    );
    assert!(!imported.stdout.contains("PEBS"), "{}", imported.stdout);
    let numa = json_report(t.path(), "numa");
    let c = &numa["blocks"][0]["values"];
    assert_eq!(
        c["Placement"],
        format!("physical addresses of {with_phys} samples (MEM_TOPOLOGY)").as_str(),
        "{c}"
    );
    assert!(
        c["Nodes"].as_str().unwrap().starts_with("1 (node0: CPUs"),
        "{c}"
    );
    let unit = if pages.len() == 1 { "page" } else { "pages" };
    assert!(
        c["Pages on node 0"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{} {unit} (", pages.len())),
        "{c} vs {pages:?}"
    );
}
