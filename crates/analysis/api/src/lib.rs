//! What an analysis declares about itself; see the README.

mod compare;
mod failure;
mod import;
mod knobs;
mod request;

pub use compare::{
    Comparable, CompareFn, Figure, Measure, EMULATED_MACHINE, KERNEL_SHARE, PAGE_FAULTS,
};
pub use failure::Failure;
pub use import::{ClaimFn, Claimed};
pub use kairos_view_engine::site::PageModule;
pub use knobs::{interval_us, one_of, KnobError, KnobSpec, Knobs};
pub use request::{CollectRequest, ReportRequest, SampleFilter, TargetStep, FILTERED_REPORTS};

/// `kairos collect NAME`: records into a new result directory, finishes it (tables,
/// manifest) and prints its summary.
pub type CollectFn = fn(&CollectRequest) -> Result<(), Failure>;

/// `kairos report NAME -r DIR` on a result of this analysis: the report, rendered, for the
/// CLI to print. Starts with [`ReportRequest::check`].
pub type ReportFn = fn(&ReportRequest) -> Result<ReportOutput, Failure>;

/// A report as the CLI prints it: rendered in the format asked for (standard output), and
/// what is said beside it (standard error: how points were made, under CSV or JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportOutput {
    pub text: String,
    pub aside: Vec<String>,
}

impl ReportOutput {
    pub fn new(text: impl Into<String>) -> ReportOutput {
        ReportOutput {
            text: text.into(),
            aside: Vec::new(),
        }
    }

    /// Appends text as it is.
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Appends a line.
    pub fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }
}

/// One report of an analysis: `kairos report NAME -r DIR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportSpec {
    pub name: &'static str,
    pub help: &'static str,
}

/// An analysis as the rest of Kairos sees it.
#[derive(Debug)]
pub struct AnalysisSpec {
    /// `kairos collect NAME`; also the manifest's `kind`.
    pub name: &'static str,
    /// One line for `kairos collect --help`.
    pub summary: &'static str,
    /// Result directories are named `rNNN<suffix>`.
    pub result_suffix: &'static str,
    pub knobs: &'static [KnobSpec],
    /// What it records: events, preloaded runtime, side collectors.
    pub collects: &'static str,
    pub reports: &'static [ReportSpec],
    /// Views of the page (`kairos view`) that show its results.
    pub views: &'static [&'static str],
    /// Capabilities (names of `kairos info`) without which it cannot run.
    pub needs: &'static [&'static str],
    /// Capabilities it uses where present, and does without otherwise.
    pub uses: &'static [&'static str],
    /// Entry point of `kairos collect NAME`.
    pub collect: CollectFn,
    /// Entry point of `kairos report` on its results.
    pub report: ReportFn,
    /// Whether, and how, it claims a recording made elsewhere (`kairos import`); see
    /// [`ClaimFn`].
    pub claims_import: Option<ClaimFn>,
    /// Its rows in `kairos compare`; see [`Comparable`].
    pub compare: Option<CompareFn>,
    /// Its part of the page (`kairos view`): endpoints, what it reads when a result
    /// opens, what it adds to a result's entry and to a comparison.
    pub page: Option<&'static PageModule>,
}

impl AnalysisSpec {
    /// The names of its reports, for menus and sentences.
    pub fn report_names(&self) -> Vec<&'static str> {
        self.reports.iter().map(|r| r.name).collect()
    }

    pub fn has_report(&self, name: &str) -> bool {
        self.reports.iter().any(|r| r.name == name)
    }
}
