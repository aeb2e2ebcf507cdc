//! `kairos query` over many results, end to end: two hotspots results of the `shares`
//! sample and a latency result of `orders`, collected here, queried as directories and
//! as a published root; each answer checked against an engine that is not Kairos's
//! (DuckDB on each result's own tables, Spark on the layout with the same views and the
//! same query text) and against what the analyses themselves wrote. Object storage is
//! moto's S3 server on 127.0.0.1: published there, the answers are the local root's.

#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use common::{cpu_turn, free_port, kairos, kairos_env, path_str, sample, tempdir, Run, Running};
use serde_json::Value;

/// The results every test queries, collected once.
struct Fleet {
    _tmp: tempfile::TempDir,
    hotspots: Vec<PathBuf>,
    latency: PathBuf,
    root: PathBuf,
    /// Unix seconds around the collections.
    began: u64,
    ended: u64,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn fleet() -> &'static Fleet {
    static FLEET: OnceLock<Fleet> = OnceLock::new();
    FLEET.get_or_init(|| {
        let tmp = tempdir();
        let began = unix_now();
        let _turn = cpu_turn();
        let hotspots: Vec<PathBuf> = ["a", "b"]
            .iter()
            .map(|name| {
                let r = tmp.path().join(name);
                let shares = sample("shares");
                kairos(&[
                    "collect",
                    "hotspots",
                    "-q",
                    "-r",
                    path_str(&r),
                    "--",
                    path_str(&shares),
                    "0.5",
                ])
                .ok();
                r
            })
            .collect();
        let latency = tmp.path().join("lat");
        let log = tmp.path().join("orders.log");
        let orders = sample("orders");
        kairos(&[
            "collect",
            "latency",
            "-q",
            "-r",
            path_str(&latency),
            "--",
            path_str(&orders),
            path_str(&log),
            "300",
        ])
        .ok();
        let ended = unix_now();
        let root = tmp.path().join("root");
        let mut args = vec!["publish", "--root", path_str(&root)];
        for r in hotspots.iter().chain([&latency]) {
            args.extend(["-r", path_str(r)]);
        }
        kairos(&args).ok();
        Fleet {
            hotspots,
            latency,
            root,
            began,
            ended,
            _tmp: tmp,
        }
    })
}

