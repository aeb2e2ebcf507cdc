//! `kairos agent` against a real OpenTelemetry Collector on 127.0.0.1 (built from its Go
//! modules by scripts/otelcol/build.sh and cached): the collector's OTLP receiver takes
//! the agent's windows and its OTLP/HTTP exporter hands them on to a small HTTP server that
//! keeps each request (tests/support/http_sink.py). What came out is read as a backend
//! would, resolving both forms of attribute keys and values (the collector rewrites them
//! as string-table indexes), and checked against the truth of the `shares` sample.

#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::{free_port, kairos_bin, kairos_env, sample, tempdir, Running};
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::profiles::v1development as pd;
use prost::Message;

/// The collector binary, or None (and why, printed) when it cannot be built here. Built
/// once per run of these tests (the script also takes a lock, for other processes).
fn collector() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let built = BUILT.get_or_init(build_collector).clone();
    if built.is_none() {
        println!("NOT RUN: the OpenTelemetry Collector cannot be built here (the build script said why on stderr)");
    }
    built
}

fn build_collector() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/otelcol/build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    if out.status.code() == Some(3) {
        return None;
    }
    assert!(out.status.success(), "{} failed", script.display());
    let path = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    Some(PathBuf::from(path))
}

/// A free port whose next one is free too (the collector's HTTP and gRPC receivers).
fn free_port_pair() -> u16 {
    loop {
        let first = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        if port < u16::MAX && TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

/// The sink, started: (process, the directory it writes to, its port).
fn sink(dir: &Path) -> (Running, PathBuf, u16) {
    sink_answering(dir, "200")
}

/// The sink answering every request with `answer` (an HTTP status, or "hang").
fn sink_answering(dir: &Path, answer: &str) -> (Running, PathBuf, u16) {
    sink_with(dir, answer, &[])
}

/// The sink with its environment (TLS, a required Authorization header).
fn sink_with(dir: &Path, answer: &str, env: &[(&str, &str)]) -> (Running, PathBuf, u16) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/http_sink.py");
    let port_file = dir.join("sink.port");
    let got = dir.join("got");
    let child = Command::new("python3")
        .arg(script)
        .arg(&port_file)
        .arg(&got)
        .arg(answer)
        .envs(env.iter().copied())
        .spawn()
        .unwrap();
    let running = Running(child);
    let t = Instant::now();
    while !port_file.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the HTTP sink did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let port = std::fs::read_to_string(&port_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (running, got, port)
}

/// The collector, started with its OTLP/HTTP receiver on `port` and its OTLP/gRPC one on
/// the port after it, handing on to the sink synchronously (no queue: the receiver answers
/// once the next hop has the profiles, so order is kept and a killed collector holds
/// nothing).
fn start_collector(bin: &Path, dir: &Path, port: u16, sink_port: u16) -> Running {
    let grpc_port = port + 1;
    let config = dir.join("collector.yaml");
    std::fs::write(
        &config,
        format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n      grpc:\n        endpoint: 127.0.0.1:{grpc_port}\n\
             exporters:\n  otlp_http:\n    endpoint: http://127.0.0.1:{sink_port}\n    compression: none\n    sending_queue:\n      enabled: false\n    retry_on_failure:\n      enabled: false\n\
             service:\n  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [otlp_http]\n  telemetry:\n    metrics:\n      level: none\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("collector.log")).unwrap();
    let child = Command::new(bin)
        .arg("--config")
        .arg(&config)
        .arg("--feature-gates=+service.profilesSupport")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let running = Running(child);
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
        || std::net::TcpStream::connect(("127.0.0.1", grpc_port)).is_err()
    {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the collector did not listen on {port}: {}",
            std::fs::read_to_string(dir.join("collector.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    running
}

/// A collector on 127.0.0.1 handing on to a sink: where a test sends, what came out.
struct Pipeline {
    _sink: Running,
    collector: Option<Running>,
    bin: PathBuf,
    dir: PathBuf,
    got: PathBuf,
    sink_port: u16,
    /// The collector's OTLP/HTTP port.
    port: u16,
}

impl Pipeline {
    /// None (and NOT RUN said) when the collector cannot be built here.
    fn start(dir: &Path) -> Option<Pipeline> {
        let bin = collector()?;
        let (sink, got, sink_port) = sink(dir);
        let port = free_port_pair();
        let collector = start_collector(&bin, dir, port, sink_port);
        Some(Pipeline {
            _sink: sink,
            collector: Some(collector),
            bin,
            dir: dir.to_path_buf(),
            got,
            sink_port,
            port,
        })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The collector's OTLP/gRPC address.
    fn grpc_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port + 1)
    }

    fn kill_collector(&mut self) {
        self.collector = None;
    }

    fn restart_collector(&mut self) {
        self.collector = Some(start_collector(
            &self.bin,
            &self.dir,
            self.port,
            self.sink_port,
        ));
    }
}

/// Every request the sink received, in order.
fn received(got: &Path) -> Vec<ExportProfilesServiceRequest> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(got)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "bin"));
    files.sort();
    files
        .iter()
        .map(|p| {
            ExportProfilesServiceRequest::decode(std::fs::read(p).unwrap().as_slice()).unwrap()
        })
        .collect()
}

/// A value as text, whichever form it is in.
fn text(d: &pd::ProfilesDictionary, v: &Option<AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::StringValueStrindex(i)) => d.string_table[*i as usize].clone(),
        Some(Value::IntValue(i)) => i.to_string(),
        other => format!("{other:?}"),
    }
}

