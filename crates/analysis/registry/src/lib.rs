//! The one list of Kairos analyses; see the README.

pub use kairos_analysis_api::{AnalysisSpec, KnobError, Knobs, ReportSpec};

/// Every analysis, in the order menus show them. Adding one is one line here.
pub static ANALYSES: &[&AnalysisSpec] = &[
    &kairos_analysis_hotspots::SPEC,
    &kairos_analysis_system_overview::SPEC,
    &kairos_analysis_memory::SPEC,
    &kairos_trace::SPEC,
];

/// The analysis called `name` (as on the command line, or a manifest's `kind`).
pub fn find(name: &str) -> Option<&'static AnalysisSpec> {
    ANALYSES.iter().copied().find(|a| a.name == name)
}

/// The names, for sentences.
pub fn names() -> Vec<&'static str> {
    ANALYSES.iter().map(|a| a.name).collect()
}

/// Why `name` is not an analysis, listing the ones there are.
pub fn unknown(name: &str) -> String {
    format!("unknown analysis '{name}'; the analyses are: {}", names().join(", "))
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
        assert_eq!(suffixes.len(), ANALYSES.len(), "each analysis has its own rNNN suffix");
        for a in ANALYSES {
            let mut r = a.report_names();
            r.sort_unstable();
            r.dedup();
            assert_eq!(r.len(), a.reports.len(), "{}: a report listed twice", a.name);
            assert!(a.has_report("summary"), "{} has a summary report", a.name);
            for k in a.knobs {
                assert!((k.check)(k.default).is_ok(), "{}: default {}={} fails its own check", a.name, k.name, k.default);
            }
        }
    }

    #[test]
    fn readiness_names_what_is_missing() {
        let r = readiness(&|c| c == "cpu_clock");
        let so = r.iter().find(|x| x.analysis == "system-overview").expect("listed");
        assert!(!so.can_run && so.missing == ["tracepoints"]);
        let hs = r.iter().find(|x| x.analysis == "hotspots").expect("listed");
        assert!(hs.can_run && hs.without.contains(&"lbr"));
        assert!(unknown("memory").contains("hotspots, system-overview, memory-consumption, trace"));
    }
}
