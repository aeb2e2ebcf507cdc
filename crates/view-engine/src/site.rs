//! What the page's server serves: the site it is given by those above it (the page's
//! files, the analyses' page modules with their endpoints, what they read when a result
//! opens and add to a result's description and to a comparison, the comparison's table),
//! and the state every answer reads. The engine knows no analysis; an analysis's page
//! module uses the engine.

use serde_json::Value;

use crate::error::Error;
use crate::query::Query;
use crate::results::{Data, Loaded};

/// What the API answers from.
pub struct State {
    pub results: Vec<Loaded>,
    pub site: Site,
    pub(crate) token: String,
    pub(crate) host_names: [String; 2],
}

/// One API call: `api/NAME?...`.
pub type Endpoint = fn(&State, &Query) -> Result<Value, Error>;

/// Fields a page module adds to a result's entry in `api/results`.
pub type FieldsFn = fn(&Data) -> Vec<(&'static str, Value)>;

/// A page module's part of `api/compare` for two results.
pub type CompareFn = fn(&Data, &Data) -> Result<Value, Error>;

/// An analysis's part of the page.
#[derive(Debug)]
pub struct PageModule {
    /// Its API calls, by name.
    pub endpoints: &'static [(&'static str, Endpoint)],
    /// Run when a result opens: reads what the analysis needs at once (into
    /// [`Data::extension`]), adds notes, widens the page's time axis.
    pub opened: Option<fn(&mut Data)>,
    /// Fields it adds to a result's entry in `api/results`.
    pub fields: Option<FieldsFn>,
    /// Its part of `api/compare` for two results: a field name and value (null when it has
    /// nothing to say of these two).
    pub compare: Option<(&'static str, CompareFn)>,
}

/// The page's files, embedded in the binary.
#[derive(Debug, Clone, Copy)]
pub struct Assets {
    pub index_html: &'static [u8],
    pub app_js: &'static [u8],
    pub style_css: &'static [u8],
}

/// The before/after table of two results, as `kairos compare` makes it.
pub type FactsTable =
    fn(&kairos_result::ResultDir, &kairos_result::ResultDir) -> kairos_report::Table;

/// Everything the engine is told about the site it serves.
#[derive(Debug, Clone)]
pub struct Site {
    pub assets: Assets,
    pub modules: Vec<&'static PageModule>,
    pub facts: FactsTable,
    /// The views a result's analysis declares (None for a kind no analysis has: all).
    pub views: fn(&str) -> Option<&'static [&'static str]>,
    /// The reports of a result kind, for the sentence of a result with no samples.
    pub reports: fn(&str) -> String,
}

impl Site {
    /// What opening a result takes from the site.
    pub fn opening(&self) -> crate::results::Opening {
        crate::results::Opening {
            opened: self.modules.iter().filter_map(|m| m.opened).collect(),
            reports: self.reports,
        }
    }
}

/// A site without page files or analyses, for the engine's own tests.
#[cfg(test)]
pub(crate) fn bare() -> Site {
    Site {
        assets: Assets {
            index_html: b"",
            app_js: b"",
            style_css: b"",
        },
        modules: Vec::new(),
        facts: |_, _| kairos_report::Table::new(Vec::new()),
        views: |_| None,
        reports: |_| String::new(),
    }
}