fn key(d: &pd::ProfilesDictionary, kv: &KeyValue) -> String {
    if kv.key.is_empty() {
        d.string_table[kv.key_strindex as usize].clone()
    } else {
        kv.key.clone()
    }
}

/// Resource attributes of a resource, by key.
fn resource(d: &pd::ProfilesDictionary, rp: &pd::ResourceProfiles) -> BTreeMap<String, String> {
    rp.resource
        .iter()
        .flat_map(|r| &r.attributes)
        .map(|kv| (key(d, kv), text(d, &kv.value)))
        .collect()
}

/// A dictionary attribute as (key, value).
fn attribute(d: &pd::ProfilesDictionary, i: i32) -> (String, String) {
    let a = &d.attribute_table[i as usize];
    (
        d.string_table[a.key_strindex as usize].clone(),
        text(d, &a.value),
    )
}

/// The first of `share_a`, `share_b`, `share_c` on a sample's stack from the leaf (the
/// time in the clock reads they make is theirs, as the program counts it).
fn share_function(d: &pd::ProfilesDictionary, s: &pd::Sample) -> Option<String> {
    d.stack_table[s.stack_index as usize]
        .location_indices
        .iter()
        .filter_map(|&loc| d.location_table[loc as usize].lines.first())
        .map(|l| {
            d.string_table[d.function_table[l.function_index as usize].name_strindex as usize]
                .clone()
        })
        .find(|name| name.starts_with("share_"))
}

