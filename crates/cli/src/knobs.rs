//! `-k NAME=VALUE` knobs: every knob an analysis takes, its default and what values it
//! accepts, so that a typo gets a sentence listing the valid choices.

use std::collections::BTreeMap;

use crate::error::{CliResult, UserError};

/// The knobs of one analysis, with every value resolved (defaults filled in).
#[derive(Debug, Clone)]
pub struct Knobs {
    values: BTreeMap<String, String>,
}

struct KnobSpec {
    name: &'static str,
    default: &'static str,
    help: &'static str,
    check: fn(&str) -> Result<(), String>,
}

fn interval(v: &str) -> Result<(), String> {
    match v.parse::<u64>() {
        Ok(n) if (10..=1_000_000).contains(&n) => Ok(()),
        _ => Err("a whole number of microseconds from 10 to 1000000".into()),
    }
}

fn one_of(v: &str, choices: &[&str]) -> Result<(), String> {
    if choices.contains(&v) {
        Ok(())
    } else {
        Err(format!("one of {}", choices.join(", ")))
    }
}

const HOTSPOTS: &[KnobSpec] = &[
    KnobSpec { name: "sampling-interval-us", default: "1000", help: "sampling interval", check: interval },
    KnobSpec {
        name: "stack-unwinding",
        default: "fp",
        help: "fp (frame pointers) or dwarf (user stack copy)",
        check: |v| one_of(v, &["fp", "dwarf"]),
    },
    KnobSpec {
        name: "event",
        default: "auto",
        help: "auto (cycles where the CPU offers them, else cpu-clock), cpu-clock or cycles",
        check: |v| one_of(v, &["auto", "cpu-clock", "cycles"]),
    },
    KnobSpec {
        name: "branch-records",
        default: "auto",
        help: "auto (LBR where the CPU has it), on (required) or off: every sample with the last user calls and returns",
        check: |v| one_of(v, &["auto", "on", "off"]),
    },
];

const TRACE: &[KnobSpec] = &[
    KnobSpec {
        name: "mode",
        default: "auto",
        help: "instrument (program built with -finstrument-functions), uprobes (unmodified binary) or auto",
        check: |v| one_of(v, &["auto", "instrument", "uprobes"]),
    },
    KnobSpec {
        name: "measure-overhead",
        default: "on",
        help: "on (run the program once untraced first, to measure the tracer's cost) or off",
        check: |v| one_of(v, &["on", "off"]),
    },
];

fn bytes(v: &str) -> Result<(), String> {
    match v.parse::<u64>() {
        Ok(n) if n <= 1 << 40 => Ok(()),
        _ => Err("a whole number of bytes from 0 to 1099511627776 (1 tracks every block with its stack)".into()),
    }
}

const MEMORY_CONSUMPTION: &[KnobSpec] = &[KnobSpec {
    name: "min-object-size",
    default: "1",
    help: "blocks smaller than this many bytes are counted in the totals but recorded without a stack",
    check: bytes,
}];

const SYSTEM_OVERVIEW: &[KnobSpec] = &[KnobSpec {
    name: "sampling-interval-us",
    default: "1000",
    help: "cpu-clock sampling interval, for the kernel-time share and the hot function",
    check: interval,
}];

/// Analyses `kairos collect` knows, with their knobs.
pub fn analyses() -> &'static [&'static str] {
    &["hotspots", "trace", "memory-consumption", "system-overview"]
}

fn specs(analysis: &str) -> CliResult<&'static [KnobSpec]> {
    match analysis {
        "hotspots" => Ok(HOTSPOTS),
        "memory-consumption" => Ok(MEMORY_CONSUMPTION),
        "trace" => Ok(TRACE),
        "system-overview" => Ok(SYSTEM_OVERVIEW),
        other => Err(UserError::usage(format!(
            "unknown analysis '{other}'; the analyses are: {}",
            analyses().join(", ")
        ))),
    }
}

impl Knobs {
    /// Parses `NAME=VALUE` strings for `analysis`, checking names and values.
    pub fn parse(analysis: &str, raw: &[String]) -> CliResult<Knobs> {
        let specs = specs(analysis)?;
        let mut values: BTreeMap<String, String> =
            specs.iter().map(|s| (s.name.to_string(), s.default.to_string())).collect();
        for item in raw {
            let Some((name, value)) = item.split_once('=') else {
                return Err(UserError::usage(format!("knob '{item}' must be written NAME=VALUE, e.g. -k sampling-interval-us=100")));
            };
            let Some(spec) = specs.iter().find(|s| s.name == name) else {
                let names: Vec<String> = specs.iter().map(|s| format!("{} ({})", s.name, s.help)).collect();
                return Err(UserError::usage(format!(
                    "unknown knob '{name}' for {analysis}; its knobs are: {}",
                    names.join(", ")
                )));
            };
            (spec.check)(value).map_err(|want| {
                UserError::usage(format!("knob {name}={value} is not valid: it takes {want}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let k = Knobs::parse("hotspots", &["sampling-interval-us=100".into()]).expect("valid");
        assert_eq!(k.u64("sampling-interval-us"), 100);
        assert_eq!(k.get("stack-unwinding"), "fp");
    }

    #[test]
    fn bad_knobs_say_what_is_valid() {
        let e = Knobs::parse("hotspots", &["nope=1".into()]).unwrap_err().to_string();
        assert!(e.contains("unknown knob 'nope'") && e.contains("sampling-interval-us"), "{e}");
        let e = Knobs::parse("hotspots", &["sampling-interval-us=5".into()]).unwrap_err().to_string();
        assert!(e.contains("from 10 to 1000000"), "{e}");
        let e = Knobs::parse("hotspots", &["stack-unwinding".into()]).unwrap_err().to_string();
        assert!(e.contains("NAME=VALUE"), "{e}");
        let e = Knobs::parse("memory", &[]).unwrap_err().to_string();
        assert!(e.contains("unknown analysis 'memory'"), "{e}");
    }
}
