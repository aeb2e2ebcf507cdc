//! End-to-end collections on this machine with the cpu-clock event: launch, attach,
//! system-wide, duration, Ctrl-C and a crashing target each leave a complete result that
//! `kairos report` and `perf script` both read.

mod common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{kairos, path_str, sample, tempdir};
use serde_json::Value;

fn manifest(dir: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn perf_script_comms(dir: &std::path::Path) -> String {
    let out = Command::new("perf").args(["script", "-F", "comm,ip,sym", "-i"]).arg(dir.join("perf.data")).output().unwrap();
    assert!(out.status.success(), "perf script refused our perf.data: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn launch_records_a_complete_self_describing_result() {
    let dir = tempdir();
    let r = dir.path().join("r");
    let out = kairos(&["collect", "hotspots", "-q", "-r", path_str(&r), "--", path_str(&sample("transitions")), "600"]).ok();
    assert!(out.stdout.contains("Summary") && out.stdout.contains("Result:"), "{}", out.stdout);

    let m = manifest(&r);
    assert_eq!(m["kind"], "hotspots");
    assert_eq!(m["knobs"]["sampling-interval-us"], "1000");
    assert_eq!(m["target_exit"]["kind"], "code");
    assert_eq!(m["stopped_by"], "target exited");
    let event = m["event"]["name"].as_str().unwrap();
    assert!(event == "cpu-clock" || event == "cycles", "{event}");
    assert!(m["event"]["reason"].as_str().is_some_and(|r| !r.is_empty()));
    let samples = m["counts"]["samples"].as_u64().unwrap();
    assert!(samples > 100, "{samples} samples for ~0.4 s at 1 ms");
    // Every missing capability says why.
    let caps = m["capabilities"].as_array().unwrap();
    assert!(caps.len() > 5);
    for c in caps {
        if c["available"] == false {
            assert!(c["reason"].as_str().is_some_and(|r| !r.is_empty()), "no reason for {c}");
        }
    }
    for t in ["samples", "stacks", "frames", "modules", "threads"] {
        assert!(r.join(format!("tables/{t}.parquet")).is_file(), "{t} table missing");
    }
    // The raw records are a perf.data that perf itself reads, with our symbols in it.
    let script = perf_script_comms(&r);
    assert!(script.contains("transitions") && script.contains("p3_C"), "{}", &script[..script.len().min(2000)]);

    let hot = kairos(&["report", "hotspots", "-r", path_str(&r), "--format", "json"]).ok();
    let doc: Value = serde_json::from_str(&hot.stdout).unwrap_or_else(|e| panic!("{e}: {}", hot.stdout));
    let rows = doc.as_array().unwrap_or_else(|| panic!("not a JSON array of rows: {doc}"));
    let names: Vec<&str> = rows.iter().filter_map(|r| r["Function"].as_str()).collect();
    for f in ["p3_C", "F2", "p3_B"] {
        assert!(names.contains(&f), "{f} missing from {names:?}\n{}", hot.stdout);
    }
    // A time range selects a subset of the samples.
    let part = kairos(&["report", "hotspots", "-r", path_str(&r), "--time-range", "0.1:0.2"]).ok();
    assert!(part.stdout.contains(" of ") && part.stdout.contains("samples selected"), "{}", part.stdout);
}

#[test]
fn attach_to_a_running_process() {
    let dir = tempdir();
    let delays = dir.path().join("delays.txt");
    let mut child = Command::new(sample("spikes")).arg(&delays).arg("3").stdout(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id().to_string();
    let r = dir.path().join("r");
    kairos(&["collect", "hotspots", "-q", "-r", path_str(&r), "-d", "1", "-p", &pid]).ok();
    let _ = child.wait();
    let m = manifest(&r);
    assert_eq!(m["target"]["kind"], "pid");
    let n = m["counts"]["samples"].as_u64().unwrap();
    assert!(n > 100, "{n} samples");
    let hot = kairos(&["report", "hotspots", "-r", path_str(&r)]).ok();
    assert!(hot.stdout.contains("service_work"), "{}", hot.stdout);
}

#[test]
fn system_wide_sees_other_processes() {
    let dir = tempdir();
    let delays = dir.path().join("delays.txt");
    let mut child = Command::new(sample("spikes")).arg(&delays).arg("2").stdout(Stdio::null()).spawn().unwrap();
    let r = dir.path().join("r");
    kairos(&["collect", "hotspots", "-q", "-r", path_str(&r), "-a", "-d", "0.8"]).ok();
    let _ = child.wait();
    assert_eq!(manifest(&r)["stopped_by"], "duration elapsed");
    let procs = kairos(&["report", "hotspots", "-r", path_str(&r), "--group-by", "process"]).ok();
    assert!(procs.stdout.contains("spikes"), "{}", procs.stdout);
}

#[test]
fn duration_stops_a_long_target() {
    let dir = tempdir();
    let r = dir.path().join("r");
    kairos(&["collect", "hotspots", "-q", "-r", path_str(&r), "-d", "0.5", "--", path_str(&sample("transitions")), "1000000"]).ok();
    let m = manifest(&r);
    assert_eq!(m["stopped_by"], "duration elapsed");
    let secs = m["duration_secs"].as_f64().unwrap();
    assert!((0.4..5.0).contains(&secs), "{secs}");
    perf_script_comms(&r);
}

#[test]
fn crashing_target_leaves_a_valid_result() {
    let dir = tempdir();
    let r = dir.path().join("r");
    let script = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; kill -SEGV $$";
    let out = kairos(&["collect", "hotspots", "-q", "-r", path_str(&r), "--", "/bin/sh", "-c", script]).ok();
    assert!(out.stderr.contains("signal 11"), "{}", out.stderr);
    assert_eq!(manifest(&r)["target_exit"]["signal"], 11);
    kairos(&["report", "summary", "-r", path_str(&r)]).ok();
    perf_script_comms(&r);
}

#[test]
fn ctrl_c_ends_collection_with_a_valid_result() {
    let dir = tempdir();
    let r = dir.path().join("r");
    // Ctrl-C in a terminal signals the whole foreground process group: do the same.
    let child = Command::new(common::kairos_bin())
        .args(["collect", "hotspots", "-q", "-r", path_str(&r), "--", path_str(&sample("transitions")), "1000000"])
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let pgid = child.id() as i32;
    // SAFETY: plain kill(2) on a process group we created.
    assert_eq!(unsafe { libc::kill(-pgid, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = manifest(&r);
    let n = m["counts"]["samples"].as_u64().unwrap();
    assert!(n > 100, "{n} samples");
    assert!(m["stopped_by"].as_str().unwrap().contains("signal 2"), "{}", m["stopped_by"]);
    kairos(&["report", "hotspots", "-r", path_str(&r)]).ok();
    perf_script_comms(&r);
}
