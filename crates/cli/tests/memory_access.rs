//! `kairos collect memory-access` end to end, without a PMU (address sampling): the
//! memory-access recipe's false sharing found, named by allocation site, and told from
//! padding and from true sharing; object shares against a program that measures its own;
//! unoptimised (-O0) builds, whose loads overwrite their own address registers: what is
//! dropped, and the recovered addresses against the arrays the program prints; the
//! sentences for a source the machine lacks and for a static binary.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;

use common::json_report::{json_report as report, printed_threads, table_rows as rows};
use common::{kairos_in, sample, tempdir};
use serde_json::Value;

/// Collects `false_sharing ARGS` into `dir/res`; returns the program's (tid, offset) lines.
fn false_sharing(dir: &Path, args: &[&str]) -> Vec<(u64, u64)> {
    let prog = sample("false_sharing");
    let mut a = vec![
        "collect",
        "memory-access",
        "-q",
        "-r",
        "res",
        "-k",
        "sampling-interval-us=200",
        "--",
        prog.to_str().unwrap(),
    ];
    a.extend(args);
    let _turn = common::cpu_turn();
    printed_threads(&kairos_in(dir, &a).ok().stdout)
}

/// `false_sharing.c:LINE`, the line of the malloc of the counters.
fn allocation_site() -> String {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/false_sharing.c"),
    )
    .unwrap();
    let line = src
        .lines()
        .position(|l| l.contains("malloc(sizeof *object)"))
        .unwrap()
        + 1;
    format!("false_sharing.c:{line} (512 B)")
}

