//! `kairos lab emulate-lbr` and `kairos lab score`: refusals, an emulated result every
//! report marks as emulated, and the score on the `spikes` trace.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{kairos, tempdir};
use kairos_result::{write_profile, Manifest, ResultDir};

/// A trace result made from a profile with calls, as `kairos collect trace` writes one.
fn trace_result(dir: &Path, profile: &kairos_model::Profile) {
    let mut r = ResultDir::create(dir).unwrap();
    *r.manifest_mut() = Manifest::new("trace");
    write_profile(&mut r, profile).unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn emulate_then_score_and_every_report_says_emulated() {
    let tmp = tempdir();
    let (trace, delays) = kairos_lab::synth::spikes(1.0, 3);
    assert!(!delays.is_empty());
    let tdir = tmp.path().join("trace");
    trace_result(&tdir, &trace);
    let out = tmp.path().join("emu");
    let r = kairos(&[
        "lab",
        "emulate-lbr",
        "-r",
        s(&tdir),
        "--interval-us",
        "1000",
        "--depth",
        "16",
        "--cycles",
        "-o",
        s(&out),
    ])
    .ok();
    assert!(r.stdout.contains("emulated"), "{}", r.stdout);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["emulation"]["emulated"], true);
    assert_eq!(m["branch_info"]["emulated"], true, "{m}");
    for report in ["summary", "hotspots"] {
        let r = kairos(&["report", report, "-r", s(&out)]).ok();
        assert!(r.stdout.contains("emulated"), "{report}: {}", r.stdout);
    }
    let r = kairos(&["lab", "score", "-r", s(&out)]).ok();
    for m in ["none", "equal", "ratio", "proportional", "cycles"] {
        assert!(r.stdout.contains(m), "{}", r.stdout);
    }
    assert!(r.stdout.contains("emulated"), "{}", r.stdout);
    let j = kairos(&["lab", "score", "-r", s(&out), "--format", "json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    assert!(
        v.as_array().is_some_and(|a| !a.is_empty()) || v.is_object(),
        "{}",
        j.stdout
    );
    let c = kairos(&[
        "lab",
        "score",
        "-r",
        s(&out),
        "--format",
        "csv",
        "--methods",
        "none,equal",
    ])
    .ok();
    assert_eq!(c.stdout.lines().count(), 3, "{}", c.stdout);
}

#[test]
fn refusals_are_one_sentence() {
    let tmp = tempdir();
    let (trace, _) = kairos_lab::synth::spikes(0.2, 1);
    let tdir = tmp.path().join("trace");
    trace_result(&tdir, &trace);
    // A sampled result: no calls.
    let sampled = tmp.path().join("sampled");
    let no_calls = kairos_model::Profile {
        calls: Vec::new(),
        ..trace.clone()
    };
    trace_result(&sampled, &no_calls);
    let r = kairos(&[
        "lab",
        "emulate-lbr",
        "-r",
        s(&sampled),
        "--interval-us",
        "1000",
        "-o",
        s(&tmp.path().join("x")),
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "is a sampled result; emulate-lbr needs an exact trace from `kairos collect trace`"
        ),
        "{}",
        r.stderr
    );
    let r = kairos(&[
        "lab",
        "emulate-lbr",
        "-r",
        s(&tdir),
        "--interval-us",
        "1000",
        "--depth",
        "12",
        "-o",
        s(&tmp.path().join("y")),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--depth 12 is not an LBR depth"),
        "{}",
        r.stderr
    );
    let r = kairos(&[
        "lab",
        "emulate-lbr",
        "-r",
        s(&tdir),
        "--interval-us",
        "0",
        "-o",
        s(&tmp.path().join("z")),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = kairos(&["lab", "score", "-r", s(&tdir)]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("is not an emulated result"),
        "{}",
        r.stderr
    );
    // Emulating an emulated result is refused too, and an existing output is never overwritten.
    let emu = tmp.path().join("emu");
    kairos(&[
        "lab",
        "emulate-lbr",
        "-r",
        s(&tdir),
        "--interval-us",
        "500",
        "-o",
        s(&emu),
    ])
    .ok();
    let r = kairos(&[
        "lab",
        "emulate-lbr",
        "-r",
        s(&emu),
        "--interval-us",
        "500",
        "-o",
        s(&tmp.path().join("w")),
    ]);
    assert!(
        r.code == 1 && r.stderr.contains("already an emulated result"),
        "{}",
        r.stderr
    );
    let r = kairos(&[
        "lab",
        "emulate-lbr",
        "-r",
        s(&tdir),
        "--interval-us",
        "500",
        "-o",
        s(&emu),
    ]);
    assert!(
        r.code == 1 && r.stderr.contains("already exists"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"));
}
