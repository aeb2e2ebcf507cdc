//! The tables are readable without Kairos: DuckDB runs the queries documented in
//! docs/SCHEMA.md against a generated result, and their numbers match the profile's.
//!
//! Needs `python3` with the `duckdb` module; installs it with pip when missing, and fails
//! (never skips) with a clear message when that is impossible.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use kairos_model::Profile;
use kairos_result::{next_result_dir, write_profile, ResultDir};
use serde_json::Value;

/// Runs `python3 -c script` in `cwd` with `stdin`, returning stdout or the failure text.
fn python(script: &str, cwd: &Path, stdin: &str) -> Result<String, String> {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn ensure_duckdb(cwd: &Path) {
    if python("import duckdb", cwd, "").is_ok() {
        return;
    }
    let install = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "duckdb"])
        .output();
    let why = match install {
        Ok(o) if o.status.success() => match python("import duckdb", cwd, "") {
            Ok(_) => return,
            Err(e) => format!("pip installed duckdb but it does not import: {e}"),
        },
        Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
        Err(e) => format!("cannot run python3 -m pip: {e}"),
    };
    panic!(
        "this test needs the Python duckdb module and could not install it \
         (`python3 -m pip install duckdb` failed): {why}"
    );
}

/// The SQL block following `<!-- query: NAME -->` in docs/SCHEMA.md.
fn documented_query(doc: &str, name: &str) -> String {
    let marker = format!("<!-- query: {name} -->");
    let rest = doc
        .split_once(&marker)
        .unwrap_or_else(|| panic!("SCHEMA.md has no {marker}"))
        .1;
    let body = rest.split_once("```sql\n").unwrap().1;
    body.split_once("```").unwrap().0.to_owned()
}

/// Runs each query in DuckDB (cwd = the result's parent) and returns their rows as JSON.
fn run_duckdb(cwd: &Path, queries: &[String]) -> Vec<Vec<Vec<Value>>> {
    const SCRIPT: &str = r#"
import duckdb, json, sys
out = []
for q in json.load(sys.stdin):
    con = duckdb.connect()
    out.append([list(r) for r in con.sql(q).fetchall()])
print(json.dumps(out))
"#;
    let input = serde_json::to_string(queries).unwrap();
    let out = python(SCRIPT, cwd, &input).unwrap_or_else(|e| panic!("DuckDB query failed:\n{e}"));
    serde_json::from_str(&out).unwrap()
}

/// (function, count, weight) per leaf function, ordered as the documented query orders.
fn expected_self(p: &Profile) -> Vec<(String, u64, u64)> {
    let mut m: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for s in &p.samples {
        if let Some(f) = p.leaf_frame(s) {
            let e = m.entry(&f.function).or_default();
            e.0 += 1;
            e.1 += s.weight;
        }
    }
    sorted(
        m.into_iter()
            .map(|(f, (n, w))| (f.to_owned(), n, w))
            .collect(),
    )
}

/// (function, samples with the function anywhere on the stack), counted once per sample.
fn expected_total(p: &Profile) -> Vec<(String, u64, u64)> {
    let mut m: BTreeMap<&str, u64> = BTreeMap::new();
    for s in &p.samples {
        let mut seen: Vec<&str> = p
            .stack_frames(s.stack)
            .map(|(_, f)| f.function.as_str())
            .collect();
        seen.sort_unstable();
        seen.dedup();
        for f in seen {
            *m.entry(f).or_default() += 1;
        }
    }
    sorted(m.into_iter().map(|(f, n)| (f.to_owned(), n, 0)).collect())
}

fn sorted(mut v: Vec<(String, u64, u64)>) -> Vec<(String, u64, u64)> {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(20);
    v
}

#[test]
fn duckdb_runs_the_documented_queries() {
    let tmp = tempfile::tempdir().unwrap();
    ensure_duckdb(tmp.path());

    // Few distinct functions, so the self and total rankings are both non-trivial.
    let mut p = common::generated_profile(50_000, 11);
    for (i, f) in p.frames.iter_mut().enumerate() {
        f.function = format!("fn_{}", i % 37);
    }
    let path = next_result_dir(tmp.path(), "hs");
    assert!(
        path.ends_with("r000hs"),
        "the documented queries read r000hs/"
    );
    let mut dir = ResultDir::create(&path).unwrap();
    write_profile(&mut dir, &p).unwrap();

    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/SCHEMA.md"))
            .unwrap();
    let queries = [
        documented_query(&doc, "self"),
        documented_query(&doc, "total"),
    ];
    let rows = run_duckdb(tmp.path(), &queries);

    let as_tuples = |rows: &[Vec<Value>], with_weight: bool| -> Vec<(String, u64, u64)> {
        rows.iter()
            .map(|r| {
                let w = if with_weight {
                    r[2].as_u64().unwrap()
                } else {
                    0
                };
                (r[0].as_str().unwrap().to_owned(), r[1].as_u64().unwrap(), w)
            })
            .collect()
    };
    let self_rows = as_tuples(&rows[0], true);
    assert_eq!(self_rows, expected_self(&p), "self query");
    assert_eq!(self_rows.len(), 20);
    let total_rows = as_tuples(&rows[1], false);
    assert_eq!(total_rows, expected_total(&p), "total query");
    // Sanity: totals dominate self counts, and the no-stack samples are left out.
    let no_stack = p.samples.iter().filter(|s| s.stack.is_none()).count() as u64;
    let all_self: u64 = expected_self_all(&p);
    assert_eq!(all_self + no_stack, p.samples.len() as u64);
    assert!(total_rows[0].1 >= self_rows[0].1);
}

fn expected_self_all(p: &Profile) -> u64 {
    p.samples
        .iter()
        .filter(|s| p.leaf_frame(s).is_some())
        .count() as u64
}

/// Every SQL block in SCHEMA.md, marked or not, at least runs.
#[test]
fn every_documented_sql_block_runs() {
    let tmp = tempfile::tempdir().unwrap();
    ensure_duckdb(tmp.path());
    let mut dir = ResultDir::create(tmp.path().join("r000hs")).unwrap();
    let p = common::small_profile();
    write_profile(&mut dir, &p).unwrap();
    // The fleet layout's queries read ROOT/.
    kairos_result::fleet::publish(&dir, &tmp.path().join("ROOT")).unwrap();
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/SCHEMA.md"))
            .unwrap();
    let mut statements = Vec::new();
    for block in doc.split("```sql\n").skip(1) {
        let sql = block.split_once("```").unwrap().0;
        statements.extend(
            sql.split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from),
        );
    }
    assert!(statements.len() >= 4, "{statements:?}");
    let rows = run_duckdb(tmp.path(), &statements);
    let manifest = statements
        .iter()
        .position(|s| s.contains("manifest.json"))
        .unwrap();
    let counts = &rows[manifest];
    // The manifest query: samples, lost_records, lost_samples, throttled, undecodable.
    let want = [10, 1, 2, 3, 4].map(Value::from).to_vec();
    assert_eq!(counts, &vec![want]);
}
