//! Replays every saved input through its target without AFL: the crashes that fuzzing
//! found (`fuzz/regressions/<target>/`, kept once fixed so they stay fixed) and the seed
//! corpus (`fuzz/seeds/`, through every target). Cheap: a few hundred small files.
use std::path::Path;

fn replay(target_name: &str, dir: &Path) -> Vec<String> {
    let target = kairos_fuzz::target(target_name).expect("known target");
    let mut failures = Vec::new();
    for file in kairos_fuzz::inputs_in(dir) {
        let data = std::fs::read(&file).expect("readable input");
        if let Err(panic) = kairos_fuzz::run_catching(target, &data) {
            failures.push(format!("{target_name} {}: {panic}", file.display()));
        }
    }
    failures
}

fn check(failures: Vec<String>) {
    assert!(failures.is_empty(), "{} inputs panic:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn regressions_do_not_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut failures = Vec::new();
    for t in kairos_fuzz::TARGETS {
        failures.extend(replay(t.name, &root.join(t.name)));
    }
    check(failures);
}

#[test]
fn seeds_do_not_panic() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    let mut failures = Vec::new();
    for t in kairos_fuzz::TARGETS {
        failures.extend(replay(t.name, &seeds));
    }
    check(failures);
}
