//! Every way a result directory can be wrong gives a typed error naming the file, and
//! nothing panics, whatever the bytes.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::fs;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt32Array};
use kairos_result::*;
use parquet::arrow::ArrowWriter;

/// A complete result with the small profile, in a fresh temp dir.
fn result() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r000hs");
    let mut dir = ResultDir::create(&path).unwrap();
    write_profile(&mut dir, &common::generated_profile(3000, 5)).unwrap();
    (tmp, path)
}

fn table(path: &Path, name: &str) -> std::path::PathBuf {
    path.join(TABLES_DIR).join(format!("{name}.parquet"))
}

#[test]
fn open_missing_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let err = ResultDir::open(tmp.path().join("nope")).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(
        err.to_string().contains("no such result directory"),
        "{err}"
    );
}

#[test]
fn open_dir_without_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let err = ResultDir::open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::NotAResult { .. }), "{err:?}");
    assert!(err.to_string().contains("no manifest.json"), "{err}");
    let file = tmp.path().join("f");
    fs::write(&file, "x").unwrap();
    assert!(matches!(
        ResultDir::open(&file),
        Err(Error::NotAResult { .. })
    ));
}

#[test]
fn open_damaged_manifest_gives_position() {
    let (_tmp, path) = result();
    let m = path.join(MANIFEST_FILE);
    let text = fs::read_to_string(&m).unwrap();
    // Cut it in the middle of line 3.
    let cut: usize = text.lines().take(2).map(|l| l.len() + 1).sum::<usize>() + 5;
    fs::write(&m, &text[..cut]).unwrap();
    let err = ResultDir::open(&path).unwrap_err();
    match &err {
        Error::DamagedManifest { line, .. } => assert_eq!(*line, 3, "{err}"),
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .contains("damaged manifest at line 3, column"),
        "{err}"
    );

    // Valid JSON with a wrong type is damaged too, at the offending value.
    fs::write(&m, "{\n  \"format_version\": \"one\"\n}").unwrap();
    let err = ResultDir::open(&path).unwrap_err();
    assert!(
        matches!(err, Error::DamagedManifest { line: 2, .. }),
        "{err:?}"
    );

    // Binary garbage.
    fs::write(&m, [0xff, 0x00, 0x12]).unwrap();
    assert!(matches!(
        ResultDir::open(&path),
        Err(Error::DamagedManifest { line: 1, .. })
    ));
}

#[test]
fn open_newer_format_is_refused() {
    let (_tmp, path) = result();
    let m = path.join(MANIFEST_FILE);
    let text = fs::read_to_string(&m)
        .unwrap()
        .replace("\"format_version\": 1", "\"format_version\": 99");
    fs::write(&m, text).unwrap();
    let err = ResultDir::open(&path).unwrap_err();
    assert!(
        matches!(err, Error::UnsupportedVersion { found: 99, .. }),
        "{err:?}"
    );
}

#[test]
fn missing_table_is_named() {
    let (_tmp, path) = result();
    fs::remove_file(table(&path, "frames")).unwrap();
    let err = ResultDir::open(&path).unwrap_err();
    assert!(
        matches!(&err, Error::MissingTable { table, .. } if table == "frames"),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("table frames: "), "{err}");
}

