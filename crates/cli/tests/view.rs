//! `kairos view` end to end: the API on real collected and imported results, its security
//! (token, host, bind address, path escapes, oversized and malformed requests) and bad
//! input (missing and damaged results, a port in use). The page itself is tested in a
//! real browser by `view_browser.rs`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;
#[path = "view/server.rs"]
mod server;

use std::path::{Path, PathBuf};

use common::{fixtures, kairos, kairos_in, path_str, sample, tempdir};
use serde_json::Value;
use server::{raw, raw_bytes, start};

fn collect_threads(dir: &Path) -> PathBuf {
    let r = dir.join("threads");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&sample("threads")),
        "3",
        "0.6",
    ])
    .ok();
    r
}

fn nums(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn requests_without_the_token_or_escaping_paths_get_nothing() {
    let tmp = tempdir();
    let r = collect_threads(tmp.path());
    let v = start(&["-r", path_str(&r)]);
    let (p, t) = (v.port, v.token.clone());
    let host = format!("Host: 127.0.0.1:{p}\r\nConnection: close");
    assert_eq!(v.get("").0, 200);
    assert!(
        v.get("").1.contains("<html") || v.get("").1.contains("<!doctype"),
        "not the page"
    );
    assert_eq!(v.get("app.js").0, 200);
    for path in [
        "/",
        "/api/results",
        "/0000/api/results",
        &format!("/{}/api/results", &t[..31]),
        &format!("/{t}x/api/results"),
    ] {
        let (status, body) = raw(p, &format!("GET {path} HTTP/1.1\r\n{host}"));
        assert_eq!(status, 404, "{path}: {body}");
        assert!(!body.contains("threads"), "{path} leaked: {body}");
    }
    assert_eq!(raw(p, &format!("GET /{t} HTTP/1.1\r\n{host}")).0, 301);
    for path in [
        "../Cargo.toml",
        "%2e%2e/%2e%2e/etc/passwd",
        "api/../../etc/passwd",
        "api/results/../../etc/passwd",
        "/etc/passwd",
        "api/%2e%2e%2fresults",
        "tables/samples.parquet",
        "manifest.json",
    ] {
        let (status, body) = raw(p, &format!("GET /{t}/{path} HTTP/1.1\r\n{host}"));
        assert_eq!(status, 404, "{path}: {body}");
        assert!(
            !body.contains("root:") && !body.contains("format_version"),
            "{path} leaked: {body}"
        );
    }
    // Another host name (DNS rebinding) is refused even with the token.
    let (status, _) = raw(
        p,
        &format!("GET /{t}/api/results HTTP/1.1\r\nHost: evil.example:{p}\r\nConnection: close"),
    );
    assert_eq!(status, 403);
    assert_eq!(
        raw(
            p,
            &format!("GET /{t}/api/results HTTP/1.1\r\nConnection: close")
        )
        .0,
        403
    );
    // Oversized and malformed requests.
    let long = "a".repeat(9000);
    assert_eq!(
        raw(
            p,
            &format!("GET /{t}/api/results?x={long} HTTP/1.1\r\n{host}")
        )
        .0,
        414
    );
    let big = format!("X-Big: {}\r\n", "b".repeat(4000)).repeat(5);
    assert_eq!(
        raw(p, &format!("GET /{t}/api/results HTTP/1.1\r\n{big}{host}")).0,
        431
    );
    assert_eq!(raw_bytes(p, &vec![b'x'; 1 << 20]).0, 414);
    assert_eq!(raw(p, "GARBAGE").0, 400);
    assert_eq!(
        raw(
            p,
            &format!("GET /{t}/api/results HTTP/1.1\r\nBad Header\r\n{host}")
        )
        .0,
        400
    );
    assert_eq!(
        raw(
            p,
            &format!("POST /{t}/api/results HTTP/1.1\r\nContent-Length: 5\r\n{host}\r\n\r\nhello")
        )
        .0,
        413
    );
    assert_eq!(
        raw(p, &format!("DELETE /{t}/api/results HTTP/1.1\r\n{host}")).0,
        405
    );
    for bad in [
        "summary?r=99",
        "summary?r=x",
        "timeline?width=100000",
        "timeline?lanes=disk",
        "tree?path=999999999",
        "tree?kind=sideways",
        "summary?method=warp",
        "nope",
        "summary?from=5&to=1",
    ] {
        let (status, body) = v.get(&format!("api/{bad}"));
        assert!((400..500).contains(&status), "{bad}: {status} {body}");
        let e: Value =
            serde_json::from_str(&body).unwrap_or_else(|_| panic!("{bad}: not JSON: {body}"));
        assert!(
            e["error"].as_str().is_some_and(|s| s.len() > 10),
            "{bad}: {body}"
        );
    }
    // None of it did harm.
    assert_eq!(v.api("results")["results"][0]["ok"], true);
    // Bound to 127.0.0.1 only: the kernel's socket table says so.
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let listening: Vec<&str> = tcp
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 3 && f[3] == "0A" && f[1].ends_with(&format!(":{p:04X}"))
        })
        .collect();
    assert_eq!(listening.len(), 1, "{tcp}");
    assert!(
        listening[0]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .starts_with("0100007F:"),
        "{}",
        listening[0]
    );
    assert!(!std::fs::read_to_string("/proc/net/tcp6")
        .unwrap_or_default()
        .contains(&format!(
            ":{p:04X} 00000000000000000000000000000000:0000 0A"
        )));
}

