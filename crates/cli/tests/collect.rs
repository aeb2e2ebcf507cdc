//! End-to-end collections on this machine with the cpu-clock event: launch, attach,
//! system-wide, duration, Ctrl-C and a crashing target each leave a complete result that
//! `kairos report` and `perf script` both read.
#![allow(clippy::unwrap_used, clippy::panic)] // helpers of tests: a failure is the point

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
    let out = Command::new("perf")
        .args(["script", "-F", "comm,ip,sym", "-i"])
        .arg(dir.join("perf.data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "perf script refused our perf.data: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn launch_records_a_complete_self_describing_result() {
    let dir = tempdir();
    let r = dir.path().join("r");
    let out = kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&sample("transitions")),
        "600",
    ])
    .ok();
    assert!(
        out.stdout.contains("Summary") && out.stdout.contains("Result:"),
        "{}",
        out.stdout
    );

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
            assert!(
                c["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "no reason for {c}"
            );
        }
    }
    for t in ["samples", "stacks", "frames", "modules", "threads"] {
        assert!(
            r.join(format!("tables/{t}.parquet")).is_file(),
            "{t} table missing"
        );
    }
    // The raw records are a perf.data that perf itself reads, with our symbols in it.
    let script = perf_script_comms(&r);
    assert!(
        script.contains("transitions") && script.contains("p3_C"),
        "{}",
        &script[..script.len().min(2000)]
    );

    let hot = kairos(&["report", "hotspots", "-r", path_str(&r), "--format", "json"]).ok();
    let doc: Value =
        serde_json::from_str(&hot.stdout).unwrap_or_else(|e| panic!("{e}: {}", hot.stdout));
    let rows = doc
        .as_array()
        .unwrap_or_else(|| panic!("not a JSON array of rows: {doc}"));
    let names: Vec<&str> = rows.iter().filter_map(|r| r["Function"].as_str()).collect();
    for f in ["p3_C", "F2", "p3_B"] {
        assert!(
            names.contains(&f),
            "{f} missing from {names:?}\n{}",
            hot.stdout
        );
    }
    // A time range selects a subset of the samples.
    let part = kairos(&[
        "report",
        "hotspots",
        "-r",
        path_str(&r),
        "--time-range",
        "0.1:0.2",
    ])
    .ok();
    assert!(
        part.stdout.contains(" of ") && part.stdout.contains("samples selected"),
        "{}",
        part.stdout
    );
}

#[test]
fn attach_to_a_running_process() {
    let dir = tempdir();
    let delays = dir.path().join("delays.txt");
    let mut child = Command::new(sample("spikes"))
        .arg(&delays)
        .arg("3")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id().to_string();
    let r = dir.path().join("r");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "-d",
        "1",
        "-p",
        &pid,
    ])
    .ok();
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
    let mut child = Command::new(sample("spikes"))
        .arg(&delays)
        .arg("2")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let r = dir.path().join("r");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "-a",
        "-d",
        "0.8",
    ])
    .ok();
    let _ = child.wait();
    assert_eq!(manifest(&r)["stopped_by"], "duration elapsed");
    let procs = kairos(&[
        "report",
        "hotspots",
        "-r",
        path_str(&r),
        "--group-by",
        "process",
    ])
    .ok();
    assert!(procs.stdout.contains("spikes"), "{}", procs.stdout);
}

#[test]
fn duration_stops_a_long_target() {
    let dir = tempdir();
    let r = dir.path().join("r");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "-d",
        "0.5",
        "--",
        path_str(&sample("transitions")),
        "1000000",
    ])
    .ok();
    let m = manifest(&r);
    assert_eq!(m["stopped_by"], "duration elapsed");
    let secs = m["duration_secs"].as_f64().unwrap();
    assert!((0.4..5.0).contains(&secs), "{secs}");
    perf_script_comms(&r);
}

