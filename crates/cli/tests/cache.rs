//! `kairos cache` and `kairos run --cache-ways` on copies of the recorded resctrl trees
//! (../shared/fixtures/resctrl/goresctrl): golden reports, the files Kairos writes, the
//! masks it picks, and that every change is undone after a normal exit, Ctrl-C, SIGTERM,
//! a crashing program, Kairos's own errors and each refused request.
//!
//! This machine has no resctrl, so a copy of a tree is given as the root. The kernel's
//! side (filling a new group directory, counting occupancy) is played by
//! kairos_resctrl::fake::FakeKernel, a thread in this test process: a fake of the
//! kernel, not of Kairos.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{kairos_bin, kairos_in, tempdir};
use kairos_report::assert_golden;
use kairos_resctrl::fake::FakeKernel;

const TREES: [&str; 8] = [
    "resctrl.full",
    "resctrl.l2",
    "resctrl.l2cdp",
    "resctrl.l2l3mb",
    "resctrl.nol3",
    "resctrl.nol3.mbps",
    "resctrl.nomb",
    "resctrl.nomb.cdp",
];

fn fixtures() -> PathBuf {
    kairos_resctrl::fixtures::dir().unwrap_or_else(|e| panic!("{e}"))
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/cache")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    kairos_resctrl::fixtures::copy_dir(from, to).unwrap();
}

/// Every file with its content (schemata by meaning: the kernel reformats them).
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    kairos_resctrl::fixtures::snapshot(dir).unwrap()
}

/// A copy of `tree` under a temp dir, named `rc`, plus a CPU topology with `cpus` CPUs,
/// two per L2 and all on L3 0.
fn setup(tree: &str, cpus: u32) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempdir();
    let root = t.path().join("rc");
    copy_dir(&fixtures().join(tree), &root);
    let cpu_root = t.path().join("cpu");
    for c in 0..cpus {
        for (idx, level, id) in [("index2", 2, c / 2), ("index3", 3, 0)] {
            let d = cpu_root.join(format!("cpu{c}/cache/{idx}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [
                ("level", level.to_string()),
                ("id", id.to_string()),
                ("type", "Unified".to_string()),
            ] {
                std::fs::write(d.join(f), v).unwrap();
            }
        }
    }
    (t, root, cpu_root)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn cache_report_of_each_tree_matches_golden() {
    let dir = fixtures();
    for tree in TREES {
        let out = kairos_in(&dir, &["cache", "--resctrl-root", tree])
            .ok()
            .stdout;
        assert_golden(&golden(&format!("{tree}.txt")), &out);
    }
    for fmt in ["csv", "json"] {
        let out = kairos_in(
            &dir,
            &["cache", "--resctrl-root", "resctrl.full", "--format", fmt],
        )
        .ok()
        .stdout;
        assert_golden(&golden(&format!("resctrl.full.{fmt}")), &out);
    }
    let v: serde_json::Value = serde_json::from_str(
        &kairos_in(
            &dir,
            &[
                "cache",
                "--resctrl-root",
                "resctrl.full",
                "--format",
                "json",
            ],
        )
        .ok()
        .stdout,
    )
    .unwrap();
    assert!(v["blocks"].as_array().is_some_and(|b| b.len() >= 5), "{v}");
}

#[test]
fn availability_per_cpu_with_a_group_of_its_own() {
    // resctrl.l2 (8 ways, 2 L2 domains, CPUs 0-3) with a group "rt" holding ways 0-3 of
    // domain 0 and CPU 1, the default group shrunk to ways 4-7 there.
    let (t, root, _cpu_root) = setup("resctrl.l2", 4);
    std::fs::write(root.join("schemata"), "L2:0=f0;1=ff\n").unwrap();
    let rt = root.join("rt");
    std::fs::create_dir(&rt).unwrap();
    for (f, v) in [
        ("schemata", "L2:0=0f;1=ff\n"),
        ("mode", "exclusive\n"),
        ("cpus_list", "1\n"),
        ("tasks", "77\n"),
    ] {
        std::fs::write(rt.join(f), v).unwrap();
    }
    let out = kairos_in(
        t.path(),
        &["cache", "--resctrl-root", "rc", "--cpu-root", "cpu"],
    )
    .ok()
    .stdout;
    assert_golden(&golden("resctrl.l2.rt-group.txt"), &out);
    // A group left by a Kairos that was killed (no such pid) is pointed out.
    std::fs::create_dir(root.join("kairos-999999999")).unwrap();
    std::fs::write(root.join("kairos-999999999/schemata"), "L2:0=0f;1=ff\n").unwrap();
    let left = kairos_in(
        t.path(),
        &["cache", "--resctrl-root", "rc", "--cpu-root", "cpu"],
    )
    .ok()
    .stdout;
    assert!(
        left.contains("group kairos-999999999 was left by a Kairos that no longer runs"),
        "{left}"
    );
    std::fs::remove_dir_all(root.join("kairos-999999999")).unwrap();
    let row = |cpus: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{cpus} ")))
            .unwrap_or_else(|| panic!("no row for CPUs {cpus}:\n{out}"))
            .to_string()
    };
    assert!(
        row("1").contains("rt") && row("1").contains("4 of 8 ways (0-3)"),
        "{out}"
    );
    assert!(
        row("0").contains("default") && row("0").contains("4 of 8 ways (4-7)"),
        "{out}"
    );
}