#[test]
fn missing_and_damaged_results_are_said_on_the_terminal_and_the_page() {
    let tmp = tempdir();
    let good = collect_threads(tmp.path());
    let damaged = tmp.path().join("damaged");
    std::fs::create_dir(&damaged).unwrap();
    std::fs::write(damaged.join("manifest.json"), "{ not json").unwrap();
    let truncated = tmp.path().join("truncated");
    let out = std::process::Command::new("cp")
        .arg("-r")
        .arg(&good)
        .arg(&truncated)
        .status()
        .unwrap();
    assert!(out.success());
    let samples = truncated.join("tables/samples.parquet");
    let len = std::fs::metadata(&samples).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&samples)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let missing = tmp.path().join("missing");
    let mut v = start(&[
        "-r",
        path_str(&missing),
        "-r",
        path_str(&damaged),
        "-r",
        path_str(&truncated),
        "-r",
        path_str(&good),
    ]);
    let list = v.api("results");
    let rs = list["results"].as_array().unwrap();
    for (i, what) in [
        (0, "no such result directory"),
        (1, "damaged manifest"),
        (2, "samples"),
    ] {
        assert_eq!(rs[i]["ok"], false, "{}", rs[i]);
        let e = rs[i]["error"].as_str().unwrap();
        assert!(e.contains(what), "{e}");
        let (status, body) = v.get(&format!("api/summary?r={i}"));
        assert_eq!(status, 404);
        assert!(body.contains(what), "{body}");
    }
    assert_eq!(rs[3]["ok"], true);
    // The terminal said the same; the server kept serving the good one.
    let _ = v.child.kill();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut v.child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("kairos: cannot open result") && err.contains("no such result directory"),
        "{err}"
    );
    assert!(
        err.contains("damaged manifest") && err.contains("is damaged"),
        "{err}"
    );
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let tmp = tempdir();
    let good = collect_threads(tmp.path());
    let v = start(&["-r", path_str(&good)]);
    let port = v.port.to_string();
    let r = kairos(&[
        "view",
        "-r",
        path_str(&good),
        "--port",
        &port,
        "--no-browser",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("port {port} on 127.0.0.1 is in use"))
            && r.stderr.contains("--port"),
        "{}",
        r.stderr
    );
}