fn agent(args: &[&str]) -> Child {
    Command::new(kairos_bin())
        .arg("agent")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn shares_and_labels_through_a_real_collector() {
    shares_and_labels(false);
}

#[test]
fn shares_and_labels_through_a_real_collector_over_grpc() {
    shares_and_labels(true);
}

/// The shares of the `shares` sample and the labels, sent over OTLP/HTTP or OTLP/gRPC.
fn shares_and_labels(grpc: bool) {
    // One test at a time: both sample processes named shares.
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let Some(pipeline) = Pipeline::start(dir.path()) else {
        return;
    };
    let (url, protocol) = if grpc {
        (pipeline.grpc_url(), "grpc")
    } else {
        (pipeline.url(), "http/protobuf")
    };
    let truth = Command::new(sample("shares"))
        .args(["9", "5:3:2"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let shares_pid = truth.id();
    let spool = dir.path().join("spool");
    let run = agent(&[
        "--otlp",
        &url,
        "--otlp-protocol",
        protocol,
        "--comm",
        "shares",
        "-F",
        "199",
        "--window",
        "2",
        "-d",
        "6",
        "--spool",
        spool.to_str().unwrap(),
        "--label",
        "team=orders",
        "--label",
        "service.name=shares-test",
    ])
    .wait_with_output()
    .unwrap();
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{log}");
    let truth = truth.wait_with_output().unwrap();
    let truth = String::from_utf8(truth.stdout).unwrap();
    let expected: BTreeMap<String, f64> = truth
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[0].starts_with("share_"))
        .map(|w| (w[0].to_string(), w[1].parse().unwrap()))
        .collect();
    assert_eq!(expected.len(), 3, "{truth}");

    let requests = received(&pipeline.got);
    assert!(
        requests.len() >= 2,
        "windows received: {}\n{log}",
        requests.len()
    );
    let mut by_function: BTreeMap<String, i64> = BTreeMap::new();
    let mut windows = BTreeSet::new();
    for req in &requests {
        let d = req.dictionary.as_ref().unwrap();
        for rp in &req.resource_profiles {
            let attrs = resource(d, rp);
            assert_eq!(
                attrs.get("process.pid").map(String::as_str),
                Some(shares_pid.to_string().as_str()),
                "{attrs:?}"
            );
            assert_eq!(
                attrs.get("process.executable.name").map(String::as_str),
                Some("shares")
            );
            assert_eq!(attrs.get("team").map(String::as_str), Some("orders"));
            assert_eq!(
                attrs.get("service.name").map(String::as_str),
                Some("shares-test")
            );
            assert!(
                attrs.get("host.name").is_some_and(|h| !h.is_empty()),
                "{attrs:?}"
            );
            assert!(attrs.contains_key("os.version"), "{attrs:?}");
            for p in rp.scope_profiles.iter().flat_map(|s| &s.profiles) {
                let pattrs: BTreeMap<_, _> = p
                    .attribute_indices
                    .iter()
                    .map(|&i| attribute(d, i))
                    .collect();
                windows.insert(pattrs["kairos.agent.window"].parse::<u64>().unwrap());
                assert!(
                    pattrs.contains_key("kairos.agent.cpu_millipercent"),
                    "{pattrs:?}"
                );
                for s in &p.samples {
                    let sattrs: BTreeMap<_, _> = s
                        .attribute_indices
                        .iter()
                        .map(|&i| attribute(d, i))
                        .collect();
                    assert!(sattrs.contains_key("thread.id"), "{sattrs:?}");
                    assert_eq!(s.values.len(), s.timestamps_unix_nano.len());
                    if let Some(f) = share_function(d, s) {
                        *by_function.entry(f).or_default() += s.values.iter().sum::<i64>();
                    }
                }
            }
        }
        // The build id of the sample's binary went with its mapping.
        assert!(
            d.mapping_table.iter().any(|m| {
                d.string_table[m.filename_strindex as usize].ends_with("/shares")
                    && m.attribute_indices
                        .iter()
                        .any(|&i| attribute(d, i).0 == "process.executable.build_id.gnu")
            }),
            "no mapping of shares with its build id"
        );
    }
    let total: i64 = by_function.values().sum();
    assert!(total > 0, "no samples in share_a/b/c: {by_function:?}");
    for (f, want) in &expected {
        let got = by_function.get(f).copied().unwrap_or(0) as f64 / total as f64;
        println!(
            "{f}: {:.1}% in the collector's output, {:.1}% by the program's clock",
            100.0 * got,
            100.0 * want
        );
        assert!(
            (got - want).abs() <= 0.03,
            "{f}: {got:.3} against {want:.3} ({by_function:?})"
        );
    }
    assert_eq!(
        windows.len(),
        requests.len(),
        "one request per window: {windows:?}"
    );
}

#[test]
fn a_collector_killed_and_restarted_loses_no_window_and_keeps_order() {
    // One test at a time: both sample processes named shares.
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let Some(mut pipeline) = Pipeline::start(dir.path()) else {
        return;
    };
    let spool = dir.path().join("spool");
    let busy = shares(&["30", "1:1:1"]);
    let run = agent(&[
        "--otlp",
        &pipeline.url(),
        "--comm",
        "shares",
        "-F",
        "99",
        "--window",
        "1",
        "-d",
        "10",
        "--flush-timeout",
        "20",
        "--spool",
        spool.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(2500));
    pipeline.kill_collector();
    std::thread::sleep(Duration::from_secs(4));
    pipeline.restart_collector();
    let out = run.wait_with_output().unwrap();
    drop(busy);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("windows wait in the spool"),
        "the outage was not said:\n{log}"
    );
    assert!(
        log.contains("answers again"),
        "the recovery was not said:\n{log}"
    );
    let mut order = Vec::new();
    for req in received(&pipeline.got) {
        let d = req.dictionary.as_ref().unwrap();
        for p in req
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .flat_map(|s| &s.profiles)
        {
            let w = p
                .attribute_indices
                .iter()
                .map(|&i| attribute(d, i))
                .find(|(k, _)| k == "kairos.agent.window")
                .map(|(_, v)| v.parse::<u64>().unwrap())
                .unwrap();
            if order.last() != Some(&w) {
                order.push(w);
            }
        }
    }
    let recorded = log.matches("queued for otlp").count() as u64;
    assert!(recorded >= 8, "{log}");
    let firsts: Vec<u64> = order.iter().fold(Vec::new(), |mut seen, &w| {
        if !seen.contains(&w) {
            seen.push(w);
        }
        seen
    });
    assert_eq!(
        firsts,
        (0..recorded).collect::<Vec<_>>(),
        "every window, in order (as received: {order:?})\n{log}"
    );
    assert!(log.contains("0 waiting"), "{log}");
}

/// The `shares` sample with these arguments, ended when dropped.
fn shares(args: &[&str]) -> Running {
    Running(
        Command::new(sample("shares"))
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// Runs the agent to its end; (exit status success, its log).
fn agent_log(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let run = kairos_env(&[&["agent"], args].concat(), env);
    (run.code == 0, run.stderr)
}

#[test]
fn a_refusing_backend_is_said_once_per_window_and_not_retried() {
    // One test at a time: the sample processes are all named shares.
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let (_sink, got, port) = sink_answering(dir.path(), "400");
    let spool = dir.path().join("spool");
    let _busy = shares(&["10", "1:1:1"]);
    let (ok, log) = agent_log(
        &[
            "--comm",
            "shares",
            "-F",
            "99",
            "--window",
            "1",
            "-d",
            "3",
            "--spool",
            spool.to_str().unwrap(),
        ],
        &[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            &format!("http://127.0.0.1:{port}"),
        )],
    );
    assert!(ok, "{log}");
    let refused = log
        .matches("(HTTP 400: profiles are not accepted here); it is not sent again")
        .count();
    let windows = log.matches("queued for otlp").count();
    assert!(windows >= 2, "{log}");
    assert_eq!(refused, windows, "each window refused once:\n{log}");
    assert_eq!(received(&got).len(), windows, "no window sent twice");
    assert!(
        log.contains("0 sent") && log.contains(&format!("{windows} refused")),
        "{log}"
    );
}

#[test]
fn a_backend_that_never_answers_times_out_and_the_windows_wait() {
    // One test at a time: the sample processes are all named shares.
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let (_sink, _got, port) = sink_answering(dir.path(), "hang");
    let spool = dir.path().join("spool");
    let _busy = shares(&["10", "1:1:1"]);
    let (ok, log) = agent_log(
        &[
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
            "--comm",
            "shares",
            "-F",
            "99",
            "--window",
            "1",
            "-d",
            "2",
            "--flush-timeout",
            "2",
            "--spool",
            spool.to_str().unwrap(),
        ],
        &[("OTEL_EXPORTER_OTLP_TIMEOUT", "500")],
    );
    assert!(ok, "{log}");
    assert!(log.contains("no answer within the timeout"), "{log}");
    let queued = log.matches("queued for otlp").count();
    // Nothing was accepted: every window is still in the spool for the next start.
    let waiting = std::fs::read_dir(spool.join("otlp"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "win"))
        .count();
    assert_eq!(waiting, queued, "{log}");
    assert!(log.contains(&format!("{queued} waiting")), "{log}");
}

#[test]
fn the_service_exiting_ends_the_agent_after_its_last_window() {
    // One test at a time: the sample processes are all named shares.
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let (_sink, got, port) = sink(dir.path());
    let service = shares(&["2", "1:1:1"]);
    let pid = service.0.id().to_string();
    let spool = dir.path().join("spool");
    let t = Instant::now();
    let (ok, log) = agent_log(
        &[
            "-p",
            &pid,
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
            "-F",
            "99",
            "--window",
            "10",
            "--spool",
            spool.to_str().unwrap(),
        ],
        &[],
    );
    assert!(ok, "{log}");
    assert!(
        t.elapsed() < Duration::from_secs(9),
        "the agent waited for the window's end: {log}"
    );
    assert!(log.contains("the process ended"), "{log}");
    assert_eq!(received(&got).len(), 1, "the last window was sent:\n{log}");
}

#[test]
fn a_window_with_no_samples_is_said_and_nothing_is_sent() {
    let dir = tempdir();
    let (_sink, got, port) = sink(dir.path());
    let spool = dir.path().join("spool");
    let (ok, log) = agent_log(
        &[
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
            "--comm",
            "no-such-program",
            "--window",
            "1",
            "-d",
            "1",
            "--spool",
            spool.to_str().unwrap(),
        ],
        &[],
    );
    assert!(ok, "{log}");
    assert!(
        log.contains("window 0: no samples of the processes asked for"),
        "{log}"
    );
    assert!(received(&got).is_empty());
}

#[test]
fn a_full_spool_disk_drops_the_window_and_says_how_to_fix_it() {
    if unsafe { libc::geteuid() } != 0 {
        println!("NOT RUN: needs root to mount a small tmpfs as the spool");
        return;
    }
    let dir = tempdir();
    let spool = dir.path().join("spool");
    std::fs::create_dir(&spool).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
        .arg(&spool)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount of a tmpfs failed");
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(spool.clone());
    let _turn = common::cpu_turn();
    // A full disk: no window can be written.
    std::fs::write(spool.join("filler"), vec![0u8; 8192]).unwrap();
    let _busy = shares(&["10", "1:1:1"]);
    let port = free_port();
    let (ok, log) = agent_log(
        &[
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
            "-F",
            "199",
            "--window",
            "1",
            "-d",
            "2",
            "--flush-timeout",
            "1",
            "--spool",
            spool.to_str().unwrap(),
        ],
        &[],
    );
    assert!(ok, "{log}");
    assert!(
        log.contains("cannot be spooled for otlp")
            && log.contains("free space there or give --spool on another disk"),
        "{log}"
    );
    assert!(
        !log.contains("0 dropped"),
        "the drop was not counted: {log}"
    );
}

/// The agent converts its windows on one lasting symbolising thread: a recording
/// converted there, twice (the second time from what it kept), names every frame as a
/// fresh conversion does.
#[test]
fn a_lasting_symbolizer_names_frames_as_a_fresh_one() {
    // One test at a time: the sample processes are all named shares.
    let _turn = common::cpu_turn();
    use kairos_convert::{Background, ConvertOptions, LastingSymbolizer};
    let dir = tempdir();
    let result = dir.path().join("r");
    common::kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        result.to_str().unwrap(),
        "-k",
        "sampling-interval-us=500",
        "--",
        sample("shares").to_str().unwrap(),
        "0.5",
    ])
    .ok();
    let file = kairos_perf_data::PerfFile::open(result.join("perf.data")).unwrap();
    let mut opts = ConvertOptions::default();
    opts.symbolizer.kallsyms = Some(result.join("kallsyms")).filter(|k| k.exists());
    let names = |background: &Background| {
        let c = kairos_convert::convert_with(&file, &opts, background, &mut |_| {});
        let mut names: Vec<String> = c
            .profile
            .frames
            .iter()
            .map(|f| f.function.clone())
            .collect();
        names.sort();
        (names, c.profile.samples.len())
    };
    let fresh = names(&Background::default());
    assert!(fresh.0.iter().any(|n| n == "share_a"), "{:?}", fresh.0);
    let lasting = Background {
        lasting: Some(LastingSymbolizer::start(opts.symbolizer.clone()).unwrap()),
        ..Background::default()
    };
    assert_eq!(
        names(&lasting),
        fresh,
        "first conversion on the lasting thread"
    );
    assert_eq!(
        names(&lasting),
        fresh,
        "second conversion, from what it kept"
    );
}

/// `--latency`: the flight recorder's slow requests reach the backend through the
/// collector as profiles of their own, each with its id, duration and cause, and each is
/// a request the program itself logged as slower than the threshold.
#[test]
fn slow_requests_reach_the_backend_as_profiles_of_their_own() {
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let Some(pipeline) = Pipeline::start(dir.path()) else {
        return;
    };
    let log_file = dir.path().join("orders.log");
    let service = Running(
        Command::new(sample("orders"))
            .arg(&log_file)
            .arg("60000")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let spool = dir.path().join("spool");
    // A Pyroscope-style endpoint beside the collector: a pprof profile per slow request.
    let pyroscope_dir = dir.path().join("pyroscope");
    std::fs::create_dir_all(&pyroscope_dir).unwrap();
    let (_pyroscope, pprof_got, pprof_port) = sink(&pyroscope_dir);
    let (ok, log) = agent_log(
        &[
            "-p",
            &service.0.id().to_string(),
            "--latency",
            "marker",
            "--latency-knob",
            "slower-than=150us",
            "--window",
            "1",
            "--otlp",
            &pipeline.url(),
            "--pprof",
            &format!("http://127.0.0.1:{pprof_port}/ingest"),
            "--spool",
            spool.to_str().unwrap(),
        ],
        &[],
    );
    assert!(ok, "{log}");
    // id -> duration by the program's own clock.
    let logged: BTreeMap<u64, u64> = std::fs::read_to_string(&log_file)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (start, end): (u64, u64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
            (f[0].parse().unwrap(), end - start)
        })
        .collect();
    let mut slow = 0;
    let mut sampled = 0;
    for req in received(&pipeline.got) {
        let d = req.dictionary.as_ref().unwrap();
        for p in req
            .resource_profiles
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .flat_map(|s| &s.profiles)
        {
            let a: BTreeMap<String, String> = p
                .attribute_indices
                .iter()
                .map(|&i| attribute(d, i))
                .collect();
            let Some(id) = a.get("request.id") else {
                continue;
            };
            slow += 1;
            sampled += usize::from(!p.samples.is_empty());
            let id: u64 = id.parse().unwrap();
            let duration: u64 = a["request.duration_ns"].parse().unwrap();
            assert!(duration >= 150_000, "{a:?}");
            assert!(!a["request.cause"].is_empty(), "{a:?}");
            let truth = logged[&id];
            assert!(
                truth.abs_diff(duration) * 10 <= truth,
                "request {id}: {duration} ns sent, {truth} ns by the program's clock"
            );
        }
    }
    let windows = log.matches("slow requests (slower than").count();
    assert!(
        windows >= 1 && slow >= 10,
        "{slow} slow requests in {windows} windows:\n{log}"
    );
    // The pprof endpoint got the CPU windows and one profile per slow request that was
    // sampled, labelled with the request's attributes.
    let labelled = std::fs::read_dir(&pprof_got)
        .unwrap()
        .flatten()
        .filter(|e| {
            let mut raw = Vec::new();
            let body = std::fs::read(e.path()).unwrap();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut raw)
                .unwrap();
            let has = |s: &str| raw.windows(s.len()).any(|w| w == s.as_bytes());
            has("request_id") && has("request_cause_kind") && has("request_duration_ns")
        })
        .count();
    assert!(sampled > 0, "no slow request was sampled:\n{log}");
    assert_eq!(labelled, sampled, "pprof profiles of slow requests:\n{log}");
}

