//! Traced calls round-trip exactly; results without the calls table still open.
#![allow(clippy::unwrap_used)]

mod common;

use kairos_model::Call;
use kairos_result::*;

fn with_calls() -> kairos_model::Profile {
    let mut p = common::small_profile();
    for i in 0..50u64 {
        p.calls.push(Call {
            thread: (i % 2) as u32,
            frame: (i % 3) as u32,
            start_ns: 1000 + i * 10,
            end_ns: 1005 + i * 10,
            depth: (i % 4) as u16,
        });
    }
    p
}

#[test]
fn calls_round_trip_and_old_results_open() {
    let tmp = tempfile::tempdir().unwrap();
    let p = with_calls();
    let mut dir = ResultDir::create(tmp.path().join("r000tr")).unwrap();
    let infos = write_profile(&mut dir, &p).unwrap();
    assert!(
        infos.iter().any(|t| t.name == "calls" && t.rows == 50),
        "{infos:?}"
    );
    assert_eq!(
        read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap(),
        p
    );

    // A result without calls has no table and reads back with none.
    let mut dir = ResultDir::open(dir.path()).unwrap();
    let plain = common::small_profile();
    write_profile(&mut dir, &plain).unwrap();
    assert!(!dir.path().join("tables/calls.parquet").exists());
    assert!(read_profile(&ResultDir::open(dir.path()).unwrap())
        .unwrap()
        .calls
        .is_empty());
}

#[test]
fn bad_calls_are_refused_and_missing_table_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = with_calls();
    p.calls[3].frame = 999;
    let mut dir = ResultDir::create(tmp.path().join("r000tr")).unwrap();
    let e = write_profile(&mut dir, &p).unwrap_err().to_string();
    assert!(e.contains("calls") && e.contains("frame 999"), "{e}");

    write_profile(&mut dir, &with_calls()).unwrap();
    std::fs::remove_file(dir.path().join("tables/calls.parquet")).unwrap();
    let e = match ResultDir::open(dir.path()) {
        Ok(d) => read_profile(&d).unwrap_err(),
        Err(e) => e,
    };
    assert!(e.to_string().contains("calls"), "{e}");
}
