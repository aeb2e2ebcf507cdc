//! `-k NAME=VALUE` knobs: each with a default, a help text and a check, so that a typo gets
//! a sentence listing the valid choices.

use std::collections::BTreeMap;

/// One knob of an analysis.
#[derive(Debug, Clone, Copy)]
pub struct KnobSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
    /// Ok, or what the knob takes (completes "it takes ...").
    pub check: fn(&str) -> Result<(), String>,
}

/// Why `-k` arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    #[error("knob '{0}' must be written NAME=VALUE, e.g. -k sampling-interval-us=100")]
    NotNameValue(String),
    #[error("unknown knob '{name}' for {analysis}; {}", if known.is_empty() { "it takes no knobs".to_string() } else { format!("its knobs are: {}", known.join(", ")) })]
    Unknown {
        name: String,
        analysis: String,
        known: Vec<String>,
    },
    #[error("knob {name}={value} is not valid: it takes {want}")]
    Invalid {
        name: String,
        value: String,
        want: String,
    },
}

/// The knobs of one analysis, with every value resolved (defaults filled in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knobs {
    values: BTreeMap<String, String>,
}

impl Knobs {
    /// Parses `NAME=VALUE` strings against `specs` of `analysis`, checking names and values.
    pub fn parse(analysis: &str, specs: &[KnobSpec], raw: &[String]) -> Result<Knobs, KnobError> {
        let mut values: BTreeMap<String, String> = specs
            .iter()
            .map(|s| (s.name.to_string(), s.default.to_string()))
            .collect();
        for item in raw {
            let Some((name, value)) = item.split_once('=') else {
                return Err(KnobError::NotNameValue(item.clone()));
            };
            let Some(spec) = specs.iter().find(|s| s.name == name) else {
                return Err(KnobError::Unknown {
                    name: name.into(),
                    analysis: analysis.into(),
                    known: specs
                        .iter()
                        .map(|s| format!("{} ({})", s.name, s.help))
                        .collect(),
                });
            };
            (spec.check)(value).map_err(|want| KnobError::Invalid {
                name: name.into(),
                value: value.into(),
                want,
            })?;
            values.insert(name.to_string(), value.to_string());
        }
        Ok(Knobs { values })
    }

    pub fn get(&self, name: &str) -> &str {
        self.values.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn u64(&self, name: &str) -> u64 {
        self.get(name).parse().unwrap_or(0)
    }

    pub fn all(&self) -> &BTreeMap<String, String> {
        &self.values
    }
}

/// A sampling interval in microseconds, 10 us to 1 s.
pub fn interval_us(v: &str) -> Result<(), String> {
    match v.parse::<u64>() {
        Ok(n) if (10..=1_000_000).contains(&n) => Ok(()),
        _ => Err("a whole number of microseconds from 10 to 1000000".into()),
    }
}

/// One of `choices`.
pub fn one_of(v: &str, choices: &[&str]) -> Result<(), String> {
    if choices.contains(&v) {
        Ok(())
    } else {
        Err(format!("one of {}", choices.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[KnobSpec] = &[
        KnobSpec {
            name: "sampling-interval-us",
            default: "1000",
            help: "sampling interval",
            check: interval_us,
        },
        KnobSpec {
            name: "stack-unwinding",
            default: "fp",
            help: "fp or dwarf",
            check: |v| one_of(v, &["fp", "dwarf"]),
        },
    ];

    #[test]
    fn defaults_and_overrides() {
        let k =
            Knobs::parse("hotspots", SPECS, &["sampling-interval-us=100".into()]).expect("valid");
        assert_eq!(k.u64("sampling-interval-us"), 100);
        assert_eq!(k.get("stack-unwinding"), "fp");
    }

    #[test]
    fn bad_knobs_say_what_is_valid() {
        let e = Knobs::parse("hotspots", SPECS, &["nope=1".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown knob 'nope'") && e.contains("sampling-interval-us"),
            "{e}"
        );
        let e = Knobs::parse("hotspots", SPECS, &["sampling-interval-us=5".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("from 10 to 1000000"), "{e}");
        let e = Knobs::parse("hotspots", SPECS, &["stack-unwinding".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("NAME=VALUE"), "{e}");
        let e = Knobs::parse("x", &[], &["a=1".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("takes no knobs"), "{e}");
    }
}
