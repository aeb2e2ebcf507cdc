//! Reading JSON reports and what the memory samples print, for the memory-access tests.

use std::path::Path;

use serde_json::Value;

use super::kairos_in;

/// The rows of the table titled `title` in a JSON document (none when it has no such table).
pub fn table_rows(doc: &Value, title: &str) -> Vec<Value> {
    doc["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["title"] == title)
        .and_then(|b| b["rows"].as_array().cloned())
        .unwrap_or_default()
}

/// `kairos report NAME -r res --format json --limit 0`, run in `dir`, parsed.
pub fn json_report(dir: &Path, name: &str) -> Value {
    let r = kairos_in(
        dir,
        &[
            "report", name, "-r", "res", "--format", "json", "--limit", "0",
        ],
    )
    .ok();
    serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("{name} is not JSON ({e}):\n{}", r.stdout))
}

/// The (tid, byte offset) of each thread, from `false_sharing: thread K tid T offset O` lines.
pub fn printed_threads(stdout: &str) -> Vec<(u64, u64)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("false_sharing: thread"))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[4].parse().unwrap(), w[6].parse().unwrap())
        })
        .collect()
}
