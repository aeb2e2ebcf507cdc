//! The NUMA half of the memory-access recipe on the emulated two-node machine
//! (`kairos-testvm`, QEMU TCG): `samples/triad` initialised serially has every page of its
//! three arrays on node 0, first touched by the main thread in `init_arrays`, and is
//! diagnosed (or, where the emulator's sampling saw too little of an array, said not
//! judged); initialised in parallel its pages split by node, each part first touched by the
//! worker on that node, and nothing is diagnosed. Pages per node are checked against the
//! program's own move_pages(2) count. The emulated nodes have equal latency, so the run
//! times are not compared: the report says so, and so does this test by asserting nothing
//! about them. Needs the release build (`cargo build --release -p kairos`); when the
//! machine cannot be built the test fails with the reason.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::json_report::table_rows as rows;
use common::{kairos, path_str, words};
use kairos_testvm::Vm;
use serde_json::Value;

const TRIAD: &str = "triad --size 32M --threads 4 --iterations 20 --report-placement";
const PAGES: u64 = 32 * 1024 * 1024 / 4096;

/// `triad.c:LINE (32 MiB)` of each array, from the source: `a = malloc(...)`.
fn objects() -> Vec<(String, String)> {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/triad.c"),
    )
    .unwrap();
    ["a", "b", "c"]
        .iter()
        .map(|v| {
            let line = src
                .lines()
                .position(|l| l.trim_start().starts_with(&format!("{v} = malloc(")))
                .unwrap_or_else(|| panic!("no `{v} = malloc(` in triad.c"))
                + 1;
            (v.to_string(), format!("triad.c:{line} (32 MiB)"))
        })
        .collect()
}

/// The value after `key` on the line that starts with `key`.
fn after<'a>(s: &'a str, key: &str) -> &'a str {
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no line {key:?} in\n{s}"))
}

/// Pages per node of `array` as the program counted them (`triad: placement a node0 P node1 P absent P`).
fn truth(out: &str, array: &str) -> Vec<u64> {
    let w: Vec<&str> = after(out, &format!("triad: placement {array} "))
        .split_whitespace()
        .collect();
    w.chunks(2)
        .filter(|kv| kv[0].starts_with("node"))
        .map(|kv| kv[1].parse().unwrap())
        .collect()
}