fn json(run: Run) -> Vec<Value> {
    let run = run.ok();
    serde_json::from_str::<Value>(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
        .as_array()
        .cloned()
        .unwrap()
}

fn query_root(root: &str, sql: &str) -> Vec<Value> {
    json(kairos(&["query", "--root", root, "-f", "json", sql]))
}

fn duckdb(sql: &str) -> Vec<Value> {
    let out = Command::new("python3")
        .arg("-c")
        .arg("import duckdb, json, sys; r = duckdb.sql(sys.argv[1]); print(json.dumps([dict(zip(r.columns, x)) for x in r.fetchall()]))")
        .arg(sql)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "duckdb (scripts/install-deps.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .cloned()
        .unwrap()
}

/// Self samples by function of one result, from its own tables, by DuckDB.
fn own_self_samples(dir: &Path) -> BTreeMap<String, u64> {
    let t = |name: &str| format!("'{}/tables/{name}.parquet'", dir.display());
    duckdb(&format!(
        "select f.function as function, count(*) as n from {} s join {} st on st.id = s.stack join {} f on f.id = st.frame where s.event = 0 group by f.function",
        t("samples"), t("stacks"), t("frames")
    ))
    .iter()
    .map(|r| (r["function"].as_str().unwrap().to_owned(), r["n"].as_u64().unwrap()))
    .collect()
}

fn by_function(rows: &[Value], result_prefix: &str) -> BTreeMap<String, u64> {
    rows.iter()
        .filter(|r| r["result"].as_str().unwrap().starts_with(result_prefix))
        .map(|r| {
            (
                r["function"].as_str().unwrap().to_owned(),
                r["samples"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn self_functions_are_each_result_s_own_counts_from_directories_and_from_a_root() {
    let f = fleet();
    let sql = "SELECT result, function, samples FROM self_functions WHERE event = 0";
    let mut args = vec!["query", "-f", "json", sql];
    for r in &f.hotspots {
        args.extend(["-r", path_str(r)]);
    }
    let from_dirs = json(kairos(&args));
    let from_root = query_root(path_str(&f.root), sql);
    for dir in &f.hotspots {
        let own = own_self_samples(dir);
        assert!(own.get("share_a").is_some_and(|&n| n > 0), "{own:?}");
        let name = format!("{}-", dir.file_name().unwrap().to_string_lossy());
        assert_eq!(
            by_function(&from_dirs, &name),
            own,
            "{name} from directories"
        );
        assert_eq!(by_function(&from_root, &name), own, "{name} from the root");
    }
}

#[test]
fn top_functions_sum_the_hosts_and_function_minutes_are_wall_clock_minutes() {
    let f = fleet();
    let root = path_str(&f.root);
    let top = query_root(root, "top_functions");
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for dir in f.hotspots.iter().chain([&f.latency]) {
        for (func, n) in own_self_samples(dir) {
            *expected.entry(func).or_default() += n;
        }
    }
    let got: BTreeMap<String, u64> = top
        .iter()
        .map(|r| {
            (
                r["function"].as_str().unwrap().to_owned(),
                r["samples"].as_u64().unwrap(),
            )
        })
        .fold(BTreeMap::new(), |mut m, (k, v)| {
            *m.entry(k).or_default() += v;
            m
        });
    assert_eq!(got, expected);
    let samples: Vec<u64> = top.iter().map(|r| r["samples"].as_u64().unwrap()).collect();
    assert!(
        samples.windows(2).all(|w| w[0] >= w[1]),
        "the busiest first: {samples:?}"
    );
    let rank = |f: &str| top.iter().position(|r| r["function"] == f).unwrap();
    assert!(rank("share_a") < rank("share_b") && rank("share_b") < rank("share_c"));
    assert!(top.iter().all(|r| r["hosts"] == 1));
    let minutes = query_root(root, "function_minutes");
    let total: u64 = minutes.iter().map(|r| r["samples"].as_u64().unwrap()).sum();
    assert_eq!(
        total,
        expected.values().sum::<u64>(),
        "every sample is in a minute"
    );
    for r in &minutes {
        let m = r["minute"].as_u64().unwrap();
        assert!(
            m % 60 == 0 && m + 60 >= f.began && m <= f.ended,
            "minute {m} outside {}..{}",
            f.began,
            f.ended
        );
    }
}

#[test]
fn slow_requests_are_the_latency_result_s_own() {
    let f = fleet();
    let own: Value =
        serde_json::from_slice(&std::fs::read(f.latency.join("latency.json")).unwrap()).unwrap();
    let requests = own["requests"].as_array().unwrap();
    let slow: Vec<&Value> = requests.iter().filter(|r| r["slow"] == true).collect();
    assert!(!slow.is_empty(), "the orders sample has slow requests");
    let by_host = query_root(path_str(&f.root), "slow_requests_by_host");
    assert_eq!(by_host.len(), 1, "{by_host:?}");
    assert_eq!(by_host[0]["requests"].as_u64(), Some(requests.len() as u64));
    assert_eq!(by_host[0]["slow"].as_u64(), Some(slow.len() as u64));
    let rows = query_root(path_str(&f.root), "slow_requests");
    assert_eq!(rows.len(), slow.len());
    let longest = slow
        .iter()
        .map(|r| r["duration_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(rows[0]["duration_ns"].as_u64(), Some(longest));
    assert!(by_host[0]["max_duration_ns"].as_u64().unwrap() >= longest);
}

/// Spark reads the same layout, defines the same views from views.sql and runs the same
/// query text: the same rows.
#[test]
fn spark_gives_the_same_answers_with_the_same_query_text() {
    let f = fleet();
    let views = concat!(env!("CARGO_MANIFEST_DIR"), "/../fleet/src/views.sql");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/spark_views.py");
    let queries = [
        "SELECT function, module, hosts, samples, weight FROM top_functions ORDER BY samples DESC, function",
        "SELECT host, minute, function, samples FROM function_minutes ORDER BY host, minute, samples DESC, function",
        "SELECT host, requests, slow, max_duration_ns FROM slow_requests_by_host ORDER BY host",
        "SELECT result, id, duration_ns, cause_kind FROM slow_requests ORDER BY duration_ns DESC, id",
    ];
    let out = Command::new("python3")
        .args([script, path_str(&f.root), views])
        .args(queries)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "spark (scripts/install-deps.sh installs pyspark): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers = String::from_utf8_lossy(&out.stdout);
    let answers: Vec<&str> = answers.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(answers.len(), queries.len(), "{answers:?}");
    for (sql, answer) in queries.iter().zip(answers) {
        let ours = query_root(path_str(&f.root), sql);
        let spark: Vec<Value> =
            serde_json::from_str(answer).unwrap_or_else(|e| panic!("{e}: {answer}"));
        assert!(!ours.is_empty(), "{sql}");
        assert_eq!(ours, spark, "{sql}");
    }
}

/// `kairos ARGS` with moto's S3 server on `port` as the object store.
fn s3_kairos(port: u16, args: &[&str]) -> Run {
    let endpoint = format!("http://127.0.0.1:{port}");
    let env = [
        ("AWS_ACCESS_KEY_ID", "kairos"),
        ("AWS_SECRET_ACCESS_KEY", "kairos-secret"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
    ];
    kairos_env(args, &env)
}

#[test]
fn an_s3_root_is_published_and_queried_like_a_local_one() {
    let f = fleet();
    let port = free_port();
    let _server = Running(
        Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto's S3 server (scripts/install-deps.sh installs it)"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "moto's S3 server did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let made = Command::new("python3")
        .args(["-c", "import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], method='PUT'))", &format!("http://127.0.0.1:{port}/fleet")])
        .status()
        .unwrap();
    assert!(made.success(), "bucket not made");
    let mut args = vec!["publish", "--root", "s3://fleet/prod"];
    for r in f.hotspots.iter().chain([&f.latency]) {
        args.extend(["-r", path_str(r)]);
    }
    s3_kairos(port, &args).ok();
    for view in ["top_functions", "function_minutes", "slow_requests_by_host"] {
        let remote = s3_kairos(
            port,
            &["query", "--root", "s3://fleet/prod", "-f", "csv", view],
        )
        .ok()
        .stdout;
        let local = kairos(&["query", "--root", path_str(&f.root), "-f", "csv", view])
            .ok()
            .stdout;
        assert_eq!(remote, local, "{view}");
    }
    let again = s3_kairos(
        port,
        &[
            "publish",
            "--root",
            "s3://fleet/prod",
            "-r",
            path_str(&f.hotspots[0]),
        ],
    );
    assert_ne!(again.code, 0);
    assert!(
        again.stderr.contains("is already published"),
        "{}",
        again.stderr
    );
    let missing = s3_kairos(
        port,
        &["query", "--root", "s3://no-such-bucket/x", "top_functions"],
    );
    assert_ne!(missing.code, 0);
    assert!(
        missing.stderr.contains("AWS_ENDPOINT_URL"),
        "{}",
        missing.stderr
    );
}

#[test]
fn bad_queries_and_roots_are_said_in_one_sentence() {
    let f = fleet();
    let root = path_str(&f.root);
    let bad = kairos(&["query", "--root", root, "SELECT nope FROM samples"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("the query failed") && bad.stderr.contains("samples, stacks"),
        "{}",
        bad.stderr
    );
    let empty = tempdir();
    let none = kairos(&["query", "--root", path_str(empty.path()), "top_functions"]);
    assert!(none.stderr.contains("kairos publish"), "{}", none.stderr);
    let gs = kairos(&["query", "--root", "gs://b/x", "top_functions"]);
    assert!(
        gs.stderr.contains("gs:// is not supported"),
        "{}",
        gs.stderr
    );
    let only_hotspots = kairos(&["query", "-r", path_str(&f.hotspots[0]), "slow_requests"]);
    assert!(
        only_hotspots.stderr.contains("needs the table requests"),
        "{}",
        only_hotspots.stderr
    );
    let listed = kairos(&["query", "-r", path_str(&f.hotspots[0]), "--views"])
        .ok()
        .stdout;
    assert!(
        listed.contains("top_functions") && listed.contains("Not here"),
        "{listed}"
    );
}
