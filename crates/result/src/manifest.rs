//! `manifest.json`: what was run, on what, with what, and what was lost.
//!
//! The manifest is an *open* struct: almost every field is optional or defaults to empty,
//! and fields this version does not know are kept in [`Manifest::extra`] and written back
//! unchanged. So a later analysis can add a section without breaking old results (old
//! manifests simply lack it) and without older Kairos versions dropping it when they
//! rewrite the manifest. [`FORMAT_VERSION`] only changes for incompatible changes.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kairos_model::LossCounts;
use serde::{Deserialize, Serialize};

/// Version of the result format this crate writes, and the newest it reads.
///
/// Bumped only when an old reader would misread a new result (a field changing meaning or
/// a table changing schema incompatibly), not when sections or columns are added.
pub const FORMAT_VERSION: u32 = 1;

/// Contents of `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format of this result; see [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Kind of analysis, e.g. `"hotspots"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The Kairos command line that made this result, one element per argument.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<Vec<String>>,
    /// What was profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Analysis knobs as given (or defaulted), e.g. `"sampling-interval" => "10"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: BTreeMap<String, String>,
    /// When collection started, RFC 3339 in UTC (see [`rfc3339_utc`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC` at the start, in ns: a sample's Unix time
    /// is its `time_ns` plus this (absent in imported recordings and older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_offset_ns: Option<i64>,
    /// Wall-clock duration of the collection in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<f64>,
    /// The machine the data was collected on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// The sampling event and why it was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// What the collector found available or missing, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<Capability>,
    /// Sample and loss counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// What sample weights count when not nanoseconds of CPU time, e.g. "cycles", for
    /// the default event (the first with samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_event: Option<String>,
    /// Every sampling event of the recording with its samples and summed weight, in the
    /// file's order; the `event` column of the samples table indexes it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventSummary>,
    /// How branch records (LBR) were obtained, when the result has them (see the
    /// `branches` table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_info: Option<kairos_model::BranchInfo>,
    /// How the profiled program ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_exit: Option<TargetExit>,
    /// What ended the collection, e.g. `"target exited"`, `"SIGINT"`, `"duration elapsed"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Collected live or imported from a perf.data file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Free-form notes for the reader: symbolisation problems, decode errors with their
    /// file offset, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Table files written, with row counts. Filled by [`crate::write_profile`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<TableInfo>,
    /// Sections this version does not know (written by a newer Kairos), kept verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Default for Manifest {
    fn default() -> Self {
        Manifest {
            format_version: FORMAT_VERSION,
            kind: None,
            command_line: None,
            target: None,
            knobs: BTreeMap::new(),
            start_time: None,
            clock_offset_ns: None,
            duration_secs: None,
            host: None,
            event: None,
            capabilities: Vec::new(),
            counts: None,
            weight_event: None,
            events: Vec::new(),
            branch_info: None,
            target_exit: None,
            stopped_by: None,
            source: None,
            notes: Vec::new(),
            tables: Vec::new(),
            extra: BTreeMap::new(),
        }
    }
}

/// One event of a recording, as the manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSummary {
    pub name: String,
    /// Timer event: weights are nanoseconds of CPU time.
    pub time: bool,
    pub samples: u64,
    /// Sum of the samples' periods (ns for timers, event counts otherwise).
    pub weight: u64,
}

impl Manifest {
    /// An empty manifest of the current format for an analysis of `kind`.
    pub fn new(kind: &str) -> Self {
        Manifest {
            kind: Some(kind.to_owned()),
            ..Default::default()
        }
    }

    /// The table entry named `name`, if it was written.
    pub fn table(&self, name: &str) -> Option<&TableInfo> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// Loss counts as the model has them (zeros when the manifest has no counts).
    pub fn losses(&self) -> LossCounts {
        self.counts.map(|c| c.losses()).unwrap_or_default()
    }
}