#[test]
fn cache_without_resctrl_says_why() {
    if Path::new("/sys/fs/resctrl/info").is_dir() {
        eprintln!("skipped: this machine has resctrl mounted");
        return;
    }
    let r = kairos_in(&std::env::temp_dir(), &["cache"]).ok();
    assert!(
        r.stdout.contains("resctrl is not available here") && r.stdout.contains("What still works"),
        "{}",
        r.stdout
    );
    let fs = std::fs::read_to_string("/proc/filesystems").unwrap();
    if !fs.contains("resctrl") {
        assert!(
            r.stdout.contains("the kernel was built without resctrl"),
            "{}",
            r.stdout
        );
    } else {
        assert!(
            r.stdout
                .contains("mount -t resctrl resctrl /sys/fs/resctrl")
                || r.stdout.contains("RDT flags"),
            "{}",
            r.stdout
        );
    }
    let run = kairos_in(
        &std::env::temp_dir(),
        &["run", "--cache-ways", "2", "--", "true"],
    );
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("resctrl is not available here")
            && run.stderr.contains("nothing was changed"),
        "{}",
        run.stderr
    );
}

#[test]
fn run_with_cache_ways_allocates_records_and_restores() {
    let (t, root, _cpu) = setup("resctrl.nomb", 4);
    let before = snapshot(&root);
    let _kernel = FakeKernel::start(&root);
    // The program shows what it sees while it runs: its group's tasks and the default mask.
    let script = "echo pid $$; cat \"$0\"/kairos-*/tasks; cat \"$0\"/kairos-*/schemata \"$0\"/kairos-*/mode; head -1 \"$0\"/schemata; sleep 0.6";
    let r = kairos_in(
        t.path(),
        &[
            "run",
            "--cache-ways",
            "4",
            "--resctrl-root",
            "rc",
            "--cpu-root",
            "cpu",
            "--interval-ms",
            "20",
            "-r",
            "res",
            "--",
            "sh",
            "-c",
            script,
            s(&root),
        ],
    )
    .ok();
    let out = &r.stdout;
    let pid = out
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        out.lines().any(|l| l == pid),
        "the program was not in its group's tasks:\n{out}"
    );
    // nomb: 20 ways, I/O on 18-19, min 2 ways: ways 0-3 for us, the default keeps 4-19.
    assert!(
        out.contains(
            "L3:0=0000f;1=0000f;2=0000f;3=0000f\nexclusive\nL3:0=ffff0;1=ffff0;2=ffff0;3=ffff0"
        ),
        "{out}"
    );
    assert!(
        out.contains("default group shrunk: L3 fffff -> ffff0"),
        "{out}"
    );
    assert!(
        out.contains("LLC occupancy:") && out.contains("removed group"),
        "{out}"
    );
    assert_eq!(snapshot(&root), before, "the tree was not restored");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("res/manifest.json")).unwrap())
            .unwrap();
    let cache = &m["extra"]["cache"];
    let cache = if cache.is_null() { &m["cache"] } else { cache };
    assert_eq!(cache["plan"]["domains"][0]["mask"], 15, "{cache}");
    // The target's LLC misses: counted with a PMU, else the reason in the notes.
    let llc = &cache["llc_misses"];
    match llc["why_not"].as_str() {
        Some(why) => {
            assert!(why.contains("PMU") || why.contains("refused"), "{llc}");
            assert!(out.contains(why), "the summary says why: {out}");
        }
        None => assert!(
            llc["series"].as_array().is_some_and(|s| !s.is_empty()) && out.contains("LLC misses:"),
            "{llc}\n{out}"
        ),
    }
    let occ = cache["occupancy"].as_array().unwrap();
    assert!(
        occ.iter().any(|s| s["domains"][0]["llc_occupancy"]
            .as_u64()
            .is_some_and(|v| v > 0)),
        "no occupancy recorded: {cache}"
    );
    assert!(
        cache["availability"][0]["groups"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g["exclusive"] == 15)),
        "{cache}"
    );
    // CPUs 0-3 (all on L3 cache 0) stay in the default group: ways 4-19, of which 18-19 shared with I/O.
    let cpu = &cache["availability_per_cpu"][0];
    assert_eq!(
        (
            cpu["cpus"].to_string().as_str(),
            cpu["group"].as_str(),
            cpu["mask"].as_u64()
        ),
        ("[0,1,2,3]", Some("default"), Some(0xffff0)),
        "{cache}"
    );
}

