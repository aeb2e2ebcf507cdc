//! The analyses are listed from one registry: `collect --help`, `report --help`, `kairos
//! info` and the unknown-analysis sentence all name every analysis, its knobs and reports.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::kairos;

#[test]
fn help_lists_every_analysis_with_its_knobs_and_reports() {
    let collect = kairos(&["collect", "--help"]).ok().stdout;
    let report = kairos(&["report", "--help"]).ok().stdout;
    for a in kairos_analysis_registry::ANALYSES {
        assert!(
            collect.contains(a.name) && collect.contains(a.summary),
            "collect --help lacks {}:\n{collect}",
            a.name
        );
        for k in a.knobs {
            assert!(
                collect.contains(&format!("-k {}=", k.name)),
                "collect --help lacks {}'s knob {}",
                a.name,
                k.name
            );
        }
        for r in a.reports {
            assert!(
                report.contains(r.name) && report.contains(r.help),
                "report --help lacks {}'s report {}",
                a.name,
                r.name
            );
        }
    }
    let bad = kairos(&["collect", "nope", "--", "true"]);
    for a in kairos_analysis_registry::ANALYSES {
        assert!(
            bad.stderr.contains(a.name),
            "the sentence names {}: {}",
            a.name,
            bad.stderr
        );
    }
}

#[test]
fn info_says_what_each_analysis_needs_here() {
    let json: serde_json::Value =
        serde_json::from_str(&kairos(&["info", "--format", "json"]).ok().stdout).unwrap();
    let list = json["analyses"].as_array().expect("an analyses array");
    assert_eq!(list.len(), kairos_analysis_registry::ANALYSES.len());
    // Every machine here has the cpu-clock timer, all hotspots needs.
    let hs = list.iter().find(|a| a["analysis"] == "hotspots").unwrap();
    assert_eq!(hs["can_run"], true, "{hs}");
    let text = kairos(&["info"]).ok().stdout;
    for a in kairos_analysis_registry::ANALYSES {
        assert!(
            text.lines().any(|l| l.starts_with(a.name)),
            "kairos info has a line for {}:\n{text}",
            a.name
        );
    }
}

#[test]
fn a_report_the_results_analysis_lacks_is_refused_with_its_menu() {
    let t = common::tempdir();
    let r = t.path().join("r");
    let file = common::fixtures().join("zen4_lbrextv2_16deep.perf.data");
    kairos(&[
        "import",
        "-q",
        common::path_str(&file),
        "-r",
        common::path_str(&r),
    ])
    .ok();
    let bad = kairos(&["report", "allocations", "-r", common::path_str(&r)]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    let hotspots = kairos_analysis_registry::find("hotspots").unwrap();
    let menu = hotspots.report_names().join(", ");
    assert!(
        bad.stderr.contains("for a hotspots result") && bad.stderr.contains(&menu),
        "{}",
        bad.stderr
    );
}

/// Adding an analysis touches its crate and the registry's list: the CLI names none of
/// them. Precise: no string literal in crates/cli/src equals an analysis's name or its
/// result suffix (reports and knobs with other names stay allowed).
#[test]
fn the_cli_names_no_analysis() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offences = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for a in kairos_analysis_registry::ANALYSES {
            for word in [a.name, a.result_suffix] {
                let literal = format!("\"{word}\"");
                for (n, line) in text.lines().enumerate() {
                    if line.contains(&literal) {
                        offences.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    // Every spec has its collect and report entry points: the fields are not optional.
    assert!(
        offences.is_empty(),
        "the CLI names analyses; declare the behaviour in the analysis's crate instead:\n{}",
        offences.join("\n")
    );
}
