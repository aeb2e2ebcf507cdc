//! `kairos view`'s `api/memory` on real memory-access collections (address sampling, no
//! PMU needed): the false-sharing line of `samples/false_sharing` with each thread at the
//! offset the program printed, the padded run without it, the comparison of the two, and
//! the sentences for bad parameters, a result without accesses and damaged tables.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;
#[path = "view/server.rs"]
mod server;

use std::path::{Path, PathBuf};

use common::{kairos, path_str, sample, tempdir, words};
use serde_json::Value;
use server::start;

/// Collects `false_sharing ARGS` into `dir/name`; returns it and the (tid, offset) the
/// program printed for each thread (`false_sharing: thread K tid T offset O`).
fn collect(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, Vec<(u64, i64)>) {
    collect_with(dir, name, args, &[])
}

/// [`collect`] with more options before `--` (`-k watchpoints=on`).
fn collect_with(
    dir: &Path,
    name: &str,
    args: &[&str],
    options: &[&str],
) -> (PathBuf, Vec<(u64, i64)>) {
    let _turn = common::cpu_turn();
    let r = dir.join(name);
    let prog = sample("false_sharing");
    let mut a = vec![
        "collect",
        "memory-access",
        "-q",
        "-r",
        path_str(&r),
        "-k",
        "sampling-interval-us=200",
    ];
    a.extend(options);
    a.extend(["--", path_str(&prog)]);
    a.extend(args);
    let out = kairos(&a).ok().stdout;
    let threads = out
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 7 && w[3] == "tid").then(|| (w[4].parse().unwrap(), w[6].parse().unwrap()))
        })
        .collect();
    (r, threads)
}

/// The counters' allocation site as objects are named: `false_sharing.c:LINE (512 B)`.
fn counters_site() -> String {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/false_sharing.c"),
    )
    .unwrap();
    let n = 1 + src
        .lines()
        .take_while(|l| !l.contains("malloc(sizeof *object)"))
        .count();
    format!("false_sharing.c:{n} (512 B)")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn fact<'a>(c: &'a Value, name: &str) -> &'a Value {
    c["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f[0] == name)
        .unwrap_or_else(|| panic!("no fact {name}: {c}"))
}