fn verdicts(doc: &Value) -> Vec<String> {
    rows(doc, "Cache lines")
        .iter()
        .filter(|r| r["Threads"].as_u64() > Some(1))
        .map(|r| r["Verdict"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn unpadded_counters_are_false_sharing_named_by_allocation_site() {
    let t = tempdir();
    let threads = false_sharing(t.path(), &["2", "300000000"]);
    assert_eq!(threads.len(), 2);
    let objects = report(t.path(), "memory-objects");
    let top = &rows(&objects, "Memory objects")[0];
    assert_eq!(
        top["Object"],
        allocation_site().as_str(),
        "the counters' block is the top object: {objects}"
    );
    assert_eq!(top["Kind"], "heap");
    assert!(top["Share"].as_f64().unwrap() > 90.0, "{top}");
    assert_eq!(top["Threads"], 2);

    let lines = report(t.path(), "cache-lines");
    let line = rows(&lines, "Cache lines")
        .into_iter()
        .find(|r| r["Object"] == allocation_site().as_str())
        .unwrap();
    assert_eq!(line["Verdict"], "false sharing", "{lines}");
    assert_eq!(line["Threads"], 2);
    // Every thread at its own offset, as the program printed them.
    let offsets = rows(
        &lines,
        "Offsets by thread (lines used by more than one thread)",
    );
    for (tid, offset) in &threads {
        let mine: Vec<&Value> = offsets
            .iter()
            .filter(|r| r["Thread"].as_u64() == Some(*tid))
            .collect();
        assert!(
            !mine.is_empty(),
            "thread {tid} is not on the line: {offsets:?}"
        );
        for r in mine {
            assert_eq!(
                r["Offsets"],
                format!("{offset}..{}", offset + 7).as_str(),
                "thread {tid}"
            );
        }
    }
    let summary = kairos_in(t.path(), &["report", "summary", "-r", "res"])
        .ok()
        .stdout;
    assert!(
        summary.contains("false sharing") && summary.contains("alignas(64)"),
        "{summary}"
    );
}

#[test]
fn padded_counters_share_nothing_and_one_counter_is_true_sharing() {
    let t = tempdir();
    false_sharing(t.path(), &["--padded", "2", "300000000"]);
    let padded = report(t.path(), "cache-lines");
    assert!(verdicts(&padded).iter().all(|v| v == "none"), "{padded}");

    let t = tempdir();
    false_sharing(t.path(), &["--shared", "2", "300000000"]);
    let shared = verdicts(&report(t.path(), "cache-lines"));
    assert!(shared.contains(&"true sharing".to_string()), "{shared:?}");
    assert!(!shared.contains(&"false sharing".to_string()), "{shared:?}");
}

#[test]
fn object_shares_follow_the_time_spent_on_each_array() {
    let t = tempdir();
    let prog = sample("three_arrays");
    let turn = common::cpu_turn();
    let run = kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-k",
            "sampling-interval-us=50",
            "--",
            prog.to_str().unwrap(),
            "2",
        ],
    )
    .ok();
    drop(turn);
    let line = run.stdout.lines().find(|l| l.contains(" share ")).unwrap();
    let w: Vec<&str> = line.split_whitespace().collect();
    let truth: Vec<(&str, f64)> = [(w[4], w[5]), (w[6], w[7]), (w[8], w[9])]
        .iter()
        .map(|(n, v)| (*n, v.parse().unwrap()))
        .collect();
    let objects = rows(&report(t.path(), "memory-objects"), "Memory objects");
    let samples = |name: &str| {
        objects
            .iter()
            .find(|r| r["Object"].as_str().unwrap().starts_with(name))
            .map_or(0, |r| r["Samples"].as_u64().unwrap()) as f64
    };
    // heap_array is named by its allocation site, the statics by their symbols.
    let heap = objects
        .iter()
        .find(|r| r["Object"].as_str().unwrap().starts_with("three_arrays.c:"))
        .unwrap();
    assert_eq!(heap["Kind"], "heap");
    let counts = [
        heap["Samples"].as_u64().unwrap() as f64,
        samples("bss_array ("),
        samples("data_array ("),
    ];
    let total: f64 = counts.iter().sum();
    // 3 points are 3 standard deviations of a 50% share at 2,500 samples.
    assert!(total > 2500.0, "too few samples on the arrays: {counts:?}");
    for ((name, want), got) in truth.iter().zip(counts) {
        let got = 100.0 * got / total;
        assert!(
            (got - want).abs() <= 3.0,
            "{name}: {got:.1}% sampled, {want:.1}% measured by the program"
        );
    }
}

/// `cc -O0 -g` of a sample program into `dir`: unoptimised code keeps every variable in
/// its stack slot, so a pointer is reloaded into the register its load then overwrites
/// (`mov rax,[rbp-0x18]; mov rax,[rax]`).
fn unoptimised(dir: &Path, name: &str) -> std::path::PathBuf {
    let exe = dir.join(format!("{name}-O0"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../samples/{name}.c"));
    let cc = std::process::Command::new("cc")
        .args(["-O0", "-g", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success(), "cc -O0 {name}.c failed");
    exe
}

/// A figure of the summary's first section.
fn collection_figure(dir: &Path, key: &str) -> f64 {
    let doc = report(dir, "summary");
    doc["blocks"][0]["values"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("no {key} in the summary: {doc}"))
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn unoptimised_array_reads_lose_no_samples_and_their_addresses_are_the_elements() {
    let t = tempdir();
    let prog = unoptimised(t.path(), "three_arrays");
    let turn = common::cpu_turn();
    let run = kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-k",
            "source=registers",
            "-k",
            "sampling-interval-us=50",
            "--",
            prog.to_str().unwrap(),
            "3",
        ],
    )
    .ok();
    drop(turn);
    // Without the old value of the overwritten register, 9% of this program's samples
    // (every one after `mov rax,[rax]`) were dropped.
    let dropped = collection_figure(t.path(), "Dropped share");
    assert!(dropped < 1.0, "{dropped}% of the samples dropped");

    // `three_arrays: heap_array 0x.. bss_array 0x.. data_array 0x.. bytes N`
    let line = run.stdout.lines().find(|l| l.contains(" bytes ")).unwrap();
    let w: Vec<&str> = line.split_whitespace().collect();
    let bytes: u64 = w[8].parse().unwrap();
    let arrays = [hex(w[2]), hex(w[4]), hex(w[6])];
    let built = kairos_analysis_memory_access::tables::read(&t.path().join("res/tables")).unwrap();
    let read_array = built
        .functions
        .iter()
        .position(|f| f == "read_array")
        .unwrap() as u32;
    let mut per_array = [0u64; 3];
    let mut ips = std::collections::BTreeSet::new();
    for (s, at) in built.samples.iter().zip(&built.locations) {
        if s.function != read_array {
            continue;
        }
        match arrays
            .iter()
            .position(|&a| s.addr >= a && s.addr < a + bytes)
        {
            Some(k) => {
                assert_eq!(
                    (s.addr - arrays[k]) % 8,
                    0,
                    "{:#x} is not an element of array {k} at {:#x}",
                    s.addr,
                    arrays[k]
                );
                assert_eq!((s.size, s.direction.name()), (8, "load"));
                per_array[k] += 1;
                ips.insert(s.ip);
            }
            None => assert_eq!(
                built.objects[at.object as usize].kind.name(),
                "stack",
                "read_array accessed {:#x}, neither an array nor its stack",
                s.addr
            ),
        }
    }
    // The four element loads, and the four instructions after them: sampled there, the
    // load had overwritten its address register, and the address came from the
    // registers that still held the array's base and the index.
    assert_eq!(ips.len(), 8, "array accesses at {ips:x?}");
    // Each array's share of the samples against the program's own measure of its time.
    let line = run.stdout.lines().find(|l| l.contains(" share ")).unwrap();
    let w: Vec<&str> = line.split_whitespace().collect();
    let truth: Vec<f64> = [w[5], w[7], w[9]]
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    let total: u64 = per_array.iter().sum();
    assert!(
        total >= 1000,
        "too few samples on the arrays: {per_array:?}"
    );
    for (k, want) in truth.iter().enumerate() {
        let got = 100.0 * per_array[k] as f64 / total as f64;
        assert!(
            (got - want).abs() <= 5.0,
            "array {k}: {got:.1}% sampled, {want:.1}% measured by the program"
        );
    }
}

#[test]
fn unoptimised_false_sharing_keeps_the_loads_of_the_counters() {
    let t = tempdir();
    let prog = unoptimised(t.path(), "false_sharing");
    let turn = common::cpu_turn();
    let run = kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-k",
            "source=registers",
            "-k",
            "sampling-interval-us=200",
            "--",
            prog.to_str().unwrap(),
            "2",
            "100000000",
        ],
    )
    .ok();
    drop(turn);
    // Without the old value, 37% of the samples were dropped: each one right after the
    // load of a counter (`mov rax,[rax]`), the access the threads wait on.
    let dropped = collection_figure(t.path(), "Dropped share");
    assert!(dropped < 1.0, "{dropped}% of the samples dropped");
    let objects = report(t.path(), "memory-objects");
    let counters = rows(&objects, "Memory objects")
        .into_iter()
        .find(|r| r["Object"] == allocation_site().as_str())
        .unwrap();
    assert!(counters["Loads"].as_u64() > Some(0), "{counters}");
    assert!(counters["Stores"].as_u64() > Some(0), "{counters}");
    let threads = printed_threads(&run.stdout);
    assert_eq!(threads.len(), 2);
    let lines = report(t.path(), "cache-lines");
    let line = rows(&lines, "Cache lines")
        .into_iter()
        .find(|r| r["Object"] == allocation_site().as_str())
        .unwrap();
    assert_eq!(line["Verdict"], "false sharing", "{lines}");
}

#[test]
fn a_missing_pmu_and_a_static_binary_are_said_plainly() {
    let t = tempdir();
    let prog = sample("false_sharing");
    let r = kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-k",
            "source=pmu",
            "--",
            prog.to_str().unwrap(),
            "1",
            "1000",
        ],
    );
    let devices = Path::new("/sys/bus/event_source/devices");
    if !["cpu", "cpu_core", "ibs_op"]
        .iter()
        .any(|d| devices.join(d).exists())
    {
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains("source=registers"), "{}", r.stderr);
        assert!(
            !t.path().join("res").exists(),
            "no result for a refused collection"
        );
    }
    // A static build of the sample: no tracker, so no heap objects; the report says why.
    let exe = t.path().join("fs-static");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/false_sharing.c");
    let cc = std::process::Command::new("cc")
        .args(["-O2", "-g", "-static", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(
        cc.success(),
        "cc -static failed (libc6-dev provides libc.a)"
    );
    let turn = common::cpu_turn();
    kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "--",
            exe.to_str().unwrap(),
            "2",
            "300000000",
        ],
    )
    .ok();
    drop(turn);
    let summary = kairos_in(t.path(), &["report", "summary", "-r", "res"])
        .ok()
        .stdout;
    // Sentences wrap to the line width: read the words.
    let words = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("statically linked"), "{summary}");
    assert!(
        words.contains("false sharing"),
        "lines are still found from the mappings: {summary}"
    );
}

