//! The one list of Kairos analyses; see the README.

mod any_result;
mod import;

pub use any_result::{report, AnyResultReport, ANY_RESULT};
pub use import::import;
pub use kairos_session::ImportRequest;

pub use kairos_analysis_api::{
    AnalysisSpec, CollectRequest, Comparable, Failure, Figure, KnobError, Knobs, Measure,
    PageModule, ReportOutput, ReportRequest, ReportSpec, SampleFilter, TargetStep,
    EMULATED_MACHINE, FILTERED_REPORTS, KERNEL_SHARE, PAGE_FAULTS,
};

/// Every analysis, in the order menus show them. Adding one is one line here. The first
/// reads the results no analysis claims (imported or older ones): sampled profiles.
pub static ANALYSES: &[&AnalysisSpec] = &[
    &kairos_analysis_hotspots::SPEC,
    &kairos_analysis_system_overview::SPEC,
    &kairos_analysis_memory_consumption::SPEC,
    &kairos_analysis_memory_access::SPEC,
    &kairos_analysis_trace::SPEC,
    &kairos_analysis_io::SPEC,
    &kairos_analysis_latency::SPEC,
];

/// The analysis that reads sampled profiles: the first, which also claims every
/// recording no other analysis claims.
pub fn sampled_profile() -> &'static AnalysisSpec {
    ANALYSES[0]
}

/// The analysis called `name` (as on the command line, or a manifest's `kind`).
pub fn find(name: &str) -> Option<&'static AnalysisSpec> {
    ANALYSES.iter().copied().find(|a| a.name == name)
}

/// The analysis whose reports apply to a result of manifest kind `kind`: the one of that
/// name, else the first (a kind this Kairos does not know is read as a sampled profile).
pub fn for_kind(kind: Option<&str>) -> &'static AnalysisSpec {
    kind.and_then(find).unwrap_or(ANALYSES[0])
}

/// For a result that cannot be opened (its own sentence comes from the report): the first
/// analysis declaring report `name`, or the sentence listing every report.
pub fn for_report(name: &str) -> Result<&'static AnalysisSpec, Failure> {
    if let Some(a) = ANALYSES.iter().copied().find(|a| a.has_report(name)) {
        return Ok(a);
    }
    let mut all: Vec<&str> = ANALYSES.iter().flat_map(|a| a.report_names()).collect();
    all.sort_unstable();
    all.dedup();
    Err(Failure::usage(format!(
        "unknown report '{name}'; the reports are: {}",
        all.join(", ")
    )))
}

/// Every page module: the analyses', then those of the reports of any result.
pub fn page_modules() -> Vec<&'static PageModule> {
    ANALYSES
        .iter()
        .filter_map(|a| a.page)
        .chain(ANY_RESULT.iter().filter_map(|r| r.page))
        .collect()
}

/// The names, for sentences.
pub fn names() -> Vec<&'static str> {
    ANALYSES.iter().map(|a| a.name).collect()
}

/// Why `name` is not an analysis, listing the ones there are.
pub fn unknown(name: &str) -> String {
    format!(
        "unknown analysis '{name}'; the analyses are: {}",
        names().join(", ")
    )
}

/// An analysis's verdict on a machine: can it run, and what it lacks or uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub analysis: &'static str,
    pub can_run: bool,
    /// Needed capabilities that are missing.
    pub missing: Vec<&'static str>,
    /// Optional capabilities that are present / absent.
    pub using: Vec<&'static str>,
    pub without: Vec<&'static str>,
}

/// Each analysis against `available(capability name)`.
pub fn readiness(available: &dyn Fn(&str) -> bool) -> Vec<Readiness> {
    ANALYSES
        .iter()
        .map(|a| {
            let missing: Vec<&str> = a.needs.iter().copied().filter(|c| !available(c)).collect();
            Readiness {
                analysis: a.name,
                can_run: missing.is_empty(),
                missing,
                using: a.uses.iter().copied().filter(|c| available(c)).collect(),
                without: a.uses.iter().copied().filter(|c| !available(c)).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn names_suffixes_and_reports_are_unique() {
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ANALYSES.len());
        let mut suffixes: Vec<_> = ANALYSES.iter().map(|a| a.result_suffix).collect();
        suffixes.sort_unstable();
        suffixes.dedup();
        assert_eq!(
            suffixes.len(),
            ANALYSES.len(),
            "each analysis has its own rNNN suffix"
        );
        for a in ANALYSES {
            let mut r = a.report_names();
            r.sort_unstable();
            r.dedup();
            assert_eq!(
                r.len(),
                a.reports.len(),
                "{}: a report listed twice",
                a.name
            );
            assert!(a.has_report("summary"), "{} has a summary report", a.name);
            for k in a.knobs {
                assert!(
                    (k.check)(k.default).is_ok(),
                    "{}: default {}={} fails its own check",
                    a.name,
                    k.name,
                    k.default
                );
            }
        }
    }

    #[test]
    fn every_report_entry_refuses_a_report_its_spec_lacks() {
        // Before touching the result: the directory does not exist.
        for a in ANALYSES {
            let req = ReportRequest {
                report: "no-such-report".into(),
                result_dir: "/nonexistent".into(),
                format: "text".into(),
                ..Default::default()
            };
            match (a.report)(&req) {
                Err(Failure::Usage(s)) => assert!(
                    s.contains("unknown report 'no-such-report'") && s.contains(a.name),
                    "{}: {s}",
                    a.name
                ),
                other => panic!("{}: {other:?}", a.name),
            }
        }
    }

    #[test]
    fn results_find_the_analysis_of_their_reports() {
        assert!(!ANALYSES.is_empty());
        assert_eq!(
            for_kind(Some("memory-consumption")).name,
            "memory-consumption"
        );
        assert_eq!(for_kind(Some("from-the-future")).name, ANALYSES[0].name);
        assert_eq!(for_kind(None).name, ANALYSES[0].name);
        assert_eq!(
            for_report("allocations").map(|a| a.name),
            Ok("memory-consumption")
        );
        let e = for_report("flamegraph").unwrap_err();
        assert!(
            e.is_usage()
                && e.to_string()
                    .contains("unknown report 'flamegraph'; the reports are: "),
            "{e}"
        );
    }

    #[test]
    fn readiness_names_what_is_missing() {
        let r = readiness(&|c| c == "cpu_clock");
        let so = r
            .iter()
            .find(|x| x.analysis == "system-overview")
            .expect("listed");
        assert!(!so.can_run && so.missing == ["tracepoints"]);
        let hs = r.iter().find(|x| x.analysis == "hotspots").expect("listed");
        assert!(hs.can_run && hs.without.contains(&"lbr"));
        assert!(unknown("memory").ends_with(&names().join(", ")));
    }
}
