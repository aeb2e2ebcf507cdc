//! `kairos collect ANALYSIS -k cache-group=...` on copies of the recorded resctrl trees:
//! the target runs in the group (a new one with its own ways, or an existing one), the
//! group's occupancy is recorded into the result, and everything is restored, also on
//! Ctrl-C. The kernel's side is kairos_resctrl::fake::FakeKernel (see cache.rs).
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{kairos_bin, kairos_in, tempdir};
use kairos_resctrl::fake::FakeKernel;
use kairos_resctrl::fixtures;

fn tree(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempdir();
    let root = t.path().join("rc");
    fixtures::copy_dir(
        &fixtures::dir().unwrap_or_else(|e| panic!("{e}")).join(name),
        &root,
    )
    .unwrap();
    (t, root)
}

/// The manifest's `cache` entry (extra entries sit at the manifest's top level).
fn cache_of(dir: &Path) -> serde_json::Value {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    m["cache"].clone()
}

#[test]
fn a_new_group_holds_the_target_records_occupancy_and_is_removed() {
    let (t, root) = tree("resctrl.nomb");
    let before = fixtures::snapshot(&root).unwrap();
    let _kernel = FakeKernel::start(&root);
    let script = "echo pid $$; cat \"$0\"/kairos-*/tasks; cat \"$0\"/kairos-*/schemata; i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; sleep 0.3";
    let root_s = root.to_str().unwrap();
    let knobs = [
        "-k",
        "cache-group=new",
        "-k",
        "cache-ways=4",
        "-k",
        "resctrl-root=rc",
    ];
    let mut args = vec!["collect", "hotspots", "-r", "res"];
    args.extend(knobs);
    args.extend(["--", "sh", "-c", script, root_s]);
    let r = kairos_in(t.path(), &args).ok();
    let out = &r.stdout;
    let pid = out
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        out.lines().any(|l| l == pid),
        "the program was not in the group's tasks:\n{out}"
    );
    assert!(
        out.contains("L3:0=0000f;1=0000f;2=0000f;3=0000f"),
        "not 4 exclusive ways:\n{out}"
    );
    assert!(
        out.contains("Cache: group kairos-")
            && out.contains("LLC occupancy")
            && out.contains("removed group"),
        "{out}"
    );
    assert_eq!(
        fixtures::snapshot(&root).unwrap(),
        before,
        "the tree was not restored"
    );
    let cache = &cache_of(&t.path().join("res"));
    assert_eq!(cache["plan"]["domains"][0]["mask"], 15, "{cache}");
    let occ = cache["occupancy"].as_array().unwrap();
    assert!(
        occ.iter().any(|s| s["domains"][0]["llc_occupancy"]
            .as_u64()
            .is_some_and(|v| v > 0)),
        "no occupancy: {cache}"
    );
    assert_eq!(
        cache["not_restored"].as_array().map(Vec::len),
        Some(0),
        "{cache}"
    );
    // The profile itself is there.
    kairos_in(t.path(), &["report", "summary", "-r", "res"]).ok();
}

#[test]
fn an_existing_group_and_the_auto_named_result() {
    let (t, root) = tree("resctrl.full");
    let _kernel = FakeKernel::start(&root);
    let script = "echo pid $$; cat \"$0\"/Guaranteed/tasks";
    let r = kairos_in(
        t.path(),
        &[
            "collect",
            "hotspots",
            "-k",
            "cache-group=Guaranteed",
            "-k",
            "resctrl-root=rc",
            "--",
            "sh",
            "-c",
            script,
            root.to_str().unwrap(),
        ],
    )
    .ok();
    let pid = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert_eq!(
        r.stdout.lines().filter(|l| *l == pid).count(),
        1,
        "{}",
        r.stdout
    );
    // The result got the next free name and the recording.
    let cache = cache_of(&t.path().join("r000hs"));
    assert_eq!(cache["group"], "Guaranteed", "{cache}");
    assert!(
        cache["occupancy"].as_array().is_some_and(|o| !o.is_empty()),
        "{cache}"
    );
}

#[test]
fn refusals_change_nothing() {
    let (t, root) = tree("resctrl.nomb");
    let before = fixtures::snapshot(&root).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "collect",
                "hotspots",
                "-k",
                "cache-group=nope",
                "-k",
                "resctrl-root=rc",
                "--",
                "true",
            ],
            "there is no resctrl group 'nope'",
        ),
        (
            &[
                "collect",
                "hotspots",
                "-k",
                "cache-group=new",
                "-k",
                "resctrl-root=rc",
                "--",
                "true",
            ],
            "needs -k cache-ways=N",
        ),
        (
            &[
                "collect",
                "hotspots",
                "-k",
                "cache-group=new",
                "-k",
                "cache-ways=4",
                "-k",
                "resctrl-root=rc",
                "-a",
                "-d",
                "1",
            ],
            "cannot be used with -a",
        ),
        (
            &[
                "collect",
                "memory-consumption",
                "-k",
                "cache-group=new",
                "-k",
                "cache-ways=2",
                "-k",
                "resctrl-root=rc",
                "--",
                "true",
            ],
            "not available for memory-consumption",
        ),
        (
            &[
                "collect",
                "hotspots",
                "-k",
                "cache-group=new",
                "-k",
                "cache-ways=40",
                "-k",
                "resctrl-root=rc",
                "--",
                "true",
            ],
            "cannot give the target 40 exclusive L3 ways",
        ),
    ];
    // The kernel's side, for the refusals that come after the group was made.
    let _kernel = FakeKernel::start(&root);
    for (args, want) in cases {
        let r = kairos_in(t.path(), args);
        assert_ne!(r.code, 0, "{args:?}");
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert_eq!(
            fixtures::snapshot(&root).unwrap(),
            before,
            "{args:?} changed the tree"
        );
    }
    // No result was left behind by a refusal.
    let left: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .filter(|n| n != "rc")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // No resctrl at all: one sentence with the reasons.
    let r = kairos_in(
        t.path(),
        &[
            "collect",
            "hotspots",
            "-k",
            "cache-group=new",
            "-k",
            "cache-ways=2",
            "-k",
            "resctrl-root=none",
            "--",
            "true",
        ],
    );
    assert!(
        r.code != 0
            && r.stderr.contains("resctrl is not available here")
            && r.stderr.contains("nothing was changed"),
        "{}",
        r.stderr
    );
}

#[test]
fn ctrl_c_during_the_collection_restores_the_tree() {
    let (t, root) = tree("resctrl.nomb");
    let before = fixtures::snapshot(&root).unwrap();
    let _kernel = FakeKernel::start(&root);
    let child = std::process::Command::new(kairos_bin())
        .args([
            "collect",
            "hotspots",
            "-q",
            "-k",
            "cache-group=new",
            "-k",
            "cache-ways=2",
            "-k",
            "resctrl-root=rc",
            "-r",
            "res",
            "--",
            "sleep",
            "30",
        ])
        .current_dir(t.path())
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Wait until the program is in its group.
    while !std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name().to_string_lossy().starts_with("kairos-")
                && std::fs::read_to_string(e.path().join("tasks"))
                    .is_ok_and(|s| !s.trim().is_empty())
        })
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the program never joined its group"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals the process group of our own child.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("removed group"), "{stdout}\n{stderr}");
    assert_eq!(
        fixtures::snapshot(&root).unwrap(),
        before,
        "not restored after Ctrl-C"
    );
    assert!(cache_of(&t.path().join("res"))["occupancy"].is_array());
}