#[test]
fn compare_shows_the_fix() {
    let t = tempdir();
    let prog = sample("false_sharing");
    let _turn = common::cpu_turn();
    for (dir, mode) in [("before", None), ("after", Some("--padded"))] {
        let mut a = vec![
            "collect",
            "memory-access",
            "-q",
            "-r",
            dir,
            "--",
            prog.to_str().unwrap(),
        ];
        a.extend(mode);
        a.extend(["2", "200000000"]);
        kairos_in(t.path(), &a).ok();
    }
    let out = kairos_in(t.path(), &["compare", "before", "after"])
        .ok()
        .stdout;
    let row = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no '{name}' row in:\n{out}"))
            .to_string()
    };
    assert!(
        row("run time").contains('x') || row("run time").contains('%'),
        "a run-time ratio: {out}"
    );
    let lines = row("cache lines with false sharing");
    let cells: Vec<&str> = lines.split_whitespace().collect();
    assert!(
        cells[5].parse::<u64>().unwrap() >= 1 && cells[6] == "0",
        "false sharing before the fix, none after: {lines}"
    );
}

/// A real PEBS load-latency recording (Skylake-SP, `fixtures/mem`), imported: every
/// sample's latency and level as `perf script` printed them (saved next to the file).
#[test]
fn imported_pebs_samples_agree_with_perf_script() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/mem");
    let file = dir.join("skx-2s-ldlat64-weight_struct.perf.data");
    let script =
        std::fs::read_to_string(dir.join("skx-2s-ldlat64-weight_struct.perf-script.txt")).unwrap();
    let (mut weight, mut levels) = (0u64, std::collections::BTreeMap::<&str, u64>::new());
    for l in script.lines().filter(|l| l.contains("|OP ")) {
        let lvl = &l[l.find("|LVL ").unwrap() + 5..l.find("|SNP").unwrap()];
        let key = ["LFB", "L1", "L2", "L3"]
            .into_iter()
            .find(|k| lvl.contains(k))
            .unwrap();
        *levels
            .entry(if key == "L3" { "LLC" } else { key })
            .or_default() += 1;
        let tail: Vec<&str> = l[l.rfind('|').unwrap()..].split_whitespace().collect();
        weight += tail[tail.len() - 3].parse::<u64>().unwrap();
    }
    let t = tempdir();
    kairos_in(
        t.path(),
        &["import", file.to_str().unwrap(), "-q", "-r", "res"],
    )
    .ok();
    let objects = rows(&report(t.path(), "memory-objects"), "Memory objects");
    let sum = |col: &str| {
        objects
            .iter()
            .map(|r| r[col].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(sum("Latency"), weight, "summed latency (cycles)");
    for (level, n) in &levels {
        assert_eq!(sum(level), *n, "{level} samples");
    }
    assert!(
        objects.iter().any(|r| r["Object"] == "[kernel]"),
        "kernel data addresses are named: {objects:?}"
    );
}

/// Golden files of every memory-access report on the imported PEBS recording (a mismatch
/// writes `<golden>.actual` and shows a diff; bless with `KAIROS_BLESS=1`).
#[test]
fn imported_reports_match_goldens() {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/mem");
    let t = tempdir();
    let r = t.path().join("r");
    let r = r.to_str().unwrap();
    kairos_in(
        &fx,
        &[
            "import",
            "-q",
            "skx-2s-ldlat64-weight_struct.perf.data",
            "-r",
            r,
        ],
    )
    .ok();
    let cases: [(&str, Vec<&str>); 9] = [
        ("summary", vec!["report", "summary", "-r", r]),
        // NUMA: no placement in an imported recording, the PMU's remote bits all the same.
        ("numa", vec!["report", "numa", "-r", r]),
        (
            "numa_csv",
            vec!["report", "numa", "-r", r, "--format", "csv"],
        ),
        (
            "numa_json",
            vec!["report", "numa", "-r", r, "--format", "json"],
        ),
        ("memory-objects", vec!["report", "memory-objects", "-r", r]),
        (
            "memory-objects_csv",
            vec!["report", "memory-objects", "-r", r, "--format", "csv"],
        ),
        (
            "memory-functions_json",
            vec!["report", "memory-functions", "-r", r, "--format", "json"],
        ),
        ("cache-lines", vec!["report", "cache-lines", "-r", r]),
        (
            "memory-functions",
            vec!["report", "memory-functions", "-r", r, "--limit", "5"],
        ),
    ];
    for (name, args) in cases {
        let out = kairos_in(&fx, &args).ok();
        let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/memory-access")
            .join(format!("{name}.txt"));
        kairos_report::assert_golden(&golden, &out.stdout);
    }
}

/// `-p` of another user's process, as an unprivileged user: one sentence, no result.
/// Needs root to switch to `nobody` (as on the CI machine); elsewhere there is nothing to try.
#[test]
fn another_users_process_is_refused_plainly() {
    if effective_uid() != 0 {
        eprintln!("NOT RUN: needs root to switch to another user (runuser); run the tests as root");
        return;
    }
    let t = tempdir();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = sleeper.id().to_string();
    let bin = common::kairos_bin();
    let out = std::process::Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&bin)
        .args([
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-d",
            "1",
            "-p",
            &pid,
        ])
        .current_dir(t.path())
        .output()
        .unwrap();
    sleeper.kill().unwrap();
    let _ = sleeper.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("belongs to another user") && err.contains(&pid),
        "{err}"
    );
    assert!(
        !t.path().join("res").exists(),
        "no result for a refused collection"
    );
}