/// `-m` sets each CPU's ring: one page cannot hold a sample with an 8 KiB stack copy, so
/// every such sample is lost, and the result says how to lose none. A ring size perf
/// would refuse is refused.
#[test]
fn mmap_pages_sets_the_ring_and_lost_records_name_the_fix() {
    let dir = tempdir();
    let r = dir.path().join("r");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-m",
        "1",
        "-k",
        "stack-unwinding=dwarf",
        "-r",
        path_str(&r),
        "--",
        path_str(&sample("transitions")),
        // About 0.3 s, ended by the program itself: the kernel writes the count of lost
        // samples with the next record that fits, here the program's exit, which a
        // collection stopped by `-d` may no longer see (one CI-like run had 0 samples
        // and 0 losses that way).
        "500",
    ])
    .ok();
    let m = manifest(&r);
    let lost = m["counts"]["lost_records"].as_u64().unwrap();
    assert!(lost > 0, "{m}");
    let notes = m["notes"].to_string();
    assert!(
        notes.contains(" records were lost: a ring buffer of 4 KiB per CPU")
            && notes.contains("(-m 4M)"),
        "{notes}"
    );
    perf_script_comms(&r);
    let refused = kairos(&["collect", "hotspots", "-m", "300", "--", "true"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("must be a power of two (e.g. 256 or 512)"),
        "{}",
        refused.stderr
    );
}

/// `-C` samples the listed CPUs only (perf script, not our reader, says which CPU each
/// sample was taken on); a CPU that is not online, or an analysis that does not sample
/// per CPU, gets a sentence.
#[test]
fn cpu_list_samples_only_those_cpus() {
    let dir = tempdir();
    let r = dir.path().join("r");
    let last = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
    let cpu = last.to_string();
    // Busy on every CPU, so that each would have samples.
    let busy = common::BusyCpus::start();
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-a",
        "-C",
        &cpu,
        "-d",
        "0.5",
        "-r",
        path_str(&r),
    ])
    .ok();
    drop(busy);
    let out = Command::new("perf")
        .args(["script", "-F", "cpu", "-i"])
        .arg(r.join("perf.data"))
        .output()
        .unwrap();
    let cpus: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|c| c.trim_matches(|ch| ch == '[' || ch == ']').to_string())
        .collect();
    let want = format!("{last:03}");
    assert_eq!(cpus.into_iter().collect::<Vec<_>>(), [want]);
    let offline = kairos(&[
        "collect",
        "hotspots",
        "-a",
        "-C",
        "4095",
        "-d",
        "0.1",
        "-r",
        path_str(&dir.path().join("x")),
    ]);
    assert_ne!(offline.code, 0);
    assert!(
        offline.stderr.contains("CPU 4095 is not online"),
        "{}",
        offline.stderr
    );
    let refused = kairos(&["collect", "memory-consumption", "-C", "0", "--", "true"]);
    assert!(
        refused
            .stderr
            .contains("-C is not available for memory-consumption"),
        "{}",
        refused.stderr
    );
}

#[test]
fn crashing_target_leaves_a_valid_result() {
    let dir = tempdir();
    let r = dir.path().join("r");
    let script = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; kill -SEGV $$";
    let out = kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "--",
        "/bin/sh",
        "-c",
        script,
    ])
    .ok();
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
        .args([
            "collect",
            "hotspots",
            "-q",
            "-r",
            path_str(&r),
            "--",
            path_str(&sample("transitions")),
            "1000000",
        ])
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = manifest(&r);
    let n = m["counts"]["samples"].as_u64().unwrap();
    assert!(n > 100, "{n} samples");
    assert!(
        m["stopped_by"].as_str().unwrap().contains("signal 2"),
        "{}",
        m["stopped_by"]
    );
    kairos(&["report", "hotspots", "-r", path_str(&r)]).ok();
    perf_script_comms(&r);
}

