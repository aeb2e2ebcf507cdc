//! What the CLI hands an analysis's entry points: plain data read from the command line,
//! so an analysis crate depends on neither clap nor the CLI.

use std::path::PathBuf;

use crate::{AnalysisSpec, Failure, Knobs};

/// `kairos collect NAME [-r DIR] [-d SECS] [-k K=V]... [-p PID | -a | -- PROGRAM ARGS]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectRequest {
    /// Checked against the spec's knobs, defaults filled in.
    pub knobs: Knobs,
    /// Program and its arguments (after `--`); empty with `-p` or `-a`.
    pub program: Vec<String>,
    pub pid: Option<i32>,
    pub system_wide: bool,
    /// `-d`, in seconds, not checked yet (analyses that follow the program refuse it).
    pub duration: Option<f64>,
    /// `-r DIR`; None: the next free `rNNN<suffix>` in the current directory.
    pub result_dir: Option<PathBuf>,
    /// No progress display.
    pub quiet: bool,
    /// `-m`: data pages of each CPU's ring buffer (a power of two); None: the analysis's
    /// default.
    pub mmap_pages: Option<usize>,
    /// `-C`: sample on these CPUs only; None: every online CPU.
    pub cpus: Option<Vec<i32>>,
    /// Run on the target before it is measured; set by `kairos collect` for options that
    /// hold for every analysis (`-k cache-group`). Analyses that measure a target pass it
    /// to the collector.
    pub on_target: Option<TargetStep>,
}

/// Called with a launched program's pid before it runs, or with each thread id of `-p`;
/// an error is a sentence.
#[derive(Clone)]
pub struct TargetStep(pub std::sync::Arc<dyn Fn(i32) -> Result<(), String> + Send + Sync>);

impl std::fmt::Debug for TargetStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TargetStep")
    }
}

impl PartialEq for TargetStep {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

/// `kairos report NAME -r DIR [options]`; each analysis reads the options it has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportRequest {
    pub report: String,
    pub result_dir: PathBuf,
    pub group_by: Option<String>,
    pub time_range: Option<String>,
    /// text, csv or json.
    pub format: String,
    /// Rows to show; `Some(0)` means all.
    pub limit: Option<usize>,
    pub bucket_ms: Option<f64>,
    pub time_assignment: Option<String>,
    pub sample: Option<usize>,
    pub time: Option<f64>,
    pub event: Option<String>,
    /// `--pid`, `--tid`, `--comm`, `--cpu`: which samples the sampled-profile reports see.
    pub samples: SampleFilter,
}

/// perf report's sample filters; empty: every sample.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleFilter {
    pub pids: Option<Vec<i32>>,
    pub tids: Option<Vec<i32>>,
    /// Thread or process names.
    pub comms: Option<Vec<String>>,
    pub cpus: Option<Vec<u32>>,
}

impl SampleFilter {
    pub fn is_empty(&self) -> bool {
        self == &SampleFilter::default()
    }
}

/// The reports whose samples the filters select (those of a sampled profile).
pub const FILTERED_REPORTS: [&str; 3] = ["hotspots", "top-down", "timeline"];

impl ReportRequest {
    /// Refuses a report `spec` does not declare, listing the ones it does. Every report
    /// entry point starts with it (the registry's test makes sure).
    pub fn check(&self, spec: &AnalysisSpec) -> Result<(), Failure> {
        self.check_sample_filter(Some(spec))?;
        if spec.has_report(&self.report) {
            return Ok(());
        }
        Err(Failure::usage(format!(
            "unknown report '{}' for a {} result; its reports are: {}",
            self.report,
            spec.name,
            spec.report_names().join(", ")
        )))
    }

    /// Refuses `--pid`, `--tid`, `--comm` and `--cpu` for a report that does not select
    /// samples: all but the [`FILTERED_REPORTS`] of a sampled profile (an analysis with a
    /// top-down report). `spec`: the result's analysis; None for a report no analysis owns.
    pub fn check_sample_filter(&self, spec: Option<&AnalysisSpec>) -> Result<(), Failure> {
        let selects = spec.is_some_and(|s| s.has_report("top-down"))
            && FILTERED_REPORTS.contains(&self.report.as_str());
        if self.samples.is_empty() || selects {
            return Ok(());
        }
        let of = spec.map_or(String::new(), |s| format!(" of a {} result", s.name));
        Err(Failure::usage(format!(
            "--pid, --tid, --comm and --cpu select the samples of the {} reports of a sampled profile, not of the {} report{of}",
            FILTERED_REPORTS.join(", "),
            self.report,
        )))
    }

    /// `--limit`, with 0 (all rows) as None.
    pub fn row_limit(&self) -> Option<usize> {
        self.limit.filter(|&n| n > 0)
    }

    /// `--bucket-ms` in ns, `default` when not given; a refusal when not a positive width.
    pub fn bucket_ns(&self, default: impl FnOnce() -> u64) -> Result<u64, Failure> {
        match self.bucket_ms {
            Some(ms) if ms > 0.0 && ms.is_finite() => Ok((ms * 1e6) as u64),
            Some(ms) => Err(Failure::usage(format!(
                "--bucket-ms {ms} must be a positive number of milliseconds"
            ))),
            None => Ok(default()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ReportSpec;

    fn spec() -> AnalysisSpec {
        AnalysisSpec {
            name: "demo",
            summary: "",
            result_suffix: "dm",
            knobs: &[],
            collects: "",
            reports: &[
                ReportSpec {
                    name: "summary",
                    help: "",
                },
                ReportSpec {
                    name: "lines",
                    help: "",
                },
            ],
            views: &[],
            needs: &[],
            uses: &[],
            collect: |_| Ok(()),
            report: |_| Ok(Default::default()),
            claims_import: None,
            compare: None,
            page: None,
        }
    }

    #[test]
    fn unknown_reports_and_bad_buckets_are_usage_failures() {
        let mut req = ReportRequest {
            report: "lines".into(),
            ..Default::default()
        };
        assert!(req.check(&spec()).is_ok());
        // Sample filters belong to a sampled profile's reports only.
        req.samples.pids = Some(vec![1]);
        let e = req.check(&spec()).unwrap_err();
        assert!(
            e.to_string()
                .contains("not of the lines report of a demo result"),
            "{e}"
        );
        // A report no analysis owns (topology) never selects samples.
        let e = req.check_sample_filter(None).unwrap_err();
        assert!(e.to_string().ends_with("not of the lines report"), "{e}");
        req.samples = SampleFilter::default();
        req.report = "flames".into();
        let e = req.check(&spec()).unwrap_err();
        assert_eq!(
            e,
            Failure::usage(
                "unknown report 'flames' for a demo result; its reports are: summary, lines"
            )
        );
        assert_eq!(req.bucket_ns(|| 7).unwrap(), 7);
        req.bucket_ms = Some(2.5);
        assert_eq!(req.bucket_ns(|| 7).unwrap(), 2_500_000);
        req.bucket_ms = Some(0.0);
        assert!(req.bucket_ns(|| 7).unwrap_err().is_usage());
        req.limit = Some(0);
        assert_eq!(req.row_limit(), None);
    }
}
