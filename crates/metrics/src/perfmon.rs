//! Intel's own perfmon metric files (`{"Header", "Metrics": [...]}`, e.g. SKX/metrics/
//! skylakex_metrics.json): each metric's `Formula` is written over short aliases
//! (`a`, `b`, ..., `a_a`) bound to event names in `Events` and to constants
//! (`HYPERTHREADING_ON`, ...) in `Constants`, and is self-contained (no references to
//! other metrics). The formula is evaluated by the same parser and evaluator as perf's
//! `MetricExpr`.

use std::collections::HashMap;

use serde::Deserialize;

use crate::{eval_names, parse, Error};

/// One alias binding.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Binding {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "Alias")]
    pub alias: String,
}

/// One metric of an Intel perfmon metric file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct PerfmonMetric {
    #[serde(rename = "MetricName")]
    pub name: String,
    /// TMA level (1 = top), when the metric is part of the tree.
    #[serde(rename = "Level", default)]
    pub level: Option<u32>,
    /// The TMA node it splits (`Memory_Bound` for `L1_Bound`).
    #[serde(rename = "ParentCategory", default)]
    pub parent: Option<String>,
    /// "percent" for TMA nodes: the formula already multiplies by 100.
    #[serde(rename = "UnitOfMeasure", default)]
    pub unit: String,
    #[serde(rename = "Events", default)]
    pub events: Vec<Binding>,
    #[serde(rename = "Constants", default)]
    pub constants: Vec<Binding>,
    #[serde(rename = "Formula")]
    pub formula: String,
    #[serde(rename = "BriefDescription", default)]
    pub brief: String,
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "Metrics")]
    metrics: Vec<PerfmonMetric>,
}

/// Reads an Intel perfmon metric file.
pub fn load_perfmon(json: &str) -> Result<Vec<PerfmonMetric>, Error> {
    serde_json::from_str::<File>(json)
        .map(|f| f.metrics)
        .map_err(|e| Error::File(e.to_string()))
}

/// Evaluates one metric: `counts` by event name (as in `Events`, modifiers included,
/// e.g. `L1D_PEND_MISS.FB_FULL:c1`), `constants` by constant name (`HYPERTHREADING_ON`,
/// and free names in the formula such as `durationtimeinmilliseconds`). A value that is
/// bound but not used may be missing; a missing one that is used is reported by its
/// event or constant name, not its alias.
pub fn evaluate_perfmon(
    m: &PerfmonMetric,
    counts: &HashMap<String, f64>,
    constants: &HashMap<String, f64>,
) -> Result<f64, Error> {
    let mut vals: HashMap<String, f64> = constants
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), *v))
        .collect();
    vals.extend(constants.iter().map(|(k, v)| (k.clone(), *v)));
    let mut alias_of = HashMap::new();
    for (b, from) in m
        .events
        .iter()
        .map(|b| (b, counts))
        .chain(m.constants.iter().map(|b| (b, constants)))
    {
        alias_of.insert(b.alias.clone(), b.name.clone());
        match from.get(&b.name) {
            Some(v) => {
                vals.insert(b.alias.clone(), *v);
            }
            None => {
                vals.remove(&b.alias);
            }
        }
    }
    let expr = parse(&m.formula)?;
    eval_names(&expr, &vals).map_err(|e| match e {
        Error::MissingEvent(a) => Error::MissingEvent(alias_of.get(&a).cloned().unwrap_or(a)),
        other => other,
    })
}

/// The event names a metric needs counted.
pub fn perfmon_events(m: &PerfmonMetric) -> Vec<String> {
    m.events.iter().map(|b| b.name.clone()).collect()
}