/// Each worker's node, by tid (`triad: thread T tid TID node K cpu C ...`).
fn thread_nodes(out: &str) -> HashMap<u64, String> {
    out.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() > 6 && w[1] == "thread" && w[3] == "tid")
                .then(|| (w[4].parse().unwrap(), w[6].to_string()))
        })
        .collect()
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn serial_initialisation_is_diagnosed_and_parallel_initialisation_is_not() {
    let script = format!(
        "for init in serial parallel; do\n\
         kairos collect memory-access -q -r $init -k sampling-interval-us=200 -- {TRIAD} --init $init > $init.out 2>&1 || exit 1\n\
         kairos report numa -r $init --format json > $init.json || exit 1\n\
         done\n\
         kairos compare serial parallel > compare.txt"
    );
    let out = Vm::new(2)
        .timeout(std::time::Duration::from_secs(900))
        .run(&script)
        .unwrap_or_else(|e| panic!("{e}"));
    let file = |n: &str| {
        out.file(n)
            .unwrap_or_else(|e| panic!("{n}: {e}\nstdout: {}\nstderr: {}", out.stdout, out.stderr))
    };
    assert_eq!(
        out.status,
        0,
        "{}\n{}\n{}",
        out.stderr,
        file("serial.out"),
        out.console
    );
    eprintln!(
        "boot {:.1} s, job {:.1} s ({})",
        out.boot_s, out.job_s, out.accel
    );
    let arrays = objects();

    // Serial: all on node 0, placed by the main thread in init_arrays.
    let (s_out, s): (String, Value) = (
        file("serial.out"),
        serde_json::from_str(&file("serial.json")).unwrap(),
    );
    let init_tid: u64 = after(&s_out, "triad: init_tid ")
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let collection = s["blocks"][0]["values"].clone();
    assert_eq!(
        collection["Nodes"], "2 (node0: CPUs 0-1, node1: CPUs 2-3)",
        "{collection}"
    );
    let by_node = rows(&s, "Memory objects by node");
    let touch = rows(&s, "First touch");
    for (var, name) in &arrays {
        let r = by_node
            .iter()
            .find(|r| r["Object"] == name.as_str())
            .unwrap_or_else(|| panic!("no {name}: {by_node:?}"));
        let t = truth(&s_out, var);
        assert_eq!(t[1], 0, "the program saw {var} on node 0 only: {t:?}");
        // Queried pages and those touched after the last query (whole 2 MiB huge pages).
        let pages = count(&r["Pages"]);
        assert!(
            pages.abs_diff(t[0]) <= PAGES / 50,
            "{name}: {pages} pages, the program counted {}",
            t[0]
        );
        assert_eq!(count(&r["Node 1"]), 0, "{name}: {r}");
        let first = touch.iter().find(|x| x["Object"] == name.as_str()).unwrap();
        assert_eq!(
            (
                count(&first["Thread"]),
                first["Node"].as_str(),
                first["Function"].as_str()
            ),
            (init_tid, Some("0"), Some("init_arrays")),
            "{first}"
        );
    }
    // Each array is a problem, or not judged for want of samples (TCG delivers the timer at
    // the start of a translated block, so one instruction of the loop gets the samples).
    let problems = &s["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "NUMA problems")
        .unwrap()
        .clone();
    let notes: Vec<&str> = problems["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let diagnosed: Vec<&Value> = problems["rows"].as_array().unwrap().iter().collect();
    assert!(
        !diagnosed.is_empty(),
        "at least one array diagnosed: {notes:?}"
    );
    let placed = format!("all pages on node 0, first touched by thread {init_tid} (the main thread) in `init_arrays`; ");
    for (_, name) in &arrays {
        let site = name.trim_end_matches(" (32 MiB)");
        let said: Vec<&&str> = notes
            .iter()
            .filter(|n| n.contains(&format!("`{site}` (32 MiB): {placed}")))
            .collect();
        assert_eq!(said.len(), 1, "{name} is said once: {notes:?}");
        let judged = diagnosed.iter().any(|r| r["Object"] == name.as_str());
        match judged {
            true => assert!(said[0].contains("threads that read it run on node 1") && said[0].ends_with("initialise it in parallel with the same distribution as the compute loop, or interleave it."), "{}", said[0]),
            false => assert!(said[0].starts_with("Not judged: ") && said[0].contains("sampled access"), "{}", said[0]),
        }
    }
    assert_eq!(
        collection["Run time"], "not comparable: emulated nodes (QEMU TCG) are equally fast",
        "the report says timing cannot be judged here"
    );

    // On the host, with the source at hand, the diagnosed array is named by its variable.
    let text = kairos(&["report", "numa", "-r", path_str(&out.files.join("serial"))])
        .ok()
        .stdout;
    let named = arrays
        .iter()
        .filter(|(var, name)| {
            diagnosed.iter().any(|r| r["Object"] == name.as_str())
                && words(&text).contains(&words(&format!(
                    "`{var}` ({}, 32 MiB): {placed}",
                    name.trim_end_matches(" (32 MiB)")
                )))
        })
        .count();
    assert_eq!(named, diagnosed.len(), "{text}");
    assert!(
        text.contains("QEMU TCG"),
        "the emulated machine is said: {text}"
    );

    // Parallel: each array split like the program's own count; each part placed by the
    // worker of that node; no problem.
    let (p_out, p): (String, Value) = (
        file("parallel.out"),
        serde_json::from_str(&file("parallel.json")).unwrap(),
    );
    let nodes = thread_nodes(&p_out);
    assert_eq!(nodes.len(), 4, "{p_out}");
    let by_node = rows(&p, "Memory objects by node");
    for (var, name) in &arrays {
        let r = by_node
            .iter()
            .find(|r| r["Object"] == name.as_str())
            .unwrap();
        let t = truth(&p_out, var);
        for (n, want) in t.iter().enumerate() {
            let got = count(&r[format!("Node {n}").as_str()]);
            assert!(
                got.abs_diff(*want) <= PAGES / 50,
                "{name} node {n}: {got} pages, the program counted {want}: {r}"
            );
        }
    }
    for t in rows(&p, "First touch").iter().filter(|t| {
        arrays.iter().any(|(_, n)| t["Object"] == n.as_str()) && count(&t["Pages"]) > 64
    }) {
        let tid = count(&t["Thread"]);
        assert_eq!(t["Function"], "init_part", "{t}");
        assert_eq!(
            t["Node"].as_str(),
            nodes.get(&tid).map(String::as_str),
            "thread {tid} placed pages on its own node: {t}"
        );
    }
    let problems = p["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["title"] == "NUMA problems")
        .unwrap();
    assert_eq!(problems["rows"].as_array().unwrap().len(), 0, "{problems}");
    assert!(
        !problems["notes"].to_string().contains("Not judged"),
        "{problems}"
    );

    // The page, on the two results: Chromium headless drives `web/tests/numa.test.ts`.
    browser_test(&out.files.join("serial"), &out.files.join("parallel"));

    // The comparison shows the fix as placement, not as time.
    let cmp = file("compare.txt");
    let row = |k: &str| {
        cmp.lines()
            .find(|l| l.starts_with(k))
            .unwrap_or_else(|| panic!("no {k} in\n{cmp}"))
            .to_string()
    };
    assert!(
        row("objects with a NUMA problem").contains("fewer"),
        "{cmp}"
    );
    assert!(row("pages on node 1").contains("more"), "{cmp}");
}

/// Runs the two-node part of the page's NUMA tests on these results (as view_browser.rs
/// runs the others: Debian's Chromium, web/node_modules from scripts/install-deps.sh).
fn browser_test(serial: &Path, parallel: &Path) {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web");
    let chromium = std::env::var("KAIROS_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "Chromium not found at {chromium}; run scripts/install-deps.sh or set KAIROS_CHROMIUM"
    );
    assert!(
        web.join("node_modules/playwright-core").is_dir(),
        "web/node_modules is missing; run scripts/install-deps.sh"
    );
    let artifacts = common::kairos_bin()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("view-screenshots");
    std::fs::create_dir_all(&artifacts).unwrap();
    let status = std::process::Command::new("node")
        .args([
            "tests/run.mjs",
            "--test-name-pattern=NUMA placement on two nodes",
        ])
        .current_dir(&web)
        .env("KAIROS_BIN", common::kairos_bin())
        .env("KAIROS_RESULT_NUMA_SERIAL", serial)
        .env("KAIROS_RESULT_NUMA_PARALLEL", parallel)
        .env("KAIROS_ARTIFACTS", &artifacts)
        .env("KAIROS_CHROMIUM", &chromium)
        .status()
        .unwrap_or_else(|e| panic!("cannot run node (install Node.js 20 or later): {e}"));
    assert!(
        status.success(),
        "the page's two-node NUMA test failed (output above); screenshots in {}",
        artifacts.display()
    );
}
