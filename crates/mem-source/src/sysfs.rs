//! PMUs as sysfs describes them (/sys/bus/event_source/devices/NAME): `type`, the
//! `format/*` files that say which attr bits a term sets (`ldlat` -> `config1:0-15`), and
//! the `events/*` aliases (`mem-loads` -> `event=0xcd,umask=0x1,ldlat=3`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SysfsError {
    #[error("{path}: {what}")]
    Bad { path: String, what: String },
    #[error("term '{0}' has no format file in this PMU")]
    UnknownTerm(String),
    #[error("value {value:#x} of '{term}' does not fit its {bits} bits")]
    TooWide { term: String, value: u64, bits: u32 },
    #[error("cannot parse the term '{0}'")]
    BadTerm(String),
}

/// Which attr field a format bit range lands in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Format {
    /// 0 = config, 1 = config1, 2 = config2, 3 = config3.
    pub word: u8,
    /// Inclusive bit ranges, the term's low bits going to the first range.
    pub ranges: Vec<(u32, u32)>,
}

impl Format {
    pub fn bits(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }
}

/// The four config words of a perf_event_attr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Config {
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    pub config3: u64,
}

/// One PMU directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pmu {
    pub name: String,
    pub dir: PathBuf,
    /// The perf_event_attr type to use for it.
    pub type_: u32,
    pub formats: BTreeMap<String, Format>,
    /// Its `cpus` file: the CPUs of one kind of core on a hybrid CPU (`cpu_core`,
    /// `cpu_atom`); None where the PMU drives every CPU.
    pub cpus: Option<Vec<u32>>,
}

/// `config1:0-15`, `config:0-7,32-35`, `config:21`.
pub fn parse_format(text: &str) -> Option<Format> {
    let (word, ranges) = text.trim().split_once(':')?;
    let word = match word {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        "config3" => 3,
        _ => return None,
    };
    let mut out = Vec::new();
    for r in ranges.split(',') {
        let (lo, hi) = match r.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let b: u32 = r.trim().parse().ok()?;
                (b, b)
            }
        };
        if lo > hi || hi > 63 {
            return None;
        }
        out.push((lo, hi));
    }
    Some(Format { word, ranges: out })
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Names of the PMUs under `devices` (e.g. /sys/bus/event_source/devices), sorted.
pub fn list_pmus(devices: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(devices)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Reads one PMU; Ok(None) when its directory is absent. A present directory with an
/// unreadable `type` is an error (something is wrong, not merely missing).
pub fn read_pmu(devices: &Path, name: &str) -> Result<Option<Pmu>, SysfsError> {
    let dir = devices.join(name);
    if !dir.is_dir() {
        return Ok(None);
    }
    let type_path = dir.join("type");
    let type_ = read_trimmed(&type_path)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| SysfsError::Bad {
            path: type_path.display().to_string(),
            what: "no readable PMU type number".into(),
        })?;
    let mut formats = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(dir.join("format")) {
        for e in rd.flatten() {
            let term = e.file_name().to_string_lossy().into_owned();
            let text = read_trimmed(&e.path()).unwrap_or_default();
            let f = parse_format(&text).ok_or_else(|| SysfsError::Bad {
                path: e.path().display().to_string(),
                what: format!("unknown format '{text}'"),
            })?;
            formats.insert(term, f);
        }
    }
    let cpus = read_trimmed(&dir.join("cpus"))
        .and_then(|s| kairos_platform::numa::parse_cpulist(&s))
        .filter(|v| !v.is_empty());
    Ok(Some(Pmu {
        name: name.into(),
        dir,
        type_,
        formats,
        cpus,
    }))
}

impl Pmu {
    /// The text of `events/NAME`, if the kernel publishes that alias.
    pub fn event(&self, name: &str) -> Option<String> {
        read_trimmed(&self.dir.join("events").join(name))
    }

    pub fn has_event(&self, name: &str) -> bool {
        self.dir.join("events").join(name).is_file()
    }

    /// Sets the bits of `terms` (`event=0xcd,umask=0x1,ldlat=3`; a bare term means 1)
    /// into `into`, through the format files. A term given twice: the last one wins.
    pub fn encode(&self, terms: &str, into: &mut Config) -> Result<(), SysfsError> {
        for term in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (name, value) = match term.split_once('=') {
                Some((n, v)) => (
                    n.trim(),
                    parse_value(v.trim()).ok_or_else(|| SysfsError::BadTerm(term.into()))?,
                ),
                None => (term, 1),
            };
            self.set(name, value, into)?;
        }
        Ok(())
    }

    /// Sets one term to `value`, clearing its old bits first.
    pub fn set(&self, name: &str, value: u64, into: &mut Config) -> Result<(), SysfsError> {
        let f = self
            .formats
            .get(name)
            .ok_or_else(|| SysfsError::UnknownTerm(name.into()))?;
        let bits = f.bits();
        if bits < 64 && value >> bits != 0 {
            return Err(SysfsError::TooWide {
                term: name.into(),
                value,
                bits,
            });
        }
        let word = match f.word {
            0 => &mut into.config,
            1 => &mut into.config1,
            2 => &mut into.config2,
            _ => &mut into.config3,
        };
        let mut v = value;
        for &(lo, hi) in &f.ranges {
            let width = hi - lo + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            *word = (*word & !(mask << lo)) | ((v & mask) << lo);
            v = if width == 64 { 0 } else { v >> width };
        }
        Ok(())
    }
}

fn parse_value(v: &str) -> Option<u64> {
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(
            parse_format("config1:0-15"),
            Some(Format {
                word: 1,
                ranges: vec![(0, 15)]
            })
        );
        assert_eq!(parse_format("config:0-7,32-35").map(|f| f.bits()), Some(12));
        assert_eq!(
            parse_format("config:21"),
            Some(Format {
                word: 0,
                ranges: vec![(21, 21)]
            })
        );
        for bad in [
            "",
            "config",
            "config9:1",
            "config:7-3",
            "config:0-64",
            "config:x",
        ] {
            assert_eq!(parse_format(bad), None, "{bad}");
        }
    }
}
