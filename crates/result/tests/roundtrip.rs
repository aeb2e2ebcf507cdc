//! Writing and reading back profiles and manifests; result directory creation and numbering.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::time::{Instant, SystemTime};

use kairos_model::{Profile, Stack};
use kairos_result::*;

#[test]
fn small_profile_round_trips_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::small_profile();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let infos = write_profile(&mut dir, &p).unwrap();
    let names: Vec<_> = infos.iter().map(|t| (t.name.as_str(), t.rows)).collect();
    assert_eq!(
        names,
        [
            ("threads", 2),
            ("modules", 2),
            ("frames", 6),
            ("stacks", 6),
            ("samples", 10)
        ]
    );
    for t in &infos {
        assert_eq!(
            fs::metadata(dir.path().join(&t.file)).unwrap().len(),
            t.bytes
        );
    }

    let opened = ResultDir::open(dir.path()).unwrap();
    assert_eq!(opened.manifest().tables, infos);
    assert_eq!(opened.manifest().counts, Some(Counts::new(10, p.losses)));
    let back = read_profile(&opened).unwrap();
    assert_eq!(back, p);
    // No temporary files left behind.
    let leftovers: Vec<_> = fs::read_dir(dir.tables_path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 5, "{leftovers:?}");
}

#[test]
fn empty_profile_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    write_profile(&mut dir, &Profile::default()).unwrap();
    assert_eq!(
        read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap(),
        Profile::default()
    );
}

#[test]
fn generated_200k_profile_round_trips_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::generated_profile(200_000, 42);
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let t0 = Instant::now();
    write_profile(&mut dir, &p).unwrap();
    let t1 = Instant::now();
    let back = read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap();
    let t2 = Instant::now();
    eprintln!("200k samples: write {:?}, read {:?}", t1 - t0, t2 - t1);
    assert_eq!(back.samples.len(), 200_000);
    assert!(back == p, "round trip differs");
}

#[test]
fn rewriting_tables_replaces_them() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    write_profile(&mut dir, &common::generated_profile(1000, 1)).unwrap();
    let p = common::small_profile();
    write_profile(&mut dir, &p).unwrap();
    let opened = ResultDir::open(dir.path()).unwrap();
    assert_eq!(opened.manifest().tables.len(), 5);
    assert_eq!(read_profile(&opened).unwrap(), p);
}

#[test]
fn derived_figures_do_not_outlive_the_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let p = common::small_profile();
    write_profile(&mut dir, &p).unwrap();
    dir.save_derived("totals", &(1u64, "a")).unwrap();
    let opened = ResultDir::open(dir.path()).unwrap();
    assert_eq!(
        opened.load_derived::<(u64, String)>("totals"),
        Some((1, "a".into()))
    );
    // The same profile written again: identical tables, but the figures are gone.
    write_profile(&mut dir, &p).unwrap();
    assert!(!dir.path().join(DERIVED_DIR).exists());
    let opened = ResultDir::open(dir.path()).unwrap();
    assert_eq!(opened.load_derived::<(u64, String)>("totals"), None);
}

#[test]
fn full_manifest_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let m = dir.manifest_mut();
    *m = Manifest::new("hotspots");
    m.command_line = Some(vec![
        "kairos".into(),
        "collect".into(),
        "--".into(),
        "./app".into(),
    ]);
    m.target = Some(Target::Program {
        program: "./app".into(),
        args: vec!["-n".into(), "3".into()],
    });
    m.knobs = BTreeMap::from([("sampling-interval".into(), "10".into())]);
    m.start_time = Some(rfc3339_utc(SystemTime::now()));
    m.duration_secs = Some(1.25);
    m.host = Some(Host {
        name: Some("box".into()),
        cpu_model: Some("Some CPU @ 3GHz".into()),
        kernel_release: Some("6.1.0".into()),
        nr_cpus: Some(2),
    });
    m.event = Some(Event {
        name: "cpu-clock".into(),
        reason: Some("no hardware counters in this VM".into()),
    });
    m.capabilities = vec![Capability {
        name: "kernel-symbols".into(),
        available: false,
        detail: Some("kptr_restrict = 1".into()),
        reason: Some("kernel frames show as [unknown]".into()),
    }];
    m.target_exit = Some(TargetExit::Signal { signal: 9 });
    m.stopped_by = Some("target exited".into());
    m.source = Some(Source::Imported {
        file: "perf.data".into(),
    });
    m.notes = vec!["decode error at offset 0x1234: bad record".into()];
    let expected = m.clone();
    dir.save_manifest().unwrap();
    let opened = ResultDir::open(dir.path()).unwrap();
    assert_eq!(opened.manifest(), &expected);
    assert_eq!(
        expected.source.as_ref().unwrap().to_string(),
        "imported from perf.data"
    );
    let text = fs::read_to_string(dir.path().join(MANIFEST_FILE)).unwrap();
    assert!(
        text.contains("\n  \"kind\": \"hotspots\""),
        "pretty JSON expected:\n{text}"
    );
    let start = expected.start_time.unwrap();
    assert!(
        start.len() == 24 && start.ends_with('Z') && start.as_bytes()[10] == b'T',
        "{start}"
    );
}

