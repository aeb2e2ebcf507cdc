//! The workspace's crates import in one direction: each sits in a layer (as
//! docs/ARCHITECTURE.md lists them) and depends only on crates of its layer or below, and
//! the front ends (the CLI, the page's server, the comparison) reach the analyses only
//! through the registry. Read from `cargo metadata`, so it is what Cargo builds.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::process::Command;

/// Layers from the bottom; a package not listed here fails the test until it is placed.
const LAYERS: &[&[&str]] = &[
    // Shared types, formats and algorithms.
    &[
        "kairos-model",
        "kairos-report",
        "kairos-table",
        "kairos-perf-data",
        "kairos-symbolize",
        "kairos-procfs",
        "kairos-platform",
        "kairos-metrics",
        "kairos-x86-access",
        "kairos-testvm",
        "kairos-time-assignment",
    ],
    // Recording, conversion and storage.
    &[
        "kairos-collector",
        "kairos-convert",
        "kairos-mem-source",
        "kairos-resctrl",
        "kairos-result",
        "kairos-export",
    ],
    // Measurement every collection shares; the page's engine.
    &["kairos-bandwidth", "kairos-fleet", "kairos-view-engine"],
    // What an analysis declares.
    &["kairos-analysis-api"],
    // What every collection shares.
    &["kairos-session"],
    // The reports of any sampled profile.
    &["kairos-profile-report"],
    &[
        "kairos-analysis-hotspots",
        "kairos-analysis-hugepages",
        "kairos-analysis-io",
        "kairos-analysis-latency",
        "kairos-analysis-memory-access",
        "kairos-analysis-memory-consumption",
        "kairos-analysis-system-overview",
        "kairos-analysis-topology",
        "kairos-analysis-trace",
    ],
    &["kairos-analysis-registry"],
    // Tools built on results and analyses.
    &[
        "kairos-agent",
        "kairos-compare",
        "kairos-lab",
        "kairos-selftest",
        "kairos-run",
    ],
    &["kairos-view"],
    &["kairos"],
];

/// Crates under crates/analysis/ that any crate may use directly: what an analysis
/// declares, the list of them, and the time-assignment library.
const OPEN_TO_ALL: &[&str] = &[
    "kairos-analysis-api",
    "kairos-analysis-registry",
    "kairos-time-assignment",
];

/// The front ends, which know analyses only through the registry.
const FRONT_ENDS: &[&str] = &["kairos", "kairos-compare", "kairos-view"];

/// Each workspace package's directory (relative to the workspace) and its normal
/// (not dev, not build) dependencies on other workspace packages.
fn workspace() -> BTreeMap<String, (String, Vec<String>)> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let root = v["workspace_root"].as_str().unwrap().to_string();
    let packages = v["packages"].as_array().unwrap();
    let names: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap())
                .filter(|d| names.contains(d))
                .map(String::from)
                .collect();
            let dir = p["manifest_path"].as_str().unwrap();
            let dir = dir
                .strip_prefix(&root)
                .unwrap_or(dir)
                .trim_start_matches('/')
                .trim_end_matches("/Cargo.toml")
                .to_string();
            (p["name"].as_str().unwrap().to_string(), (dir, deps))
        })
        .collect()
}

fn layer(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&name))
}

#[test]
fn no_crate_imports_from_a_layer_above_it() {
    let mut offences = Vec::new();
    for (name, (_, deps)) in workspace() {
        let Some(mine) = layer(&name) else {
            offences.push(format!(
                "{name} is in no layer: place it in LAYERS and docs/ARCHITECTURE.md"
            ));
            continue;
        };
        for d in deps {
            match layer(&d) {
                Some(theirs) if theirs <= mine => {}
                Some(theirs) => offences.push(format!(
                    "{name} (layer {}) imports {d} (layer {})",
                    mine + 1,
                    theirs + 1
                )),
                None => {}
            }
        }
    }
    assert!(offences.is_empty(), "{}", offences.join("\n"));
}

#[test]
fn front_ends_reach_the_analyses_only_through_the_registry() {
    let ws = workspace();
    let is_analysis = |name: &str| {
        ws.get(name)
            .is_some_and(|(dir, _)| dir.starts_with("crates/analysis/"))
            && !OPEN_TO_ALL.contains(&name)
    };
    let mut offences = Vec::new();
    for front in FRONT_ENDS {
        let (_, deps) = &ws[*front];
        for d in deps.iter().filter(|d| is_analysis(d)) {
            offences.push(format!("{front} depends on {d}"));
        }
    }
    assert!(
        offences.is_empty(),
        "declare it in the analysis's spec and go through kairos-analysis-registry:\n{}",
        offences.join("\n")
    );
}