fn finish(child: std::process::Child, within: Duration) -> (i32, String, String) {
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < within,
        "kairos took {:?} to finish",
        started.elapsed()
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn ctrl_c_sigterm_and_a_crash_restore_everything() {
    let (t, root, _cpu) = setup("resctrl.l2", 4);
    let before = snapshot(&root);
    let _kernel = FakeKernel::start(&root);
    // Ctrl-C: the terminal signals the whole foreground process group.
    let c = start_long_l2(t.path(), &root, &["sleep", "30"]);
    unsafe { libc::kill(-(c.id() as i32), libc::SIGINT) };
    let (code, out, err) = finish(c, Duration::from_secs(10));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("killed by signal 2") && out.contains("removed group"),
        "{out}"
    );
    assert_eq!(snapshot(&root), before, "not restored after Ctrl-C");
    // SIGTERM to Kairos alone: it forwards it to the program, then restores.
    let c = start_long_l2(t.path(), &root, &["sleep", "30"]);
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let (_, out, err) = finish(c, Duration::from_secs(10));
    assert!(
        out.contains("killed by signal 15") && out.contains("restored"),
        "{out}\n{err}"
    );
    assert_eq!(snapshot(&root), before, "not restored after SIGTERM");
    // A crashing program.
    let r = kairos_in(
        t.path(),
        &[
            "run",
            "--cache-ways",
            "2",
            "--level",
            "L2",
            "--resctrl-root",
            "rc",
            "--",
            "sh",
            "-c",
            "kill -SEGV $$",
        ],
    )
    .ok();
    assert!(r.stdout.contains("killed by signal 11"), "{}", r.stdout);
    assert_eq!(snapshot(&root), before, "not restored after a crash");
}

/// Starts kairos in its own process group (as a shell starts a foreground job) with a
/// long program; returns once the program is in its group.
fn start_long_l2(t: &Path, root: &Path, program: &[&str]) -> std::process::Child {
    let mut args = vec![
        "run",
        "--cache-ways",
        "2",
        "--level",
        "L2",
        "--resctrl-root",
        "rc",
        "--",
    ];
    args.extend_from_slice(program);
    let child = std::process::Command::new(kairos_bin())
        .args(&args)
        .current_dir(t)
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_group(root, child.id());
    child
}