#[test]
fn create_refuses_existing_non_empty_dir_and_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r000hs");
    let mut dir = ResultDir::create(&path).unwrap();
    write_profile(&mut dir, &common::small_profile()).unwrap();
    let before = fs::read(path.join(MANIFEST_FILE)).unwrap();
    let err = ResultDir::create(&path).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err:?}");
    assert!(err.to_string().contains("never overwritten"), "{err}");
    assert_eq!(
        fs::read(path.join(MANIFEST_FILE)).unwrap(),
        before,
        "the old result must be untouched"
    );

    let other = tmp.path().join("not-empty");
    fs::create_dir(&other).unwrap();
    fs::write(other.join("notes.txt"), "mine").unwrap();
    assert!(matches!(
        ResultDir::create(&other),
        Err(Error::AlreadyExists { .. })
    ));

    let file = tmp.path().join("a-file");
    fs::write(&file, "x").unwrap();
    assert!(matches!(
        ResultDir::create(&file),
        Err(Error::AlreadyExists { .. })
    ));
}

#[test]
fn create_accepts_empty_dir_and_makes_parents() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    ResultDir::create(&empty).unwrap();
    ResultDir::open(&empty).unwrap();
    let deep = tmp.path().join("a/b/r000hs");
    ResultDir::create(&deep).unwrap();
    assert!(deep.join(TABLES_DIR).is_dir());
}

#[test]
fn next_result_dir_numbering() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    assert_eq!(
        next_result_dir(&d.join("missing"), "hs"),
        d.join("missing/r000hs")
    );
    assert_eq!(next_result_dir(d, "hs"), d.join("r000hs"));
    ResultDir::create(next_result_dir(d, "hs")).unwrap();
    assert_eq!(next_result_dir(d, "hs"), d.join("r001hs"));
    // Numbers are shared across analysis kinds, and files count too.
    fs::create_dir(d.join("r001ue")).unwrap();
    fs::write(d.join("r002"), "").unwrap();
    assert_eq!(next_result_dir(d, "hs"), d.join("r003hs"));
    // Names that are not rNNN... do not count.
    for n in ["r12hs", "results", "x004hs", "r"] {
        fs::create_dir(d.join(n)).unwrap();
    }
    assert_eq!(next_result_dir(d, "hs"), d.join("r003hs"));
    // First unused number: a gap is reused.
    fs::create_dir(d.join("r005hs")).unwrap();
    assert_eq!(next_result_dir(d, "hs"), d.join("r003hs"));
    fs::create_dir(d.join("r003hs")).unwrap();
    fs::create_dir(d.join("r004hs")).unwrap();
    assert_eq!(next_result_dir(d, "ue"), d.join("r006ue"));
    // Past 999 the number just grows.
    for n in 6..1000 {
        fs::create_dir(d.join(format!("r{n:03}x"))).unwrap();
    }
    assert_eq!(next_result_dir(d, "hs"), d.join("r1000hs"));
}

#[test]
fn create_next_takes_successive_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let a = ResultDir::create_next(tmp.path(), "hs").unwrap();
    let b = ResultDir::create_next(tmp.path(), "hs").unwrap();
    assert_eq!(a.path(), tmp.path().join("r000hs"));
    assert_eq!(b.path(), tmp.path().join("r001hs"));
}

#[test]
fn write_rejects_profiles_that_could_not_be_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let mut p = common::small_profile();
    p.samples[0].thread = 99;
    let err = write_profile(&mut dir, &p).unwrap_err();
    assert!(matches!(err, Error::InvalidProfile(_)), "{err:?}");
    assert!(err.to_string().contains("thread 99"), "{err}");

    let mut p = common::small_profile();
    p.stacks.push(Stack {
        parent: Some(p.stacks.len() as u32),
        frame: 0,
    });
    let err = write_profile(&mut dir, &p).unwrap_err();
    assert!(
        err.to_string().contains("parents must come before"),
        "{err}"
    );
}

#[test]
fn samples_in_several_row_groups_round_trip_and_keep_their_events() {
    // More than two row groups of the samples table: written and read by two threads.
    let tmp = tempfile::tempdir().unwrap();
    let mut p = common::generated_profile(600_000, 9);
    p.events = vec![
        kairos_model::EventDef {
            name: "cpu-clock".into(),
            time: true,
        },
        kairos_model::EventDef {
            name: "page-faults".into(),
            time: false,
        },
    ];
    p.sample_events = (0..p.samples.len())
        .map(|i| u16::from(i % 7 == 3))
        .collect();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    write_profile(&mut dir, &p).unwrap();
    let back = read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap();
    assert!(back == p, "round trip differs");

    // A manifest that disagrees with the row groups is caught as before.
    let mut dir = ResultDir::open(dir.path()).unwrap();
    for t in &mut dir.manifest_mut().tables {
        if t.name == "samples" {
            t.rows -= 1;
        }
    }
    dir.save_manifest().unwrap();
    let err = read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap_err();
    assert!(
        err.to_string().contains("rows, but the manifest records"),
        "{err}"
    );
}

#[test]
fn a_manifest_claiming_more_samples_than_the_file_holds_is_an_error_not_an_allocation() {
    // Sizes are no longer capped before the parallel read: the file's size bounds them, so
    // a trillion claimed rows is said to be wrong instead of reserved.
    let tmp = tempfile::tempdir().unwrap();
    let p = common::generated_profile(600_000, 11);
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    write_profile(&mut dir, &p).unwrap();
    let mut dir = ResultDir::open(dir.path()).unwrap();
    for t in &mut dir.manifest_mut().tables {
        if t.name == "samples" {
            t.rows = 1 << 40;
        }
    }
    dir.save_manifest().unwrap();
    let err = read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap_err();
    assert!(
        err.to_string().contains("rows, but the manifest records"),
        "{err}"
    );
}