#[test]
fn false_sharing_is_a_line_with_each_thread_on_its_own_bytes() {
    let tmp = tempdir();
    // Long enough for stores to be sampled: a timer sample lands on a worker's store about
    // once in 200 (2 in 451 measured), so 300M increments (about 900 samples) had no store
    // at all in one CI run in fifty; 1G gives about 3,000.
    let (unpadded, threads) = collect(tmp.path(), "unpadded", &["2", "1000000000"]);
    let (padded, _) = collect(tmp.path(), "padded", &["--padded", "2", "300000000"]);
    assert_eq!(threads.len(), 2, "the program prints a line per thread");
    let v = start(&["-r", path_str(&unpadded), "-r", path_str(&padded)]);
    let info = &v.api("results")["results"][0];
    assert_eq!(info["has_memory"], true, "{info}");
    assert!(
        info["views"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == "memory-access"),
        "{info}"
    );

    let m = v.api("memory?r=0");
    let site = counters_site();
    let top = &m["objects"][0];
    assert_eq!(top["name"], site.as_str(), "{m}");
    assert_eq!(
        (top["kind"].as_str(), u(&top["threads"])),
        (Some("heap"), 2)
    );
    assert!(top["share"].as_f64().unwrap() > 0.9, "{top}");
    assert_eq!(
        u(&top["loads"]) + u(&top["stores"]),
        u(&top["samples"]),
        "every access a load or a store: {top}"
    );
    assert_eq!(u(&m["false_sharing_lines"]), 1, "{m}");
    let line = &m["lines"][0];
    assert_eq!(
        (line["verdict"].as_str(), line["object_name"].as_str()),
        (Some("false sharing"), Some(site.as_str())),
        "{line}"
    );
    assert!(
        line["fix"].as_str().unwrap().contains("64-byte line"),
        "{line}"
    );
    // The grid: a row per thread, each on the 8 bytes of its own counter.
    let grid = line["grid"].as_array().unwrap();
    // Besides the two workers, the main thread may show with a sample or two: free()
    // writing its list pointers into the block after the join.
    let workers: Vec<u64> = threads.iter().map(|(t, _)| *t).collect();
    for r in grid.iter().filter(|r| !workers.contains(&u(&r["tid"]))) {
        assert!(u(&r["load_count"]) + u(&r["store_count"]) <= 5, "{line}");
        assert!(
            !line["fix"]
                .as_str()
                .unwrap()
                .contains(&format!("(thread {})", u(&r["tid"]))),
            "a thread after the others is not in the fix: {line}"
        );
    }
    assert!(grid.len() >= 2, "{line}");
    let base = line["object_offset"].as_i64().unwrap();
    let mut writers = 0;
    for (tid, offset) in &threads {
        let row = grid
            .iter()
            .find(|r| u(&r["tid"]) == *tid)
            .unwrap_or_else(|| panic!("thread {tid} is not in the grid: {line}"));
        assert_eq!(
            row["offsets"],
            serde_json::json!([[offset, offset + 7]]),
            "thread {tid}"
        );
        let (loads, stores) = (
            row["loads"].as_array().unwrap(),
            row["stores"].as_array().unwrap(),
        );
        assert_eq!((loads.len(), stores.len()), (64, 64));
        let touched: Vec<i64> = (0..64)
            .filter(|&b| u(&loads[b]) + u(&stores[b]) > 0)
            .map(|b| base + b as i64)
            .collect();
        assert_eq!(
            touched,
            (*offset..offset + 8).collect::<Vec<_>>(),
            "thread {tid}'s cells"
        );
        // A thread that ran alone on a CPU for the run (the other descheduled) hardly waits
        // on its store, and a timer sample then almost never lands on it (measured: 2
        // stores in 451 samples): stores are asked of the line, below, not of each thread.
        writers += usize::from(stores.iter().any(|s| u(s) > 0));
        assert!(
            line["fix"]
                .as_str()
                .unwrap()
                .contains(&format!("bytes {offset}..{} (thread {tid})", offset + 7)),
            "{line}"
        );
    }
    assert!(writers >= 1, "a worker writes its counter: {line}");
    assert_ne!(threads[0].1, threads[1].1, "distinct offsets");

    // The time series: whole run, every sample of the object once; half the run, fewer.
    let whole = v.api("memory?r=0&part=series&width=50");
    let counts = |s: &Value| -> u64 {
        s["series"]["objects"][0]["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(u)
            .sum()
    };
    assert_eq!(
        whole["series"]["objects"][0]["counts"]
            .as_array()
            .unwrap()
            .len(),
        50
    );
    assert_eq!(counts(&whole), u(&top["samples"]), "{whole}");
    assert!(
        whole.get("lines").is_none(),
        "part=series is the series alone"
    );
    let half = v.api(&format!(
        "memory?r=0&part=series&width=7&to={}",
        u(&info["duration_ns"]) / 2
    ));
    assert!(
        counts(&half) > 0 && counts(&half) < counts(&whole),
        "{half}"
    );

    // Padded: no false sharing; the comparison says the line went away.
    let p = v.api("memory?r=1");
    assert_eq!(u(&p["false_sharing_lines"]), 0, "{p}");
    assert!(
        p["lines"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["verdict"] != "false sharing"),
        "{p}"
    );
    let c = v.api("compare?a=0&b=1");
    let fs = fact(&c, "cache lines with false sharing");
    assert_eq!(
        (fs[1].as_str(), fs[2].as_str()),
        (Some("1"), Some("0")),
        "{c}"
    );
    assert_eq!(fact(&c, "cache lines with true sharing")[1], "0");
    assert!(
        fact(&c, "run time (s)")[1]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            > 0.0,
        "{c}"
    );

    for bad in [
        "memory?width=0",
        "memory?width=5000",
        "memory?lines=0",
        "memory?objects=x",
        "memory?part=lines",
        "memory?r=7",
        "memory?from=9&to=3",
    ] {
        let (status, body) = v.get(&format!("api/{bad}"));
        assert!((400..500).contains(&status), "{bad}: {status} {body}");
        let e: Value = serde_json::from_str(&body).unwrap();
        assert!(
            e["error"].as_str().is_some_and(|s| s.contains(' ')),
            "{bad}: {body}"
        );
    }
}

#[test]
fn results_without_accesses_or_with_damaged_tables_are_sentences() {
    let tmp = tempdir();
    // Long enough that a loaded machine still gives it address samples of its object.
    let (good, _) = collect(tmp.path(), "good", &["2", "300000000"]);
    let damaged = tmp.path().join("damaged");
    assert!(std::process::Command::new("cp")
        .arg("-r")
        .arg(&good)
        .arg(&damaged)
        .status()
        .unwrap()
        .success());
    // Half the accesses table, and a manifest that agrees, so that the result opens (its
    // samples are intact) and only the memory tables fail.
    let accesses = damaged.join("tables/accesses.parquet");
    let len = std::fs::metadata(&accesses).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&accesses)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let mut m: Value =
        serde_json::from_str(&std::fs::read_to_string(damaged.join("manifest.json")).unwrap())
            .unwrap();
    for t in m["tables"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .filter(|t| t["name"] == "accesses")
    {
        t["bytes"] = (len / 2).into();
    }
    std::fs::write(damaged.join("manifest.json"), m.to_string()).unwrap();
    let hotspots = tmp.path().join("hs");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&hotspots),
        "--",
        path_str(&sample("threads")),
        "2",
        "0.2",
    ])
    .ok();
    let v = start(&[
        "-r",
        path_str(&damaged),
        "-r",
        path_str(&hotspots),
        "-r",
        path_str(&good),
    ]);
    let rs = v.api("results");
    assert_eq!(rs["results"][1]["has_memory"], false);
    assert!(!rs["results"][1]["views"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x == "memory-access"));
    let (status, body) = v.get("api/memory?r=1");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("collect memory-access"), "{body}");
    for _ in 0..2 {
        // Read once, the same sentence again: the failure is kept, not retried.
        let (status, body) = v.get("api/memory?r=0");
        assert_eq!(status, 404, "{body}");
        assert!(
            body.contains("damaged") && body.contains("collect the result again"),
            "{body}"
        );
    }
    assert!(
        u(&v.api("memory?r=2")["objects_total"]) > 0,
        "the good result still answers"
    );
}