/// `--cgroup`: of two programs of one name, only the one in the cgroup is sent (a cgroup
/// made for the test, under cgroup v2 or the v1 pids controller, whichever the machine has).
#[test]
fn only_the_processes_of_the_cgroup_are_sent() {
    let root = Path::new("/sys/fs/cgroup");
    let parent = if root.join("cgroup.controllers").exists() {
        root.to_path_buf()
    } else if root.join("pids/cgroup.procs").exists() {
        root.join("pids")
    } else {
        println!("NOT RUN: no cgroup file system to make a cgroup in");
        return;
    };
    let cgroup = parent.join(format!("kairos-agent-test-{}", std::process::id()));
    if std::fs::create_dir(&cgroup).is_err() {
        println!(
            "NOT RUN: cannot make a cgroup under {} (needs root)",
            parent.display()
        );
        return;
    }
    // Removed last (the processes in it are ended first, as they were started later).
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _remove = Remove(cgroup.clone());
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let (_sink, got, port) = sink(dir.path());
    let (inside, outside) = (shares(&["6", "1:1:1"]), shares(&["6", "1:1:1"]));
    std::fs::write(cgroup.join("cgroup.procs"), inside.0.id().to_string()).unwrap();
    let spool = dir.path().join("spool");
    let (ok, log) = agent_log(
        &[
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
            "--cgroup",
            cgroup.to_str().unwrap(),
            "-F",
            "99",
            "--window",
            "1",
            "-d",
            "2",
            "--spool",
            spool.to_str().unwrap(),
        ],
        &[],
    );
    let (inside_pid, outside_pid) = (inside.0.id().to_string(), outside.0.id().to_string());
    drop(inside);
    drop(outside);
    assert!(ok, "{log}");
    let mut pids = BTreeSet::new();
    for req in received(&got) {
        let d = req.dictionary.as_ref().unwrap();
        for rp in &req.resource_profiles {
            pids.insert(resource(d, rp)["process.pid"].clone());
        }
    }
    assert!(
        pids.contains(&inside_pid),
        "{pids:?} (inside {inside_pid}, outside {outside_pid})\n{log}"
    );
    assert!(!pids.contains(&outside_pid), "{pids:?}\n{log}");
    assert_eq!(pids.len(), 1, "{pids:?}");
}

