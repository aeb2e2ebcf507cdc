//! Text reports never cut a sentence: section values and notes wrap to 100 columns when
//! the output is not a terminal and to the terminal's width when it is; only table cells
//! are shortened with `…`, and `--wide` shows them whole. On the imported recordings the
//! golden tests use.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{fixtures, kairos_bin, kairos_in, path_str, tempdir};
use serde_json::Value;

fn import(dir: &Path, from: &Path, file: &str) -> PathBuf {
    let r = dir.join("r");
    kairos_in(from, &["import", "-q", file, "-r", path_str(&r)]).ok();
    r
}

/// The lines of section `title` of a text document (up to the blank line after it).
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// The value of `key` in section lines: its first line and the continuation lines under it.
fn value(lines: &[&str], key: &str) -> String {
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} in {lines:#?}"));
    let first = lines[at].trim_start()[key.len() + 1..].trim();
    let mut words = vec![first.to_string()];
    for l in &lines[at + 1..] {
        // A continuation line has no key: it starts with more blanks than a key line.
        if !l.starts_with("   ") {
            break;
        }
        words.push(l.trim().to_string());
    }
    words.join(" ")
}

#[test]
fn section_values_and_notes_wrap_to_100_columns_whole() {
    let tmp = tempdir();
    let mem = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/mem");
    let r = import(tmp.path(), &mem, "skx-2s-ldlat64-weight_struct.perf.data");
    let text = kairos_in(tmp.path(), &["report", "summary", "-r", path_str(&r)])
        .ok()
        .stdout;
    let json: Value = serde_json::from_str(
        &kairos_in(
            tmp.path(),
            &["report", "summary", "-r", path_str(&r), "--format", "json"],
        )
        .ok()
        .stdout,
    )
    .unwrap();
    let collection = section(&text, "Collection");
    assert!(
        collection.iter().all(|l| l.chars().count() <= 100),
        "{collection:#?}"
    );
    for key in ["Address source", "Event"] {
        let whole = json["blocks"][0]["values"][key].as_str().unwrap();
        assert!(whole.chars().count() > 60, "{key}: {whole}");
        assert_eq!(value(&collection, key), whole, "{text}");
    }
    assert!(!collection.iter().any(|l| l.contains('…')), "{text}");
    // The notes under the report: wrapped, each word there.
    let notes: Vec<&str> = text.lines().skip_while(|l| *l != "Notes:").collect();
    assert!(notes.iter().all(|l| l.chars().count() <= 100), "{notes:#?}");
    assert!(
        notes
            .iter()
            .any(|l| l.contains("MEM_TRANS_RETIRED.LOAD_LATENCY:ldlat=64")),
        "{notes:#?}"
    );
}

#[test]
fn wide_shows_table_cells_whole() {
    let tmp = tempdir();
    let lbr = fixtures();
    let r = import(tmp.path(), &lbr, "skylake-sp_any_32deep_cycles.perf.data");
    let args = [
        "report",
        "hotspots",
        "-r",
        path_str(&r),
        "--group-by",
        "module",
    ];
    let cut = kairos_in(tmp.path(), &args).ok().stdout;
    let wide = kairos_in(tmp.path(), &[&args[..], &["--wide"]].concat())
        .ok()
        .stdout;
    let json: Value = serde_json::from_str(
        &kairos_in(tmp.path(), &[&args[..], &["--format", "json"]].concat())
            .ok()
            .stdout,
    )
    .unwrap();
    let long = json
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["Module"].as_str())
        .find(|m| m.chars().count() > 60)
        .expect("a module path longer than a cell");
    assert!(cut.contains('…') && !cut.contains(long), "{cut}");
    assert!(wide.contains(long) && !wide.contains('…'), "{wide}");
    // `--wide` is accepted wherever text is printed.
    kairos_in(
        tmp.path(),
        &["compare", path_str(&r), path_str(&r), "--wide"],
    )
    .ok();
}

#[test]
fn sentences_wrap_to_the_terminal_width() {
    let tmp = tempdir();
    let mem = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/mem");
    let r = import(tmp.path(), &mem, "skx-2s-ldlat64-weight_struct.perf.data");
    // A terminal of 60 columns (util-linux `script` gives the command one).
    let cmd = format!(
        "stty cols 60 rows 40; exec {} report summary -r {}",
        kairos_bin().display(),
        r.display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let collection = section(&text, "Collection");
    assert!(collection.len() > 4, "{text}");
    assert!(
        collection.iter().all(|l| l.chars().count() <= 60),
        "{collection:#?}"
    );
    let json: Value = serde_json::from_str(
        &kairos_in(
            tmp.path(),
            &["report", "summary", "-r", path_str(&r), "--format", "json"],
        )
        .ok()
        .stdout,
    )
    .unwrap();
    let whole = json["blocks"][0]["values"]["Address source"]
        .as_str()
        .unwrap();
    assert_eq!(value(&collection, "Address source"), whole, "{text}");
}