#[test]
fn truncated_table_is_named_at_open_and_at_read() {
    let (_tmp, path) = result();
    let t = table(&path, "samples");
    let bytes = fs::read(&t).unwrap();
    fs::write(&t, &bytes[..bytes.len() / 2]).unwrap();
    let err = ResultDir::open(&path).unwrap_err();
    assert!(
        matches!(&err, Error::DamagedTable { table, .. } if table == "samples"),
        "{err:?}"
    );
    assert!(err.to_string().contains("truncated"), "{err}");

    // Even when the size check is bypassed (manifest without table list), reading says which.
    let m = path.join(MANIFEST_FILE);
    let mut json: serde_json::Value = serde_json::from_slice(&fs::read(&m).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("tables");
    fs::write(&m, serde_json::to_vec(&json).unwrap()).unwrap();
    let dir = ResultDir::open(&path).unwrap();
    let err = read_profile(&dir).unwrap_err();
    assert!(
        matches!(&err, Error::DamagedTable { table, .. } if table == "samples"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("not a readable Parquet file"),
        "{err}"
    );
}

#[test]
fn table_with_wrong_columns_or_ids_is_damaged() {
    let (_tmp, path) = result();
    let dir = ResultDir::open(&path).unwrap();
    let write = |name: &str, cols: Vec<(&str, ArrayRef)>| {
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let mut w = ArrowWriter::try_new(
            fs::File::create(table(&path, name)).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    };
    let rows = dir.manifest().table("modules").unwrap().rows as usize;
    let ids = |n: usize| Arc::new(UInt32Array::from_iter_values(0..n as u32)) as ArrayRef;
    let strings = |n: usize| {
        Arc::new(StringArray::from_iter_values((0..n).map(|i| i.to_string()))) as ArrayRef
    };

    write("modules", vec![("id", ids(rows)), ("path", strings(rows))]);
    let err = read_profile(&dir).unwrap_err();
    assert!(
        err.to_string().contains("table modules") && err.to_string().contains("no column build_id"),
        "{err}"
    );

    write(
        "modules",
        vec![
            ("id", ids(rows)),
            ("path", ids(rows)),
            ("build_id", strings(rows)),
        ],
    );
    let err = read_profile(&dir).unwrap_err();
    assert!(
        err.to_string()
            .contains("column path has type UInt32, expected Utf8"),
        "{err}"
    );

    let shuffled = Arc::new(UInt32Array::from_iter_values((0..rows as u32).rev())) as ArrayRef;
    write(
        "modules",
        vec![
            ("id", shuffled),
            ("path", strings(rows)),
            ("build_id", strings(rows)),
        ],
    );
    let err = read_profile(&dir).unwrap_err();
    assert!(
        err.to_string().contains("ids must be the row numbers"),
        "{err}"
    );

    write(
        "modules",
        vec![
            ("id", ids(rows - 1)),
            ("path", strings(rows - 1)),
            ("build_id", strings(rows - 1)),
        ],
    );
    let err = read_profile(&dir).unwrap_err();
    assert!(
        err.to_string().contains("rows, but the manifest records"),
        "{err}"
    );

    // A stack that is its own parent would make stack walks loop forever.
    let dir = {
        let (tmp, path) = result();
        let mut dir = ResultDir::open(&path).unwrap();
        dir.manifest_mut().tables.retain(|t| t.name != "stacks");
        dir.save_manifest().unwrap();
        let batch = RecordBatch::try_from_iter(vec![
            ("id", ids(1)),
            (
                "parent",
                Arc::new(UInt32Array::from(vec![Some(0)])) as ArrayRef,
            ),
            ("frame", Arc::new(UInt32Array::from(vec![0])) as ArrayRef),
        ])
        .unwrap();
        let mut w = ArrowWriter::try_new(
            fs::File::create(table(&path, "stacks")).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        (tmp, dir)
    };
    let err = read_profile(&dir.1).unwrap_err();
    assert!(
        matches!(&err, Error::DamagedTable { table, .. } if table == "stacks"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("parents must come before"),
        "{err}"
    );
}

/// Truncating or flipping bytes anywhere in a table gives an error or (for bytes inside
/// values, which Parquet has no checksum for) a profile, but never a panic or a hang.
#[test]
fn corrupt_tables_never_panic() {
    let (_tmp, path) = result();
    let mut dir = ResultDir::open(&path).unwrap();
    // Without the recorded sizes, so reading is what meets the damage.
    dir.manifest_mut().tables.clear();
    dir.save_manifest().unwrap();
    let dir = ResultDir::open(&path).unwrap();
    let mut errors = 0;
    for name in TABLES {
        let t = table(&path, name);
        let good = fs::read(&t).unwrap();
        let step = (good.len() / 40).max(1);
        for cut in (0..good.len()).step_by(step) {
            fs::write(&t, &good[..cut]).unwrap();
            let err = read_profile(&dir).expect_err("a truncated table must not read");
            assert!(
                matches!(&err, Error::DamagedTable { table, .. } if table == name),
                "{err:?}"
            );
            errors += 1;
        }
        for at in (0..good.len()).step_by(step) {
            let mut bad = good.clone();
            bad[at] ^= 0xa5;
            fs::write(&t, &bad).unwrap();
            if read_profile(&dir).is_err() {
                errors += 1;
            }
        }
        fs::write(&t, &good).unwrap();
    }
    assert!(errors > 200);
    read_profile(&dir).unwrap();
}
