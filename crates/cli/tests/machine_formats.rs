//! Every report of every analysis in `--format json` and `--format csv`, on the results the
//! golden tests use (the LBR, memory-access and topology recordings imported) and on a short
//! collection of each analysis that has no recording, read strictly: JSON whose objects
//! never repeat a key (a lenient reader keeps the last of a repeated key and loses the
//! others without a word), CSV tables whose rows all have their header's width. The
//! topology and bandwidth reports, which apply to any result, run on every one; a report
//! that refuses a result must say why in one sentence, and each report must render on at
//! least one result. Also `compare` and `info`.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{fixtures, kairos_in, path_str, sample, tempdir};
use kairos_report::{strict, Format};

/// The reports every result has, whatever its analysis.
const ANY_RESULT: [&str; 2] = ["topology", "bandwidth"];

fn shared(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures")
        .join(dir)
}

/// Imports `file` of directory `from` into `dir/name`.
fn import(dir: &Path, from: &Path, file: &str, name: &str) -> PathBuf {
    let r = dir.join(name);
    kairos_in(
        from,
        &[
            "import",
            "-q",
            file,
            "-r",
            path_str(&r),
            "--perf-map-dir",
            ".",
        ],
    )
    .ok();
    r
}

/// `kairos collect ANALYSIS -q -r dir/name ARGS`.
fn collect(dir: &Path, analysis: &str, name: &str, args: &[&str]) -> PathBuf {
    let r = dir.join(name);
    let mut a = vec!["collect", analysis, "-q", "-r", path_str(&r)];
    a.extend(args);
    let _turn = common::cpu_turn();
    kairos_in(dir, &a).ok();
    r
}

/// Extra arguments a report needs to print anything (`branches`: which sample).
fn needs(report: &str) -> &'static [&'static str] {
    match report {
        "branches" => &["--sample", "1"],
        _ => &[],
    }
}

/// Runs `report` on `result` in both machine formats; Err: the refusal's sentence.
fn render(dir: &Path, result: &Path, report: &str) -> Result<(), String> {
    for format in [Format::Json, Format::Csv] {
        let mut args = vec![
            "report",
            report,
            "-r",
            path_str(result),
            "--format",
            format.as_str(),
            "--limit",
            "0",
        ];
        args.extend(needs(report));
        let run = kairos_in(dir, &args);
        if run.code != 0 {
            // A refusal is a sentence and an exit status, never a crash.
            assert!(
                matches!(run.code, 1 | 2)
                    && run.stderr.starts_with("kairos: ")
                    && run.stderr.trim_end().lines().count() == 1
                    && run.stdout.is_empty(),
                "{report} on {}: exit {}\nstdout:\n{}\nstderr:\n{}",
                result.display(),
                run.code,
                run.stdout,
                run.stderr
            );
            return Err(run.stderr.trim_end().to_string());
        }
        if let Err(e) = strict::check(format, &run.stdout) {
            panic!(
                "{report} --format {format} on {}: {e}\n{}",
                result.display(),
                run.stdout
            );
        }
        assert!(
            !run.stdout.trim().is_empty(),
            "{report} --format {format} on {} printed nothing",
            result.display()
        );
    }
    Ok(())
}

#[test]
fn every_report_of_every_result_is_strict_json_and_csv() {
    let tmp = tempdir();
    let t = tmp.path();
    let lbr = fixtures();
    let mut results = vec![
        import(t, &lbr, "skylake-sp_any_32deep_cycles.perf.data", "skylake"),
        import(
            t,
            &lbr,
            "sandybridge_systemwide_callchain_any_16deep.perf.data",
            "sandybridge",
        ),
        import(t, &lbr, "zen4_lbrextv2_16deep.perf.data", "zen4"),
        import(
            t,
            &shared("mem"),
            "skx-2s-ldlat64-weight_struct.perf.data",
            "pebs",
        ),
    ];
    let snb = import(
        t,
        &shared("topology"),
        "snb-ep-2s-numatopology.perf.data",
        "snb",
    );
    // The recorded 2-socket machine's platform, as the topology golden has it.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../analysis/topology/tests/golden/platform-snb-ep-2s.json"),
        snb.join("platform.json"),
    )
    .unwrap();
    results.push(snb);
    let transitions = sample("transitions");
    let fs = sample("false_sharing");
    results.extend([
        collect(t, "hotspots", "hs", &["--", path_str(&transitions), "200"]),
        collect(
            t,
            "system-overview",
            "so",
            &["--", path_str(&transitions), "200"],
        ),
        collect(
            t,
            "memory-consumption",
            "mc",
            &["--", path_str(&sample("allocs"))],
        ),
        collect(
            t,
            "memory-access",
            "ma",
            &["--", path_str(&fs), "2", "20000000"],
        ),
        collect(
            t,
            "trace",
            "tr",
            &["--", path_str(&sample("transitions-instrumented")), "5"],
        ),
        collect(t, "io", "io", &["-d", "1", "--", "true"]),
    ]);

    let mut rendered: BTreeSet<(String, String)> = BTreeSet::new();
    let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
    let mut refusals = Vec::new();
    for r in &results {
        let kind = kairos_result::ResultDir::open(r)
            .unwrap()
            .manifest()
            .kind
            .clone();
        let spec = kairos_analysis_registry::for_kind(kind.as_deref());
        let mut reports: Vec<&str> = spec.report_names();
        reports.extend(ANY_RESULT.iter().filter(|a| !spec.has_report(a)));
        for report in reports {
            let key = (spec.name.to_string(), report.to_string());
            wanted.insert(key.clone());
            match render(t, r, report) {
                Ok(()) => {
                    rendered.insert(key);
                }
                Err(why) => refusals.push(format!("{report} on {}: {why}", r.display())),
            }
        }
    }
    // What needs hardware that neither this machine nor any recording here has: its
    // refusal (checked above to be one sentence) is all there is to read.
    {
        let key = ("hotspots".to_string(), "tlb".to_string());
        if !rendered.contains(&key) {
            assert!(
                refusals
                    .iter()
                    .any(|r| r.starts_with("tlb on") && r.contains("need core PMU counters")),
                "{refusals:?}"
            );
            wanted.remove(&key);
        }
    }
    let missing: Vec<_> = wanted.difference(&rendered).collect();
    assert!(
        missing.is_empty(),
        "reports that rendered on no result (analysis, report): {missing:?}\nrefusals:\n{}",
        refusals.join("\n")
    );

    // The comparison of two results, and what this machine can measure.
    for format in [Format::Json, Format::Csv] {
        for args in [
            vec![
                "compare",
                path_str(&results[5]),
                path_str(&results[6]),
                "--format",
                format.as_str(),
            ],
            vec!["info", "--format", format.as_str()],
        ] {
            let run = kairos_in(t, &args);
            if args[0] == "info" && format == Format::Csv && run.code == 2 {
                continue; // info speaks text and JSON only
            }
            let run = run.ok();
            if let Err(e) = strict::check(format, &run.stdout) {
                panic!("{args:?}: {e}\n{}", run.stdout);
            }
        }
    }
}
