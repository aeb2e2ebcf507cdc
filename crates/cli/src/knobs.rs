//! `-k NAME=VALUE` knobs, checked against the analysis's own declaration in the registry
//! (`kairos-analyses`), so that a typo gets a sentence listing the valid choices.

use std::collections::BTreeMap;

use crate::error::{CliResult, UserError};

/// The knobs of one analysis, with every value resolved (defaults filled in).
#[derive(Debug, Clone)]
pub struct Knobs(kairos_analyses::Knobs);

impl Knobs {
    /// Parses `NAME=VALUE` strings for `analysis`, checking names and values.
    pub fn parse(analysis: &str, raw: &[String]) -> CliResult<Knobs> {
        let spec = kairos_analyses::find(analysis).ok_or_else(|| UserError::usage(kairos_analyses::unknown(analysis)))?;
        kairos_analyses::Knobs::parse(spec.name, spec.knobs, raw).map(Knobs).map_err(|e| UserError::usage(e.to_string()))
    }

    pub fn get(&self, name: &str) -> &str {
        self.0.get(name)
    }

    pub fn u64(&self, name: &str) -> u64 {
        self.0.u64(name)
    }

    pub fn all(&self) -> &BTreeMap<String, String> {
        self.0.all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_analysis_parses_its_defaults() {
        for a in kairos_analyses::ANALYSES {
            let k = Knobs::parse(a.name, &[]).expect("defaults are valid");
            assert_eq!(k.all().len(), a.knobs.len());
        }
        let e = Knobs::parse("memory", &[]).unwrap_err().to_string();
        assert!(e.contains("unknown analysis 'memory'") && e.contains("memory-consumption"), "{e}");
        let e = Knobs::parse("hotspots", &["sampling-interval-us=5".into()]).unwrap_err().to_string();
        assert!(e.contains("from 10 to 1000000"), "{e}");
    }
}
