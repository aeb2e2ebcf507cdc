//! Branch records and branch info round-trip exactly; results without them still open.
#![allow(clippy::unwrap_used)]

mod common;

use kairos_model::{BranchInfo, BranchKind, BranchRecord};
use kairos_result::*;

fn with_branches() -> kairos_model::Profile {
    let mut p = common::small_profile();
    let kinds = [
        BranchKind::Call,
        BranchKind::Return,
        BranchKind::Other,
        BranchKind::Unknown,
    ];
    for s in 0..p.samples.len() as u32 {
        for pos in 0..4u16 {
            p.branches.push(BranchRecord {
                sample: s,
                position: pos,
                from_address: 0x4000 + u64::from(s) * 16 + u64::from(pos),
                to_address: 0x5000 + u64::from(pos),
                from_frame: (pos % 2 == 0).then_some(u32::from(pos) % 6),
                to_frame: (pos == 1).then_some(2),
                kind: kinds[pos as usize],
                cycles: (pos != 3).then_some(u32::from(pos) * 7 + s),
                mispredicted: pos == 2,
                is_new: pos < 2,
            });
        }
    }
    p.branch_info = Some(BranchInfo {
        depth: 32,
        has_cycles: true,
        filter: "user call+return".into(),
        emulated: false,
        overflowed_snapshots: 3,
        unclassified: 10,
    });
    p
}

#[test]
fn branches_round_trip_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let p = with_branches();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let infos = write_profile(&mut dir, &p).unwrap();
    assert!(
        infos.iter().any(|t| t.name == "branches" && t.rows == 40),
        "{infos:?}"
    );
    assert!(dir.path().join("tables/branches.parquet").is_file());
    let opened = ResultDir::open(dir.path()).unwrap();
    assert_eq!(opened.manifest().branch_info, p.branch_info);
    assert_eq!(read_profile(&opened).unwrap(), p);

    // Rewriting without branches removes the table and the info.
    let mut dir = ResultDir::open(dir.path()).unwrap();
    let plain = common::small_profile();
    write_profile(&mut dir, &plain).unwrap();
    assert!(!dir.path().join("tables/branches.parquet").exists());
    assert_eq!(
        read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap(),
        plain
    );
}

#[test]
fn result_without_branch_table_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let p = common::small_profile();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    write_profile(&mut dir, &p).unwrap();
    let manifest = std::fs::read_to_string(dir.path().join(MANIFEST_FILE)).unwrap();
    assert!(!manifest.contains("branch"), "{manifest}");
    let back = read_profile(&ResultDir::open(dir.path()).unwrap()).unwrap();
    assert!(back.branches.is_empty() && back.branch_info.is_none());
}

#[test]
fn bad_branch_references_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = with_branches();
    p.branches[0].sample = 999;
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let e = write_profile(&mut dir, &p).unwrap_err().to_string();
    assert!(e.contains("branches") && e.contains("sample 999"), "{e}");
}

#[test]
fn missing_listed_branch_table_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    write_profile(&mut dir, &with_branches()).unwrap();
    std::fs::remove_file(dir.path().join("tables/branches.parquet")).unwrap();
    // Either opening or reading says which table is gone.
    let e = match ResultDir::open(dir.path()) {
        Ok(d) => read_profile(&d).unwrap_err(),
        Err(e) => e,
    };
    assert!(e.to_string().contains("branches"), "{e}");
}