fn effective_uid() -> u32 {
    // Read from /proc rather than calling libc: the test crate has no libc dependency.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap()
}

/// `-p` of a running multi-threaded program: every thread is sampled (one ring buffer per
/// CPU, the threads' events redirected into it), heap addresses are named by the `[heap]`
/// mapping (no tracker in a process we did not start), and the false sharing is found.
#[test]
fn attaching_to_a_running_program_finds_its_false_sharing() {
    let t = tempdir();
    let _turn = common::cpu_turn();
    let mut prog = std::process::Command::new(sample("false_sharing"))
        .args(["2", "20000000000"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = prog.id().to_string();
    let run = kairos_in(
        t.path(),
        &[
            "collect",
            "memory-access",
            "-q",
            "-r",
            "res",
            "-d",
            "1",
            "-p",
            &pid,
        ],
    );
    prog.kill().unwrap();
    let _ = prog.wait();
    let run = run.ok();
    assert!(
        run.stdout.contains("not with -p"),
        "the summary says why heap blocks are unnamed: {}",
        run.stdout
    );
    let lines = report(t.path(), "cache-lines");
    let line = &rows(&lines, "Cache lines")[0];
    assert_eq!(line["Object"], "[heap]", "{lines}");
    assert_eq!(line["Verdict"], "false sharing", "{lines}");
    assert_eq!(line["Threads"], 2);
}
