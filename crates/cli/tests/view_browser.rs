//! The page of `kairos view` in a real browser: prepares real results (a multi-threaded
//! collection, a second one to compare, an imported LBR recording, a 100,000-function
//! synthetic result, a system-overview collection, memory-access runs of false sharing and
//! of its fix, compared object by object, a latency collection of the orders service) and
//! runs `web/tests` (Playwright driving Debian's Chromium headless).
//! Screenshots are kept in `target/view-screenshots`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{fixtures, kairos, kairos_bin, kairos_in, path_str, sample, tempdir};

fn web_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

#[test]
fn the_page_works_in_chromium() {
    let web = web_dir();
    let chromium = std::env::var("KAIROS_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "Chromium not found at {chromium}; run scripts/install-deps.sh (it installs Debian's chromium) or set KAIROS_CHROMIUM"
    );
    assert!(
        web.join("node_modules/playwright-core").is_dir(),
        "web/node_modules is missing; run scripts/install-deps.sh (it runs npm ci in web/)"
    );
    let tmp = tempdir();
    let d = |n: &str| tmp.path().join(n);
    let threads = sample("threads");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&d("a")),
        "--",
        path_str(&threads),
        "4",
        "1",
    ])
    .ok();
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&d("b")),
        "--",
        path_str(&sample("transitions")),
        "500",
    ])
    .ok();
    kairos_in(
        &fixtures(),
        &[
            "import",
            "-q",
            "skylake-sp_any_32deep_cycles.perf.data",
            "-r",
            path_str(&d("lbr")),
            "--perf-map-dir",
            ".",
        ],
    )
    .ok();
    kairos(&[
        "lab",
        "synthesize",
        "--samples",
        "200000",
        "--functions",
        "100000",
        "-o",
        path_str(&d("wide")),
    ])
    .ok();
    kairos(&[
        "collect",
        "system-overview",
        "-q",
        "-r",
        path_str(&d("so")),
        "--",
        path_str(&sample("matrix")),
        "300",
        "interchange",
    ])
    .ok();
    kairos(&[
        "collect",
        "memory-consumption",
        "-q",
        "-r",
        path_str(&d("mc")),
        "--",
        path_str(&sample("allocs")),
    ])
    .ok();
    let false_sharing = sample("false_sharing");
    for (name, padded) in [("fs", &[][..]), ("fs-padded", &["--padded"][..])] {
        let dir = d(name);
        let mut a = vec![
            "collect",
            "memory-access",
            "-q",
            "-r",
            path_str(&dir),
            "-k",
            "sampling-interval-us=200",
            "--",
            path_str(&false_sharing),
        ];
        a.extend(padded);
        a.extend(["2", "300000000"]);
        // Two threads that share a line only wait on each other when they have the CPUs.
        let _turn = common::cpu_turn();
        kairos(&a).ok();
    }
    {
        // The requests view: the orders service's requests, some slow for known causes.
        let log = d("orders.log");
        let _turn = common::cpu_turn();
        kairos(&[
            "collect",
            "latency",
            "-q",
            "-r",
            path_str(&d("rl")),
            "-k",
            "request=process_order",
            "-k",
            "slower-than=150us",
            "--",
            path_str(&sample("orders")),
            path_str(&log),
            "3000",
        ])
        .ok();
    }
    let artifacts = kairos_bin()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("view-screenshots");
    let _ = std::fs::remove_dir_all(&artifacts);
    std::fs::create_dir_all(&artifacts).unwrap();
    let status = Command::new("node")
        .arg("tests/run.mjs")
        .current_dir(&web)
        .env("KAIROS_BIN", kairos_bin())
        .env("KAIROS_RESULT_A", d("a"))
        .env("KAIROS_RESULT_B", d("b"))
        .env("KAIROS_RESULT_BRANCHES", d("lbr"))
        .env("KAIROS_RESULT_WIDE", d("wide"))
        .env("KAIROS_RESULT_COUNTERS", d("so"))
        .env("KAIROS_RESULT_MEMORY", d("mc"))
        .env("KAIROS_RESULT_MEMACCESS", d("fs"))
        .env("KAIROS_RESULT_MEMACCESS_PADDED", d("fs-padded"))
        .env("KAIROS_RESULT_LATENCY", d("rl"))
        .env("KAIROS_ARTIFACTS", &artifacts)
        .env("KAIROS_CHROMIUM", &chromium)
        .status()
        .unwrap_or_else(|e| panic!("cannot run node (install Node.js 20 or later, or run scripts/install-deps.sh): {e}"));
    assert!(
        status.success(),
        "the browser tests failed (output above); screenshots in {}",
        artifacts.display()
    );
    let shots = std::fs::read_dir(&artifacts)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "png"))
        })
        .count();
    assert!(
        shots >= 3,
        "expected screenshots in {}, found {shots}",
        artifacts.display()
    );
}
