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