#[test]
fn api_answers_add_up_on_a_real_collection() {
    let tmp = tempdir();
    let r = collect_threads(tmp.path());
    let b = tmp.path().join("transitions");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&b),
        "--",
        path_str(&sample("transitions")),
        "300",
    ])
    .ok();
    let v = start(&["-r", path_str(&r), "-r", path_str(&b)]);
    let info = &v.api("results")["results"][0];
    let (n, dur) = (
        info["samples"].as_u64().unwrap(),
        info["duration_ns"].as_u64().unwrap(),
    );
    assert!(info["threads"].as_array().unwrap().len() >= 3, "{info}");
    for lanes in ["thread", "cpu"] {
        let t = v.api(&format!("timeline?lanes={lanes}&width=333"));
        let total: u64 = t["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| nums(&l["count"]).iter().sum::<u64>())
            .sum();
        assert_eq!(total, n, "{lanes}");
        for l in t["lanes"].as_array().unwrap() {
            assert!(nums(&l["bucket"]).iter().all(|&k| k < 333));
            assert!(nums(&l["bucket"]).windows(2).all(|w| w[0] < w[1]));
        }
        let ids = nums(&t["functions"]["id"]);
        assert!(
            t["functions"]["name"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x.as_str().unwrap().starts_with("compute_")),
            "{t}"
        );
        assert!(t["lanes"][0]["func"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f.is_null() || ids.contains(&f.as_u64().unwrap())));
    }
    // A selection: the first half, one thread. Summary, timeline and trees agree.
    let tid = info["threads"][0]["tid"].as_i64().unwrap();
    let sel = format!("from=0&to={}&tids={tid}", dur / 2);
    let t = v.api(&format!("timeline?width=50&{sel}"));
    assert_eq!(t["lanes"].as_array().unwrap().len(), 1);
    let in_sel: u64 = nums(&t["lanes"][0]["count"]).iter().sum();
    assert!(in_sel > 0 && in_sel < n);
    let s = v.api(&format!("summary?{sel}"));
    let facts = s["facts"].as_array().unwrap();
    let samples = facts.iter().find(|f| f[0] == "Samples").unwrap()[1]
        .as_str()
        .unwrap()
        .replace(',', "");
    assert_eq!(samples.parse::<u64>().unwrap(), in_sel);
    for kind in ["top-down", "bottom-up"] {
        for group in ["function", "module", "thread", "process", "cpu"] {
            let tr = v.api(&format!("tree?kind={kind}&group={group}&{sel}"));
            assert_eq!(
                tr["total_count"].as_u64().unwrap(),
                in_sel,
                "{kind} {group}"
            );
            let rows = &tr["rows"];
            let totals = nums(&rows["total"]);
            assert!(
                totals.windows(2).all(|w| w[0] >= w[1]),
                "{kind} {group}: not sorted"
            );
            if group != "function" || kind == "top-down" {
                assert_eq!(
                    totals.iter().sum::<u64>(),
                    tr["total_weight"].as_u64().unwrap(),
                    "{kind} {group}"
                );
            } else {
                assert_eq!(
                    nums(&rows["self"]).iter().sum::<u64>(),
                    tr["total_weight"].as_u64().unwrap()
                );
            }
            // Walk down the heaviest path to a leaf: children never weigh more than the parent.
            let mut path = Vec::new();
            let mut cur = tr;
            for _ in 0..30 {
                let i = match cur["rows"]["has_children"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .position(|h| h == true)
                {
                    Some(i) => i,
                    None => break,
                };
                let parent_total = cur["rows"]["total"][i].as_u64().unwrap();
                path.push(cur["rows"]["id"][i].as_u64().unwrap().to_string());
                cur = v.api(&format!(
                    "tree?kind={kind}&group={group}&{sel}&path={}",
                    path.join(",")
                ));
                let kids = nums(&cur["rows"]["total"]);
                assert!(!kids.is_empty(), "{kind} {group} {path:?}");
                // Bottom-up function rows are inclusive and overlap; their self weights do not.
                let sum = if kind == "bottom-up" {
                    nums(&cur["rows"]["self"]).iter().sum::<u64>()
                } else {
                    kids.iter().sum::<u64>()
                };
                assert!(
                    sum <= parent_total && kids.iter().all(|&k| k <= parent_total),
                    "{kind} {group} {path:?}"
                );
            }
            assert!(!path.is_empty(), "{kind} {group}: nothing to expand");
        }
    }
    // The inspector: the nearest sample of the lane, with its stack.
    let key = t["lanes"][0]["key"].as_str().unwrap();
    let smp = v.api(&format!("sample?lane={key}&t={}", dur / 4));
    assert_eq!(smp["tid"].as_i64().unwrap(), tid);
    assert!(
        smp["stack"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["function"] == "worker" || f["function"] == "main"),
        "{smp}"
    );
    assert!(smp["note"].as_str().unwrap().contains("no branch records"));
    assert!(v.get("api/summary?method=proportional").0 == 400);
    // Comparison with the second result.
    let c = v.api("compare?a=0&b=1");
    assert!(
        c["facts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f[0] == "samples"),
        "{c}"
    );
    let names: Vec<&str> = c["rows"]["name"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"compute_a") && names.contains(&"p3_C"),
        "{names:?}"
    );
    assert!(
        c["rows"]["ratio"][names.iter().position(|&x| x == "p3_C").unwrap()].is_null(),
        "p3_C is not in A"
    );
}

#[test]
fn branch_records_of_a_real_recording_in_order_with_two_methods() {
    let tmp = tempdir();
    let r = tmp.path().join("sky");
    kairos_in(
        &fixtures(),
        &[
            "import",
            "-q",
            "skylake-sp_any_32deep_cycles.perf.data",
            "-r",
            path_str(&r),
            "--perf-map-dir",
            ".",
        ],
    )
    .ok();
    let v = start(&["-r", path_str(&r)]);
    let info = &v.api("results")["results"][0];
    assert_eq!(info["has_branches"], true);
    let methods: Vec<&str> = info["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        methods.contains(&"cycles") && methods.contains(&"visits") && methods.contains(&"none"),
        "{methods:?}"
    );
    let t = v.api("timeline?width=100");
    let lane = &t["lanes"][0];
    let key = lane["key"].as_str().unwrap();
    let dur = info["duration_ns"].as_u64().unwrap();
    let mut seen = 0;
    for k in 1..6 {
        let s = v.api(&format!(
            "sample?lane={key}&t={}&methods=equal,cycles",
            dur * k / 6
        ));
        let brs = s["branches"].as_array().unwrap();
        assert!(!brs.is_empty(), "{s}");
        let pos: Vec<u64> = brs
            .iter()
            .map(|b| b["position"].as_u64().unwrap())
            .collect();
        assert!(
            pos.windows(2).all(|w| w[0] > w[1]),
            "not oldest first: {pos:?}"
        );
        assert!(brs.iter().any(|b| b["from_function"] != "[unknown]"), "{s}");
        for m in 0..2 {
            let times: Vec<u64> = brs.iter().filter_map(|b| b["times"][m].as_u64()).collect();
            assert!(
                times.windows(2).all(|w| w[0] <= w[1]),
                "method {m}: times out of order {times:?}"
            );
            assert!(
                times.iter().all(|&x| x <= s["time_ns"].as_u64().unwrap()),
                "after its sample"
            );
            seen += times.len();
        }
        // Records already in the previous snapshot have no time of their own.
        assert!(brs
            .iter()
            .all(|b| b["is_new"] == true || b["times"][0].is_null()));
    }
    assert!(seen > 0, "no record got a time");
    // A method turns records into points: more points than samples.
    let none = v.api("summary");
    let prop = v.api("summary?method=proportional");
    let count = |s: &Value, label: &str| {
        s["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f[0] == label)
            .unwrap()[1]
            .as_str()
            .unwrap()
            .replace(',', "")
            .parse::<u64>()
            .unwrap()
    };
    assert!(count(&prop, "Points") > count(&none, "Samples"));
}

#[test]
fn a_wide_level_of_100k_functions_is_one_answer() {
    let tmp = tempdir();
    let r = tmp.path().join("wide");
    kairos(&[
        "lab",
        "synthesize",
        "--samples",
        "200000",
        "--functions",
        "100000",
        "-o",
        path_str(&r),
    ])
    .ok();
    let v = start(&["-r", path_str(&r)]);
    let info = &v.api("results")["results"][0];
    assert!(
        info["notes"][0].as_str().unwrap().starts_with("synthetic"),
        "{info}"
    );
    let tr = v.api("tree?kind=bottom-up");
    let names = tr["rows"]["name"].as_array().unwrap();
    assert_eq!(
        names
            .iter()
            .filter(|n| n.as_str().unwrap().starts_with("leaf_"))
            .count(),
        100_000
    );
}

#[test]
fn counters_of_a_system_overview_collection() {
    let tmp = tempdir();
    let r = tmp.path().join("so");
    kairos(&[
        "collect",
        "system-overview",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&sample("matrix")),
        "300",
        "interchange",
    ])
    .ok();
    let v = start(&["-r", path_str(&r)]);
    assert_eq!(v.api("results")["results"][0]["has_counters"], true);
    let c = v.api("counters?width=64");
    let series = c["series"].as_array().unwrap();
    assert_eq!(series[0]["name"], "page faults/s");
    for s in series {
        assert_eq!(s["values"].as_array().unwrap().len(), 64);
    }
    // 300x300 doubles, three matrices: hundreds of first-touch faults.
    let faults: f64 = series[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .sum::<f64>()
        * c["bucket_ns"].as_f64().unwrap()
        / 1e9;
    assert!(faults > 300.0, "{faults} faults");
    let h = &c["histograms"][0];
    assert_eq!(
        h["edges"].as_array().unwrap().len(),
        h["counts"].as_array().unwrap().len() + 1
    );
    assert!(nums(&h["counts"]).iter().sum::<u64>() > 300);
    let (status, body) = start(&["-r", path_str(&collect_threads(tmp.path()))]).get("api/counters");
    assert_eq!(status, 404);
    assert!(body.contains("collect system-overview"), "{body}");
}
