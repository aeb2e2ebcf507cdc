//! Bad input gets one clear sentence and a non-zero exit, never a panic, and never
//! overwrites or loses a result.

mod common;

use common::{fixtures, kairos, kairos_in, path_str, sample, tempdir, Run};

/// One line on stderr, starting with "kairos:", no panic, the expected exit code.
fn assert_sentence(r: &Run, code: i32, needle: &str) {
    assert_eq!(
        r.code, code,
        "exit code\nstdout:{}\nstderr:{}",
        r.stdout, r.stderr
    );
    assert!(!r.stderr.contains("panicked"), "panic: {}", r.stderr);
    let line = r.stderr.trim_end();
    assert!(line.starts_with("kairos: "), "not our message: {line}");
    assert_eq!(line.lines().count(), 1, "more than one line: {line}");
    assert!(line.contains(needle), "expected '{needle}' in: {line}");
}

#[test]
fn unknown_analysis_report_knob_and_format() {
    assert_sentence(
        &kairos(&["collect", "nope", "--", "true"]),
        2,
        "unknown analysis 'nope'",
    );
    assert_sentence(
        &kairos(&["collect", "hotspots", "-k", "colour=red", "--", "true"]),
        2,
        "unknown knob 'colour'",
    );
    assert_sentence(
        &kairos(&[
            "collect",
            "hotspots",
            "-k",
            "sampling-interval-us=1",
            "--",
            "true",
        ]),
        2,
        "from 10 to 1000000",
    );
    assert_sentence(
        &kairos(&[
            "collect",
            "hotspots",
            "-k",
            "stack-unwinding=lbr",
            "--",
            "true",
        ]),
        2,
        "one of fp, dwarf",
    );
    assert_sentence(&kairos(&["collect", "hotspots"]), 2, "nothing to collect");
    // perf record's spellings: refused where the analysis has no such knob.
    assert_sentence(
        &kairos(&["collect", "memory-consumption", "-F", "100", "--", "true"]),
        2,
        "-F sets the knob sampling-interval-us, which the memory-consumption analysis does not have",
    );
    assert_sentence(
        &kairos(&["collect", "hotspots", "-e", "instructions", "--", "true"]),
        2,
        "use -e cpu-clock or -e cycles",
    );
    assert_sentence(
        &kairos(&["report", "flamegraph", "-r", "/nonexistent"]),
        2,
        "unknown report 'flamegraph'",
    );
    assert_sentence(
        &kairos(&["info", "--format", "xml"]),
        2,
        "unknown format 'xml'",
    );
}

#[test]
fn missing_program_and_pid_leave_no_result() {
    let dir = tempdir();
    let r = kairos_in(
        dir.path(),
        &["collect", "hotspots", "--", "./does-not-exist"],
    );
    assert_sentence(&r, 1, "program './does-not-exist' was not found");
    let r = kairos_in(dir.path(), &["collect", "hotspots", "-p", "999999999"]);
    assert_sentence(&r, 1, "no process has PID 999999999");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "a failed collection left files behind"
    );
}

#[test]
fn existing_result_is_never_overwritten() {
    let dir = tempdir();
    let r = dir.path().join("r");
    let prog = sample("transitions");
    kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&prog),
        "20",
    ])
    .ok();
    let before = std::fs::read(r.join("manifest.json")).unwrap();
    let again = kairos(&[
        "collect",
        "hotspots",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&prog),
        "20",
    ]);
    assert_sentence(&again, 1, "already exists");
    assert_eq!(before, std::fs::read(r.join("manifest.json")).unwrap());
    // The default name moves on instead of overwriting.
    kairos_in(
        dir.path(),
        &["collect", "hotspots", "-q", "--", path_str(&prog), "20"],
    )
    .ok();
    kairos_in(
        dir.path(),
        &["collect", "hotspots", "-q", "--", path_str(&prog), "20"],
    )
    .ok();
    assert!(
        dir.path().join("r000hs/manifest.json").is_file()
            && dir.path().join("r001hs/manifest.json").is_file()
    );
}