/// TLS with the backend's own certificate authority (`--tls-ca`) and an authorisation
/// header: accepted with both; without the authority the connection is refused and the
/// windows wait; with a wrong header the backend's 401 is said and not retried.
#[test]
fn tls_with_a_private_authority_and_an_auth_header() {
    let dir = tempdir();
    // A certificate authority of the backend's own, and the server's certificate it signed.
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (ca, ca_key, cert, key, csr) = (
        p("ca.pem"),
        p("ca.key"),
        p("cert.pem"),
        p("key.pem"),
        p("req.csr"),
    );
    let ext = p("ext.cnf");
    std::fs::write(
        &ext,
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    let steps: [&[&str]; 3] = [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=test CA",
            "-keyout",
            &ca_key,
            "-out",
            &ca,
        ],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            &key,
            "-out",
            &csr,
        ],
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            &ext,
            "-out",
            &cert,
        ],
    ];
    for step in steps {
        let made = Command::new("openssl")
            .args(step)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !made.is_ok_and(|s| s.success()) {
            println!(
                "NOT RUN: openssl could not make the certificates ({})",
                step.join(" ")
            );
            return;
        }
    }
    let _turn = common::cpu_turn();
    let (_sink, got, port) = sink_with(
        dir.path(),
        "200",
        &[
            ("SINK_TLS_CERT", &cert),
            ("SINK_TLS_KEY", &key),
            ("SINK_AUTHORIZATION", "Bearer s3cret"),
        ],
    );
    let url = format!("https://127.0.0.1:{port}");
    let _busy = shares(&["10", "1:1:1"]);
    let run = |spool: &str, extra: &[&str]| {
        let spool = dir.path().join(spool);
        let mut args = vec![
            "--otlp", &url, "--comm", "shares", "--window", "1", "-d", "1",
        ];
        args.extend(["--flush-timeout", "2", "--spool", spool.to_str().unwrap()]);
        args.extend_from_slice(extra);
        agent_log(&args, &[])
    };
    let (ok, log) = run(
        "s1",
        &["--tls-ca", &ca, "--header", "Authorization=Bearer s3cret"],
    );
    assert!(ok && log.contains("1 sent"), "{log}");
    assert_eq!(received(&got).len(), 1);
    let (ok, log) = run("s2", &["--header", "Authorization=Bearer s3cret"]);
    assert!(
        ok && log.contains("cannot take window 0 now") && log.contains("1 waiting"),
        "{log}"
    );
    let (ok, log) = run(
        "s3",
        &["--tls-ca", &ca, "--header", "Authorization=Bearer wrong"],
    );
    assert!(
        ok && log.contains("(HTTP 401: missing or wrong Authorization); it is not sent again"),
        "{log}"
    );
    assert_eq!(received(&got).len(), 1, "nothing else was taken");
}

