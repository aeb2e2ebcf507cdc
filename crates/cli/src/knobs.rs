//! `-k NAME=VALUE` knobs, checked against the analysis's own declaration in the registry
//! (`kairos-analysis-registry`), so that a typo gets a sentence listing the valid choices.

use kairos_analysis_registry::{AnalysisSpec, Knobs};

use crate::error::{CliResult, UserError};

/// Parses `NAME=VALUE` strings for `spec`, checking names and values.
pub fn parse(spec: &AnalysisSpec, raw: &[String]) -> CliResult<Knobs> {
    Knobs::parse(spec.name, spec.knobs, raw).map_err(|e| UserError::usage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_analysis_parses_its_defaults() {
        for a in kairos_analysis_registry::ANALYSES {
            let k = parse(a, &[]).expect("defaults are valid");
            assert_eq!(k.all().len(), a.knobs.len());
            if let Some(first) = a.knobs.first() {
                let e = parse(a, &[first.name.to_string()])
                    .expect_err("no value")
                    .to_string();
                assert!(e.contains("NAME=VALUE"), "{e}");
            }
        }
    }
}