/// With `-k watchpoints=on` the page and `kairos report summary` state the same counts
/// with the same meaning: samples with a data address (hits not added in), and the
/// watchpoint hits as a figure of their own.
#[test]
fn the_page_and_the_summary_count_samples_and_watchpoint_hits_alike() {
    let tmp = tempdir();
    let (r, threads) = collect_with(
        tmp.path(),
        "watched",
        &["2", "1000000000"],
        &["-k", "watchpoints=on"],
    );
    assert_eq!(threads.len(), 2, "the program prints a line per thread");
    let out = kairos(&["report", "summary", "-r", path_str(&r), "--format", "json"]).ok();
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    let c = &summary["blocks"][0]["values"];
    let (samples, hits) = (
        u(&c["Samples with a data address"]),
        u(&c["Watchpoint hits"]),
    );
    assert!(samples > 0 && hits > 0, "{c}");
    // Every row of the result's samples table is one or the other.
    let rows = kairos_result::ResultDir::open(&r)
        .unwrap()
        .manifest()
        .table("accesses")
        .map(|t| t.rows);
    assert_eq!(rows, Some(samples + hits), "{c}");
    let v = start(&["-r", path_str(&r)]);
    let m = v.api("memory?r=0");
    assert_eq!(u(&m["samples"]), samples, "{m}");
    assert_eq!(u(&m["watch_hits"]), hits, "{m}");
    let text = kairos(&["report", "summary", "-r", path_str(&r)])
        .ok()
        .stdout;
    assert!(
        words(&text).contains(&format!("Samples with a data address: {samples}")),
        "{text}"
    );
}