/// libfaketime's preload library for threaded programs, which moves the agent's wall
/// clock (and not its monotonic one) when a file says so; None when it is not installed.
fn faketime_library() -> Option<PathBuf> {
    let dirs = std::fs::read_dir("/usr/lib").ok()?;
    dirs.flatten()
        .map(|d| d.path().join("faketime/libfaketimeMT.so.1"))
        .chain([PathBuf::from("/usr/lib/faketime/libfaketimeMT.so.1")])
        .find(|p| p.is_file())
}

#[test]
fn a_host_clock_jump_is_said_and_sample_times_follow_the_new_clock() {
    let Some(lib) = faketime_library() else {
        panic!("libfaketime is not installed (scripts/install-deps.sh installs faketime)");
    };
    let _turn = common::cpu_turn();
    let dir = tempdir();
    let (_sink, got, port) = sink(dir.path());
    let spool = dir.path().join("spool");
    let offset = dir.path().join("clock-offset");
    std::fs::write(&offset, "+0\n").unwrap();
    let _busy = shares(&["8", "1:1:1"]);
    let run = Command::new(kairos_bin())
        .arg("agent")
        .args([
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
            "--comm",
            "shares",
        ])
        .args(["-F", "99", "--window", "1", "-d", "5", "--spool"])
        .arg(&spool)
        .env("LD_PRELOAD", &lib)
        .env("FAKETIME_TIMESTAMP_FILE", &offset)
        .env("FAKETIME_NO_CACHE", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // The host's clock jumps an hour ahead, as a wrong NTP step or an operator would.
    let next = dir.path().join("clock-offset.next");
    std::fs::write(&next, "+3600\n").unwrap();
    std::fs::rename(&next, &offset).unwrap();
    let out = run.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("the host clock moved by +3600"), "{log}");
    let now_ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let times: Vec<u64> = received(&got)
        .iter()
        .map(|req| {
            req.resource_profiles
                .iter()
                .flat_map(|rp| &rp.scope_profiles)
                .flat_map(|sp| &sp.profiles)
                .flat_map(|p| &p.samples)
                .flat_map(|s| s.timestamps_unix_nano.iter().copied())
                .max()
                .unwrap_or(0)
        })
        .collect();
    assert!(times.len() >= 4, "windows received: {times:?}\n{log}");
    let hour = 3_600_000_000_000u64;
    assert!(
        times[0] > 0 && times[0] < now_ns,
        "the first window is on the old clock: {times:?}"
    );
    let last = *times.last().unwrap();
    assert!(
        last > now_ns + hour - 60_000_000_000,
        "the last window's samples are on the new clock: {last} against now {now_ns}\n{log}"
    );
}
