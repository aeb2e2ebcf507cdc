//! `-k stack-unwinding=dwarf` recovers the call chain of code built without frame
//! pointers; frame-pointer unwinding of the same program does not (so the check can fail).

mod common;

use std::path::Path;
use std::process::Command;

use common::{kairos, path_str, tempdir};

/// main -> outer -> middle -> leaf, leaf spinning ~0.5 s. The statements after each call
/// keep gcc from turning the calls into tail jumps, which would drop callers from any
/// unwinder's stack.
const PROGRAM: &str = r#"
#include <time.h>
volatile unsigned long sink;
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
__attribute__((noinline)) void leaf(double until) {
    while (now() < until)
        for (int i = 0; i < 100000; i++) sink += i * 7;
}
__attribute__((noinline)) void middle(double until) { leaf(until); sink++; }
__attribute__((noinline)) void outer(double until) { middle(until); sink++; }
int main(void) { outer(now() + 0.5); return 0; }
"#;

fn build(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("chain.c");
    let exe = dir.join("chain");
    std::fs::write(&src, PROGRAM).expect("write the test program");
    let out = Command::new("gcc")
        .args(["-O2", "-fomit-frame-pointer", "-fno-inline", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("this test needs gcc on PATH");
    assert!(
        out.status.success(),
        "gcc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Collects `exe` with the given unwinding and returns (samples whose stack holds leaf,
/// of those the ones whose stack has the whole chain main;outer;middle;leaf).
fn leaf_stacks(dir: &Path, exe: &Path, unwinding: &str) -> (u64, u64) {
    let r = dir.join(format!("r-{unwinding}"));
    let knob = format!("stack-unwinding={unwinding}");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "-k",
        &knob,
        "--",
        path_str(exe),
    ])
    .ok();
    let csv = kairos(&[
        "report",
        "hotspots",
        "--group-by",
        "callstack",
        "-r",
        path_str(&r),
        "--format",
        "csv",
    ])
    .ok()
    .stdout;
    let (mut leaf, mut full) = (0, 0);
    // Rows are `Callstack,Samples,CPU time,CPU %`, root first; our names hold no commas.
    for row in csv.lines() {
        let mut cols = row.rsplitn(4, ',');
        let (Some(_), Some(_), Some(samples), Some(stack)) =
            (cols.next(), cols.next(), cols.next(), cols.next())
        else {
            continue;
        };
        let Ok(samples) = samples.parse::<u64>() else {
            continue;
        };
        let frames: Vec<&str> = stack.split(';').collect();
        if frames.contains(&"leaf") {
            leaf += samples;
            if frames
                .windows(4)
                .any(|w| w == ["main", "outer", "middle", "leaf"])
            {
                full += samples;
            }
        }
    }
    (leaf, full)
}

#[test]
fn dwarf_unwinding_recovers_stacks_that_frame_pointers_lose() {
    let dir = tempdir();
    let exe = build(dir.path());

    let (leaf, full) = leaf_stacks(dir.path(), &exe, "dwarf");
    assert!(leaf >= 50, "only {leaf} samples in leaf");
    eprintln!("dwarf: {full} of {leaf} leaf samples have main;outer;middle;leaf");
    assert!(
        full * 10 >= leaf * 9,
        "dwarf: only {full} of {leaf} leaf samples have the whole chain"
    );

    let (leaf, full) = leaf_stacks(dir.path(), &exe, "fp");
    assert!(leaf >= 50, "only {leaf} samples in leaf");
    eprintln!("fp: {full} of {leaf} leaf samples have main;outer;middle;leaf");
    assert!(
        full * 10 < leaf,
        "fp: {full} of {leaf} leaf samples have the whole chain; the program keeps frame pointers?"
    );
}
