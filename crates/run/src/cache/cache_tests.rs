//! The cache group's one set-up and undo, through both stories, on copies of the recorded
//! resctrl trees; the kernel's side is kairos_resctrl::fake::FakeKernel.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use kairos_resctrl::fake::FakeKernel;
use kairos_resctrl::fixtures;

use super::*;
use crate::{Notice, Sink};

/// A copy of a recorded tree, or None (and a note) where the fixtures are missing.
fn tree(name: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let Ok(dir) = fixtures::dir() else {
        eprintln!("skipped: no resctrl fixtures");
        return None;
    };
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("rc");
    fixtures::copy_dir(&dir.join(name), &root).unwrap();
    Some((t, root))
}

fn recording_sink() -> (Sink, Arc<Mutex<Vec<Notice>>>) {
    let seen: Arc<Mutex<Vec<Notice>>> = Arc::default();
    let s = seen.clone();
    (
        Arc::new(move |n: &Notice| s.lock().unwrap().push(n.clone())),
        seen,
    )
}

#[test]
fn ways_and_cpu_lists_are_checked() {
    assert_eq!(parse_ways("4").unwrap(), 4);
    for bad in ["0", "65", "four", ""] {
        assert!(matches!(parse_ways(bad), Err(Error::BadWays(_))), "{bad}");
    }
    assert_eq!(parse_cpus("0-2,8").unwrap(), [0, 1, 2, 8]);
    assert!(matches!(parse_cpus("x"), Err(Error::BadCpus(_))));
    assert!(matches!(parse_cpus("5000"), Err(Error::BadCpus(_))));
}

#[test]
fn a_run_gets_its_group_and_leaves_the_tree_as_it_was() {
    let Some((t, root)) = tree("resctrl.nomb") else {
        return;
    };
    let before = fixtures::snapshot(&root).unwrap();
    let _kernel = FakeKernel::start(&root);
    let (sink, notices) = recording_sink();
    let req = CacheRunRequest {
        ways: 4,
        level: "l3".into(),
        cpus: None,
        lock: false,
        resctrl_root: root.clone(),
        cpu_root: None,
        interval_ms: 10,
        result_dir: Some(t.path().join("res")),
        program: vec![
            "sh".into(),
            "-c".into(),
            "cat \"$0\"/kairos-*/tasks > \"$0\"/../seen; sleep 0.1".into(),
            root.to_str().unwrap().into(),
        ],
    };
    let o = run(&req, &sink).unwrap();
    o.restored().unwrap();
    assert_eq!(fixtures::snapshot(&root).unwrap(), before);
    assert!(
        o.journal.iter().any(|l| l.starts_with("removed group")),
        "{o:?}"
    );
    let pid = notices.lock().unwrap().iter().find_map(|n| match n {
        Notice::Started { pid, group, .. } => group.as_ref().map(|_| *pid),
        _ => None,
    });
    let seen = std::fs::read_to_string(t.path().join("seen")).unwrap();
    assert_eq!(Some(seen.trim().parse::<i32>().unwrap()), pid);
    let first = notices.lock().unwrap()[0].clone();
    let Notice::Placement(p) = first else {
        panic!("{first:?}")
    };
    assert_eq!((p.ways.as_str(), p.mask.as_str()), ("0-3", "0000f"));
    assert!(o.occupancy.is_some(), "{o:?}");
    assert!(o.result.unwrap().unwrap().join("manifest.json").is_file());
}

#[test]
fn refusals_change_nothing_and_leave_no_result() {
    let Some((t, root)) = tree("resctrl.nomb") else {
        return;
    };
    let before = fixtures::snapshot(&root).unwrap();
    let (sink, _) = recording_sink();
    let req = CacheRunRequest {
        ways: 19,
        level: "L3".into(),
        cpus: None,
        lock: false,
        resctrl_root: root.clone(),
        cpu_root: None,
        interval_ms: 100,
        result_dir: Some(t.path().join("res")),
        program: vec!["true".into()],
    };
    let e = run(&req, &sink).unwrap_err();
    assert!(
        e.to_string().contains("ways 18-19 are filled by I/O")
            && e.to_string().ends_with("nothing was changed"),
        "{e}"
    );
    let lock = CacheRunRequest {
        lock: true,
        ..req.clone()
    };
    assert!(matches!(run(&lock, &sink), Err(Error::LockNeedsCpus)));
    assert_eq!(fixtures::snapshot(&root).unwrap(), before);
    assert!(!t.path().join("res").exists());
}

#[test]
fn a_collection_gets_the_same_group_and_undoes_it() {
    let Some((_t, root)) = tree("resctrl.nomb") else {
        return;
    };
    let before = fixtures::snapshot(&root).unwrap();
    let _kernel = FakeKernel::start(&root);
    let k = CacheKnobs {
        group: Some("new".into()),
        ways: Some(4),
        root: root.clone(),
        ..CacheKnobs::default()
    };
    let c = CacheRun::start(&k, false, None).unwrap().unwrap();
    assert!(c.step.is_some());
    assert!(root.join(format!("kairos-{}", std::process::id())).is_dir());
    let f = c.finish(None);
    assert_eq!(f.label, format!("kairos-{}", std::process::id()));
    assert!(
        f.journal.iter().any(|l| l.starts_with("removed group")),
        "{f:?}"
    );
    f.into_result().unwrap();
    assert_eq!(fixtures::snapshot(&root).unwrap(), before);
    let none = CacheKnobs {
        group: Some("nope".into()),
        ..k
    };
    assert!(matches!(
        CacheRun::start(&none, false, None),
        Err(Error::NoSuchGroup { .. })
    ));
    assert!(matches!(
        CacheRun::start(&none, true, None),
        Err(Error::SystemWideGroup)
    ));
}