/// What was profiled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// A program Kairos started.
    Program { program: String, args: Vec<String> },
    /// A running process Kairos attached to.
    Pid { pid: i32 },
    /// The whole system.
    SystemWide,
    /// A kind written by a newer Kairos.
    #[serde(other)]
    Unknown,
}

/// The machine the data was collected on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_release: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_cpus: Option<u32>,
}

/// The sampling event, e.g. `cycles` or `cpu-clock`, and why it was chosen (e.g.
/// "hardware counters not available in this VM").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One capability the collector probed (hardware counters, kernel symbols, call graphs,
/// ...), whether it was available, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capability {
    pub name: String,
    pub available: bool,
    /// What was found, e.g. `"perf_event_paranoid = 2"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Why it is missing and what it costs, e.g. "kernel frames show as [unknown]".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Sample and loss counts of the recording.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub samples: u64,
    #[serde(default)]
    pub lost_records: u64,
    #[serde(default)]
    pub lost_samples: u64,
    #[serde(default)]
    pub throttled: u64,
    #[serde(default)]
    pub undecodable: u64,
}

impl Counts {
    /// Counts of a profile with `samples` samples and the model's loss counts.
    pub fn new(samples: u64, l: LossCounts) -> Self {
        Counts {
            samples,
            lost_records: l.lost_records,
            lost_samples: l.lost_samples,
            throttled: l.throttled,
            undecodable: l.undecodable_records,
        }
    }

    /// The loss part, as the model has it.
    pub fn losses(&self) -> LossCounts {
        LossCounts {
            lost_records: self.lost_records,
            lost_samples: self.lost_samples,
            throttled: self.throttled,
            undecodable_records: self.undecodable,
        }
    }
}

/// How the profiled program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TargetExit {
    /// Exited with this status code.
    Code { code: i32 },
    /// Killed by this signal number.
    Signal { signal: i32 },
    /// Did not end during collection (attached, system-wide, or collection stopped first).
    None,
    /// A kind written by a newer Kairos.
    #[serde(other)]
    Unknown,
}

/// Where the data came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Recorded by `kairos collect`.
    Collected,
    /// Read from a perf.data file by `kairos import`.
    Imported { file: String },
    /// A kind written by a newer Kairos.
    #[serde(other)]
    Unknown,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Collected => f.write_str("collected"),
            Source::Imported { file } => write!(f, "imported from {file}"),
            Source::Unknown => f.write_str("unknown"),
        }
    }
}

/// One table file of the result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableInfo {
    /// Table name, e.g. `"samples"`.
    pub name: String,
    /// Path relative to the result directory, e.g. `"tables/samples.parquet"`.
    pub file: String,
    pub rows: u64,
    /// File size, checked by [`crate::ResultDir::open`] to spot truncated copies early.
    pub bytes: u64,
}

/// Formats `t` as RFC 3339 in UTC with millisecond precision, e.g.
/// `2024-05-01T12:34:56.789Z`. Times before 1970 are clamped to the epoch (no clock we
/// read is that wrong, and it keeps this total).
pub fn rfc3339_utc(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = d.as_secs();
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, dd) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{dd:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 to (year, month, day), Howard Hinnant's `civil_from_days`
/// (proleptic Gregorian), in unsigned arithmetic since we never go before 1970.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        let at = |s: u64, ms: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_millis(s * 1000 + ms));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_714_566_896, 789), "2024-05-01T12:34:56.789Z");
        assert_eq!(at(4_107_542_399, 999), "2100-02-28T23:59:59.999Z");
    }

    #[test]
    fn unknown_sections_and_kinds_survive() {
        let json = r#"{"format_version":1,"kind":"hotspots","target":{"kind":"container","id":"x"},
                       "gpu":{"name":"n"},"counts":{"samples":3}}"#;
        let m: Manifest = serde_json::from_str(json).expect("parses");
        assert_eq!(m.target, Some(Target::Unknown));
        assert_eq!(m.counts.map(|c| c.samples), Some(3));
        let back = serde_json::to_string(&m).expect("serialises");
        assert!(back.contains(r#""gpu":{"name":"n"}"#), "{back}");
    }
}