#[test]
fn reports_on_missing_or_damaged_results() {
    let dir = tempdir();
    assert_sentence(
        &kairos(&[
            "report",
            "hotspots",
            "-r",
            path_str(&dir.path().join("none")),
        ]),
        1,
        "cannot open result",
    );
    let imported = dir.path().join("imp");
    let fx = fixtures();
    kairos_in(
        &fx,
        &[
            "import",
            "-q",
            "zen4_lbrextv2_16deep.perf.data",
            "-r",
            path_str(&imported),
        ],
    )
    .ok();
    std::fs::write(imported.join("manifest.json"), "{ not json").unwrap();
    assert_sentence(
        &kairos(&["report", "hotspots", "-r", path_str(&imported)]),
        1,
        "cannot open result",
    );
    assert_sentence(
        &kairos(&["report", "hotspots", "-r", "/"]),
        1,
        "cannot open result",
    );
}

#[test]
fn bad_report_options() {
    let dir = tempdir();
    let r = dir.path().join("r");
    kairos_in(
        &fixtures(),
        &[
            "import",
            "-q",
            "zen4_lbrextv2_16deep.perf.data",
            "-r",
            path_str(&r),
        ],
    )
    .ok();
    let r = path_str(&r);
    assert_sentence(
        &kairos(&["report", "hotspots", "-r", r, "--group-by", "colour"]),
        2,
        "colour",
    );
    assert_sentence(
        &kairos(&["report", "hotspots", "-r", r, "--format", "xml"]),
        2,
        "xml",
    );
    assert_sentence(
        &kairos(&["report", "hotspots", "-r", r, "--time-range", "abc"]),
        2,
        "START:END",
    );
    assert_sentence(
        &kairos(&["report", "hotspots", "-r", r, "--time-range", "2:1"]),
        2,
        "ends before it starts",
    );
    assert_sentence(
        &kairos(&["report", "timeline", "-r", r, "--bucket-ms", "0"]),
        2,
        "positive number",
    );
}

#[test]
fn import_of_non_perf_data_and_truncated_files() {
    let dir = tempdir();
    let junk = dir.path().join("junk.data");
    std::fs::write(&junk, b"this is not a perf.data file at all, just text").unwrap();
    assert_sentence(
        &kairos_in(dir.path(), &["import", "junk.data"]),
        1,
        "cannot import junk.data",
    );
    assert_sentence(
        &kairos_in(dir.path(), &["import", "missing.data"]),
        1,
        "cannot import missing.data",
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "a failed import left a result behind"
    );

    // Cut a real recording in the middle of its data: the import keeps what it could
    // read, says where it broke, and the result is usable.
    let full = std::fs::read(fixtures().join("westmere_any_16deep.perf.data")).unwrap();
    let cut = dir.path().join("cut.data");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let r = dir.path().join("r");
    let out = kairos(&["import", "-q", path_str(&cut), "-r", path_str(&r)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("damaged") && out.stderr.contains("offset"),
        "{}",
        out.stderr
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(r.join("manifest.json")).unwrap()).unwrap();
    let samples = manifest["counts"]["samples"].as_u64().unwrap();
    assert!(
        samples > 1000 && samples < 9232,
        "kept {samples} of 9232 samples"
    );
    kairos(&["report", "hotspots", "-r", path_str(&r)]).ok();
}

#[test]
fn trace_result_where_samples_are_expected() {
    let dir = tempdir();
    let r = dir.path().join("tr");
    let prog = sample("transitions-instrumented");
    kairos(&[
        "collect",
        "trace",
        "-q",
        "-r",
        path_str(&r),
        "--",
        path_str(&prog),
        "5",
    ])
    .ok();
    for report in ["hotspots", "timeline", "branches"] {
        assert_sentence(
            &kairos(&["report", report, "-r", path_str(&r)]),
            2,
            "is an exact trace",
        );
    }
}
