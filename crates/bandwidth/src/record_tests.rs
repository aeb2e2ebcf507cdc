//! Tests of record.rs: the source choice and its sentences, and MBM deltas from a
//! resctrl tree.

use super::*;

#[test]
fn no_uncore_and_no_resctrl_is_one_sentence_with_both_reasons() {
    let empty = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let p = Places {
        pmus: empty.path().into(),
        cpus: empty.path().into(),
        resctrl: empty.path().join("resctrl"),
    };
    let why = open(&p, Err("no perfmon uncore file".into()))
        .err()
        .unwrap_or_default();
    assert!(
        why.starts_with(
            "no bandwidth counters here: uncore: no uncore PMUs (a virtual machine exposes none"
        ),
        "{why}"
    );
    assert!(why.contains("; resctrl: resctrl is not mounted"), "{why}");
    let t = Recorder::start(Err(why.clone()), Duration::from_millis(100)).finish();
    assert_eq!((t.unavailable, t.points.len()), (Some(why), 0));
}

#[test]
fn the_info_line_says_what_is_needed() {
    let empty = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let p = Places {
        pmus: empty.path().into(),
        cpus: empty.path().into(),
        resctrl: empty.path().join("resctrl"),
    };
    let c = capability(&p);
    assert!(!c.available);
    assert!(c
        .reason
        .unwrap_or_default()
        .contains("needs uncore memory-controller PMUs"));
    let shared = std::env::var_os("KAIROS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let p = Places {
        resctrl: shared.join("fixtures/resctrl/goresctrl/resctrl.full"),
        ..p
    };
    assert!(capability(&p).available);
}

/// The recorder on a copy of a recorded resctrl tree whose counters grow between ticks.
#[test]
fn records_mbm_deltas_from_a_resctrl_tree() {
    let shared = std::env::var_os("KAIROS_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let src = shared.join("fixtures/resctrl/goresctrl/resctrl.full");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ok = std::process::Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(dir.path().join("r"))
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "copy {}", src.display());
    let root = dir.path().join("r");
    let p = Places {
        pmus: dir.path().join("none"),
        cpus: dir.path().join("none"),
        resctrl: root.clone(),
    };
    let source = open(&p, Err("no perfmon uncore file".into()));
    assert!(matches!(source, Ok(Source::Mbm(_))));
    let rec = Recorder::start(source, Duration::from_millis(20));
    let file = root.join("mon_data/mon_L3_00/mbm_total_bytes");
    let mut v: u64 = std::fs::read_to_string(&file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{}", file.display()));
    for _ in 0..10 {
        v += 10_000_000;
        // Written beside and renamed, as the kernel's file never shows half a number.
        let tmp = root.join("mon_data/mon_L3_00/.tmp");
        std::fs::write(&tmp, format!("{v}\n")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::rename(&tmp, &file).unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(Duration::from_millis(15));
    }
    let t = rec.finish();
    assert_eq!(t.unavailable, None);
    assert_eq!(t.domain, "L3 domain");
    let moved: f64 = t
        .points
        .iter()
        .filter(|p| p.domain == 0 && p.flow == Flow::Total)
        .map(|p| p.bytes_per_s * p.dur_ns as f64 / 1e9)
        .sum();
    // Every byte written before the last read is counted, whatever the ticks were.
    assert!((moved - 100e6).abs() < 1.0, "{moved}");
    assert!(t.notes.is_empty(), "{:?}", t.notes);
    assert!(t.points.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
}