/// The processes whose parent is `parent` (field 4 of /proc/PID/stat).
fn children_of(parent: i32) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<i32>().ok())
            == Some(parent)
        {
            v.push(pid);
        }
    }
    v
}

/// Running and not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rfind(')').map(|i| s[i + 1..].trim_start().chars().next()))
        .is_some_and(|state| !matches!(state, Some('Z') | Some('X')))
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What happened when kairos alone got SIGINT about a second into a collection.
struct Interrupted {
    /// CLOCK_MONOTONIC when the signal was sent.
    at_ns: u64,
    /// From the signal to kairos's exit.
    exit_after: Duration,
    /// The program kairos had launched, if any.
    launched: Option<i32>,
}

/// Runs `kairos ARGS`, sends SIGINT to kairos only (as `kill -INT` or `timeout -s INT`
/// do) once it has run ~1 s, and waits up to 30 s for it to end.
fn interrupt_kairos_alone(args: &[&str], launches: bool) -> Interrupted {
    let mut k = Command::new(common::kairos_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kpid = k.id() as i32;
    let mut launched = None;
    for _ in 0..150 {
        launched = children_of(kpid).first().copied();
        if launched.is_some() || !launches {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !launches || launched.is_some(),
        "kairos {args:?} launched no program"
    );
    std::thread::sleep(Duration::from_millis(1000));
    let at_ns = monotonic_ns();
    let sent = std::time::Instant::now();
    // SAFETY: plain kill(2) of our own child, to it alone.
    assert_eq!(unsafe { libc::kill(kpid, libc::SIGINT) }, 0);
    let status = loop {
        if let Some(s) = k.try_wait().unwrap() {
            break s;
        }
        if sent.elapsed() > Duration::from_secs(30) {
            let _ = k.kill();
            let _ = k.wait();
            if let Some(c) = launched {
                // SAFETY: cleaning up the program the test made kairos launch.
                unsafe { libc::kill(c, libc::SIGKILL) };
            }
            panic!("kairos {args:?} still ran 30 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let exit_after = sent.elapsed();
    let out = k.wait_with_output().unwrap();
    assert!(
        status.success(),
        "kairos {args:?}: {status}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Interrupted {
        at_ns,
        exit_after,
        launched,
    }
}

/// `kill -INT <kairos>` stops collecting at once, as perf record does, in every analysis
/// that launches a program: the program gets SIGTERM and is gone, kairos ends within a
/// few seconds with a valid result, and no sample comes from after the interrupt.
#[test]
fn sigint_to_kairos_alone_stops_at_once_and_ends_the_launched_program() {
    let dir = tempdir();
    let transitions = sample("transitions");
    let instrumented = sample("transitions-instrumented");
    let threads = sample("threads");
    // Each would run for minutes on its own. The traces skip their untraced baseline run.
    // Seconds allowed from the signal to kairos's exit: 5, but uprobes mode pays ~5 s more
    // after any trace, interrupted or not, to close its probes (the kernel unregisters
    // them one by one, ~80 ms each here).
    let cases: [(&str, Vec<&str>, Vec<&str>, u64); 5] = [
        (
            "hotspots",
            vec![],
            vec![path_str(&transitions), "1000000"],
            5,
        ),
        (
            "system-overview",
            vec![],
            vec![path_str(&transitions), "1000000"],
            5,
        ),
        (
            "memory-consumption",
            vec![],
            vec![path_str(&threads), "2", "1000"],
            5,
        ),
        (
            "trace",
            vec!["-k", "mode=instrument", "-k", "measure-overhead=off"],
            vec![path_str(&instrumented), "1000000"],
            5,
        ),
        (
            "trace",
            vec!["-k", "mode=uprobes", "-k", "measure-overhead=off"],
            vec![path_str(&transitions), "1000000"],
            15,
        ),
    ];
    for (i, (analysis, knobs, program, max_exit)) in cases.iter().enumerate() {
        let r = dir.path().join(format!("r{i}"));
        let mut args = vec!["collect", analysis, "-q", "-r", path_str(&r)];
        args.extend(knobs);
        args.push("--");
        args.extend(program);
        let got = interrupt_kairos_alone(&args, true);
        assert!(
            got.exit_after < Duration::from_secs(*max_exit),
            "{args:?}: kairos took {:?} to stop after SIGINT",
            got.exit_after
        );
        let child = got.launched.unwrap();
        assert!(
            !alive(child),
            "{args:?}: the launched program {child} still runs"
        );
        let m = manifest(&r);
        assert!(
            m["stopped_by"]
                .as_str()
                .is_some_and(|s| s.contains("signal 2")),
            "{args:?}: {}",
            m["stopped_by"]
        );
        assert_eq!(
            m["target_exit"]["signal"], 15,
            "{args:?}: {}",
            m["target_exit"]
        );
        kairos(&["report", "summary", "-r", path_str(&r)]).ok();
        let p =
            || kairos_result::read_profile(&kairos_result::ResultDir::open(&r).unwrap()).unwrap();
        if *analysis == "trace" {
            // The last traced call (open ones end at the last event) is from before the stop.
            let p = p();
            let last = p.calls.iter().map(|c| c.end_ns).max().unwrap_or(0);
            assert!(p.calls.len() > 100, "{args:?}: {} calls", p.calls.len());
            assert!(
                last < got.at_ns + 1_000_000_000,
                "{args:?}: calls until {:.3} s after the interrupt",
                (last as f64 - got.at_ns as f64) / 1e9
            );
        }
        if matches!(*analysis, "hotspots" | "system-overview") {
            let p = p();
            let last = p.samples.iter().map(|s| s.time_ns).max().unwrap_or(0);
            assert!(
                p.samples.len() > 100,
                "{args:?}: {} samples",
                p.samples.len()
            );
            assert!(
                last < got.at_ns + 1_000_000_000,
                "{args:?}: samples until {:.3} s after the interrupt",
                (last as f64 - got.at_ns as f64) / 1e9
            );
            perf_script_comms(&r);
        }
    }
}

/// With -p the attached process is not kairos's to end: SIGINT stops the collection and
/// leaves it running.
#[test]
fn sigint_to_kairos_attached_leaves_the_process_running() {
    let dir = tempdir();
    let mut target = Command::new(sample("transitions"))
        .arg("1000000")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = target.id() as i32;
    let r = dir.path().join("r");
    let pid_s = pid.to_string();
    let got = interrupt_kairos_alone(
        &[
            "collect",
            "hotspots",
            "-q",
            "-r",
            path_str(&r),
            "-p",
            &pid_s,
        ],
        false,
    );
    let still = alive(pid);
    let _ = target.kill();
    let _ = target.wait();
    assert!(
        got.exit_after < Duration::from_secs(5),
        "kairos took {:?} to stop after SIGINT",
        got.exit_after
    );
    assert!(still, "the attached process {pid} was ended");
    assert!(manifest(&r)["stopped_by"]
        .as_str()
        .is_some_and(|s| s.contains("signal 2")));
    kairos(&["report", "hotspots", "-r", path_str(&r)]).ok();
}

/// Distribution debug files come with zlib-compressed DWARF (Debian's libc6-dbg, which
/// this machine has): a collection that samples libc must read them, not note on every
/// report that the debug info of a /usr/lib/debug/.build-id file is unusable.
#[test]
fn compressed_distribution_debug_files_are_read() {
    let dir = tempdir();
    let r = dir.path().join("r");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&sample("transitions")),
        "300",
    ])
    .ok();
    let notes = manifest(&r)["notes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let bad: Vec<_> = notes
        .iter()
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("unusable"))
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
    let summary = kairos(&["report", "summary", "-r", path_str(&r)])
        .ok()
        .stdout;
    assert!(!summary.contains("unusable"), "{summary}");
}