fn wait_group(root: &Path, pid: u32) {
    let group = root.join(format!("kairos-{pid}"));
    let until = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(group.join("tasks")).is_ok_and(|t| !t.trim().is_empty()) {
        assert!(
            Instant::now() < until,
            "kairos did not create {}",
            group.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn own_errors_restore_everything() {
    let (t, root, cpu_root) = setup("resctrl.l2", 4);
    let before = snapshot(&root);
    let _kernel = FakeKernel::start(&root);
    // Pseudo-locking: a plain directory (like most CPUs) does not lock; Kairos says so and
    // undoes the default-group shrink and the group.
    let r = kairos_in(
        t.path(),
        &[
            "run",
            "--cache-ways",
            "2",
            "--level",
            "L2",
            "--cpus",
            "2",
            "--lock",
            "--resctrl-root",
            "rc",
            "--cpu-root",
            s(&cpu_root),
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("pseudo-lock")
            && r.stderr.contains("Broadwell-X")
            && r.stderr.contains("everything Kairos changed was restored"),
        "{}",
        r.stderr
    );
    assert_eq!(
        snapshot(&root),
        before,
        "not restored after a failed pseudo-lock"
    );
    // A program that cannot be started (not executable) after the group was made.
    let noexec = t.path().join("noexec");
    std::fs::write(&noexec, "x").unwrap();
    let r = kairos_in(
        t.path(),
        &[
            "run",
            "--cache-ways",
            "2",
            "--level",
            "L2",
            "--resctrl-root",
            "rc",
            "--",
            s(&noexec),
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("cannot be started") && r.stderr.contains("restored"),
        "{}",
        r.stderr
    );
    assert_eq!(snapshot(&root), before, "not restored after a failed start");
}

#[test]
fn bad_requests_are_refused_with_a_reason_and_change_nothing() {
    let cases: [(&str, &[&str], &str); 7] = [
        (
            "resctrl.full",
            &["--cache-ways", "2"],
            "ways 0-19 belong to groups Guaranteed, goresctrl.Guaranteed",
        ),
        (
            "resctrl.l2",
            &["--cache-ways", "9", "--level", "L2"],
            "L2 has 8 ways per cache",
        ),
        ("resctrl.nomb", &["--cache-ways", "1"], "at least 2 ways"),
        (
            "resctrl.nomb",
            &["--cache-ways", "19"],
            "ways 18-19 are filled by I/O",
        ),
        (
            "resctrl.full",
            &["--cache-ways", "2", "--level", "L3DATA"],
            "mounted without the cdp option",
        ),
        (
            "resctrl.l2",
            &["--cache-ways", "2"],
            "offers cache allocation for L2, not L3",
        ),
        (
            "resctrl.nol3",
            &["--cache-ways", "2"],
            "no cache allocation at all",
        ),
    ];
    for (tree, extra, want) in cases {
        let (t, root, _) = setup(tree, 4);
        let before = snapshot(&root);
        let mut args = vec!["run", "--resctrl-root", "rc"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "true"]);
        let r = kairos_in(t.path(), &args);
        assert_eq!(r.code, 1, "{tree} {extra:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(want) && r.stderr.contains("nothing was changed"),
            "{tree} {extra:?}: {}",
            r.stderr
        );
        assert_eq!(
            r.stderr.trim().lines().count(),
            1,
            "one sentence: {}",
            r.stderr
        );
        assert_eq!(snapshot(&root), before, "{tree} {extra:?} changed the tree");
    }
    // CPUs that are not there, or that another group holds.
    let (t, root, _) = setup("resctrl.full", 4);
    let before = snapshot(&root);
    let r = kairos_in(
        t.path(),
        &[
            "run",
            "--cache-ways",
            "2",
            "--cpus",
            "500",
            "--resctrl-root",
            "rc",
            "--",
            "true",
        ],
    );
    assert!(
        r.code == 2
            && r.stderr
                .contains("CPU 500 is not one of this machine's CPUs (0-191)"),
        "{}",
        r.stderr
    );
    std::fs::write(root.join("Guaranteed/cpus_list"), "4-5\n").unwrap();
    let before_g = snapshot(&root);
    let r = kairos_in(
        t.path(),
        &[
            "run",
            "--cache-ways",
            "2",
            "--cpus",
            "5",
            "--resctrl-root",
            "rc",
            "--",
            "true",
        ],
    );
    assert!(
        r.code == 1 && r.stderr.contains("CPUs 4-5 belong to group Guaranteed"),
        "{}",
        r.stderr
    );
    assert_eq!(snapshot(&root), before_g);
    let _ = before;
    // The CLOS limit: resctrl.l2 has 4 classes; the default group and three others hold them.
    let (t, root, _) = setup("resctrl.l2", 4);
    for g in ["a", "b", "c"] {
        std::fs::create_dir(root.join(g)).unwrap();
        std::fs::write(root.join(g).join("schemata"), "L2:0=ff;1=ff\n").unwrap();
    }
    let before = snapshot(&root);
    let r = kairos_in(
        t.path(),
        &[
            "run",
            "--cache-ways",
            "2",
            "--level",
            "L2",
            "--resctrl-root",
            "rc",
            "--",
            "true",
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("all 4 classes of service (CLOS) are in use by the groups default, a, b, c"),
        "{}",
        r.stderr
    );
    assert_eq!(snapshot(&root), before);
    // Not a resctrl tree at all.
    let r = kairos_in(t.path(), &["cache", "--resctrl-root", "rc/info"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("is not a resctrl tree"), "{}", r.stderr);
}
