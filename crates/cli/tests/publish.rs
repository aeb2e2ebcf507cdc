//! `kairos publish`: two results copied into the fleet layout and read back by DuckDB as
//! one table partitioned by host, date and result (hive partitioning), each result's rows
//! the same as in its own directory; publishing twice is refused.

#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::process::Command;

use common::{kairos, path_str, sample, tempdir};

fn duckdb(query: &str) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import duckdb; print(duckdb.sql(\"{query}\").fetchall())"
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "duckdb (scripts/install-deps.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn published_results_are_one_partitioned_table() {
    let dir = tempdir();
    let root = dir.path().join("fleet");
    let shares = sample("shares");
    let results: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            let r = dir.path().join(name);
            kairos(&[
                "collect",
                "hotspots",
                "-q",
                "-r",
                path_str(&r),
                "--",
                path_str(&shares),
                "0.3",
            ])
            .ok();
            r
        })
        .collect();
    let out = kairos(&[
        "publish",
        "-r",
        path_str(&results[0]),
        "-r",
        path_str(&results[1]),
        "--root",
        path_str(&root),
    ])
    .ok();
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
    for r in &results {
        let own = duckdb(&format!(
            "select count(*) from '{}/tables/samples.parquet'",
            r.display()
        ));
        let name = r.file_name().unwrap().to_string_lossy().into_owned();
        let through = duckdb(&format!(
            "select count(*) from read_parquet('{}/samples/*/*/*/*.parquet', hive_partitioning=true) where result like '{name}-%'",
            root.display()
        ));
        assert_eq!(own, through, "{name}");
        assert_ne!(own, "[(0,)]", "{name} has samples");
    }
    // Partition columns from the paths: one host, one date, two results.
    let parts = duckdb(&format!(
        "select count(distinct host), count(distinct date), count(distinct result) from read_parquet('{}/stacks/*/*/*/*.parquet', hive_partitioning=true)",
        root.display()
    ));
    assert_eq!(parts, "[(1, 1, 2)]");
    // The documented query over the layout finds the sample's functions.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/SCHEMA.md"))
        .unwrap();
    let block = doc.split("<!-- query: fleet-self -->").nth(1).unwrap();
    let sql = block
        .split("```sql")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let sql = sql
        .replace("ROOT/", &format!("{}/", root.display()))
        .replace('\n', " ");
    let top = duckdb(sql.trim().trim_end_matches(';'));
    assert!(top.contains("share_a"), "{top}");
    let again = kairos(&[
        "publish",
        "-r",
        path_str(&results[0]),
        "--root",
        path_str(&root),
    ]);
    assert_ne!(again.code, 0);
    assert!(
        again.stderr.contains("is already published"),
        "{}",
        again.stderr
    );
}
