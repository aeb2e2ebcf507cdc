//! Intel perfmon core event files (`SKX/events/skylakex_core.json`): event names as the
//! metric files use them (`CYCLE_ACTIVITY.STALLS_MEM_ANY`, `L1D_PEND_MISS.FB_FULL:c1`,
//! `TOPDOWN.SLOTS:perf_metrics`) turned into perf_event_attr encodings for the `cpu` PMU.
//!
//! The raw layout is the architectural IA32_PERFEVTSELx one the kernel's `cpu/format/`
//! describes: event 0-7, umask 8-15, edge 18, any 21, inv 23, cmask 24-31; offcore
//! response events put their MSR value in config1. Events of the fixed counters are
//! written with pseudo encodings (EventCode 0x00) that only some have in the kernel:
//! cycles and instructions become the generic hardware events, `TOPDOWN.SLOTS` and the
//! `PERF_METRICS.*` fractions the kernel's `slots`/`topdown-*` encodings.

use std::collections::HashMap;

use serde::Deserialize;

/// `slots` in the kernel's `cpu/events/` (event=0x00,umask=0x4).
pub const SLOTS_CONFIG: u64 = 0x0400;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("the event file is not perfmon JSON: {0}")]
    Parse(String),
    #[error("event {0} is not in the CPU's event file")]
    Unknown(String),
    #[error("event {name}: {why}")]
    Bad { name: String, why: String },
}

/// Where an event is counted and how the kernel knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// PERF_TYPE_HARDWARE with this config (cycles, instructions).
    Hardware,
    /// The `cpu` PMU's raw encoding (PERF_TYPE_RAW).
    Raw,
    /// The topdown slots counter: must lead the group of the `PERF_METRICS.*` events.
    Slots,
    /// A topdown fraction (`PERF_METRICS.BACKEND_BOUND`): counted only in a group led by
    /// slots, never sampling; its value is slots times the fraction.
    Metric,
}

/// One event ready for perf_event_open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The name as the metric file writes it (the key of its value in the counts).
    pub name: String,
    pub kind: Kind,
    pub config: u64,
    pub config1: u64,
    /// On a fixed counter (no general-purpose counter taken).
    pub fixed: bool,
}

impl Encoded {
    /// perf's spelling of the encoding, for the recording's event names and the notes.
    pub fn perf_spelling(&self) -> String {
        match self.kind {
            Kind::Hardware if self.config == perf_hw::CPU_CYCLES => "cycles".into(),
            Kind::Hardware => "instructions".into(),
            _ => {
                let c = self.config;
                let mut s = format!("cpu/event={:#x},umask={:#x}", c & 0xff, (c >> 8) & 0xff);
                for (bit, word) in [(18, "edge"), (21, "any"), (23, "inv")] {
                    if c >> bit & 1 == 1 {
                        s.push(',');
                        s.push_str(word);
                    }
                }
                if c >> 24 != 0 {
                    s.push_str(&format!(",cmask={:#x}", c >> 24));
                }
                if self.config1 != 0 {
                    s.push_str(&format!(",offcore_rsp={:#x}", self.config1));
                }
                s.push('/');
                s
            }
        }
    }
}

/// The two generic hardware events used for fixed counters (linux/perf_event.h).
pub mod perf_hw {
    pub const CPU_CYCLES: u64 = 0;
    pub const INSTRUCTIONS: u64 = 1;
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "Events")]
    events: Vec<Raw>,
}

#[derive(Deserialize, Clone)]
#[serde(rename_all = "PascalCase")]
struct Raw {
    event_name: String,
    event_code: String,
    #[serde(rename = "UMask")]
    umask: String,
    #[serde(default)]
    counter: String,
    #[serde(default)]
    counter_mask: Option<String>,
    #[serde(default)]
    invert: Option<String>,
    #[serde(default)]
    edge_detect: Option<String>,
    #[serde(default)]
    any_thread: Option<String>,
    #[serde(default)]
    offcore: Option<String>,
    #[serde(rename = "MSRValue", default)]
    msr_value: Option<String>,
}

/// A CPU's core events by name.
pub struct PerfmonEvents {
    by_name: HashMap<String, Raw>,
}

fn number(s: &str) -> Option<u64> {
    // "0xB7, 0xBB": offcore events list the code of each of their two counters.
    let s = s.split(',').next()?.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn flag(v: &Option<String>) -> bool {
    v.as_deref().and_then(number).unwrap_or(0) != 0
}

impl PerfmonEvents {
    pub fn load(json: &str) -> Result<PerfmonEvents, EncodeError> {
        let f: File = serde_json::from_str(json).map_err(|e| EncodeError::Parse(e.to_string()))?;
        Ok(PerfmonEvents {
            by_name: f
                .events
                .into_iter()
                .map(|e| (e.event_name.clone(), e))
                .collect(),
        })
    }

    /// The encoding of a metric file's event name, with its `:cN`, `:eN`, `:iN` modifiers.
    pub fn encode(&self, name: &str) -> Result<Encoded, EncodeError> {
        let mut parts = name.split(':');
        let base = parts.next().unwrap_or(name);
        let bad = |why: String| EncodeError::Bad {
            name: name.to_string(),
            why,
        };
        if let Some(metric) = base.strip_prefix("PERF_METRICS.") {
            return topdown_metric(metric)
                .map(|config| Encoded {
                    name: name.into(),
                    kind: Kind::Metric,
                    config,
                    config1: 0,
                    fixed: true,
                })
                .ok_or_else(|| bad("no topdown encoding for this fraction".into()));
        }
        let raw = self
            .by_name
            .get(base)
            .ok_or_else(|| EncodeError::Unknown(base.to_string()))?;
        let code = number(&raw.event_code)
            .ok_or_else(|| bad(format!("EventCode {:?} is not a number", raw.event_code)))?;
        let umask = number(&raw.umask)
            .ok_or_else(|| bad(format!("UMask {:?} is not a number", raw.umask)))?;
        let mut cmask = raw.counter_mask.as_deref().and_then(number).unwrap_or(0);
        let (mut edge, mut inv) = (flag(&raw.edge_detect), flag(&raw.invert));
        for m in parts {
            let (key, val) = m.split_at(m.len().min(1));
            let v = || {
                val.parse::<u64>()
                    .map_err(|_| bad(format!("modifier :{m} has no number")))
            };
            match key {
                "c" => cmask = v()?,
                "e" => edge = val.is_empty() || v()? != 0,
                "i" => inv = val.is_empty() || v()? != 0,
                // The slots counter read with the metrics: how the kernel reads it anyway.
                _ if m == "perf_metrics" => {}
                _ => return Err(bad(format!("unknown modifier :{m}"))),
            }
        }
        if cmask > 0xff {
            return Err(bad(format!("counter mask {cmask} does not fit in 8 bits")));
        }
        let fixed = raw.counter.starts_with("Fixed");
        if code == 0 && fixed {
            return fixed_counter(name, umask, raw);
        }
        let config = code & 0xff
            | (umask & 0xff) << 8
            | (edge as u64) << 18
            | (flag(&raw.any_thread) as u64) << 21
            | (inv as u64) << 23
            | cmask << 24;
        let config1 = if flag(&raw.offcore) {
            raw.msr_value.as_deref().and_then(number).unwrap_or(0)
        } else {
            0
        };
        Ok(Encoded {
            name: name.into(),
            kind: Kind::Raw,
            config,
            config1,
            fixed: false,
        })
    }
}

/// The kernel's pseudo encodings of the fixed counters (EventCode 0): instructions,
/// cycles (with AnyThread, the architectural event) and slots, by umask.
fn fixed_counter(name: &str, umask: u64, raw: &Raw) -> Result<Encoded, EncodeError> {
    // A fixed counter's events count on it, except THREAD_ANY's.
    let fixed = true;
    match umask {
        0x01 => Ok(Encoded {
            name: name.into(),
            kind: Kind::Hardware,
            config: perf_hw::INSTRUCTIONS,
            config1: 0,
            fixed,
        }),
        0x02 if !flag(&raw.any_thread) => Ok(Encoded {
            name: name.into(),
            kind: Kind::Hardware,
            config: perf_hw::CPU_CYCLES,
            config1: 0,
            fixed,
        }),
        // THREAD_ANY: the architectural unhalted-cycles event with AnyThread.
        0x02 => Ok(Encoded {
            name: name.into(),
            kind: Kind::Raw,
            config: 0x3c | 1 << 21,
            config1: 0,
            fixed: false,
        }),
        0x04 => Ok(Encoded {
            name: name.into(),
            kind: Kind::Slots,
            config: SLOTS_CONFIG,
            config1: 0,
            fixed,
        }),
        _ => Err(EncodeError::Bad {
            name: name.to_string(),
            why: format!("fixed-counter pseudo encoding umask {umask:#x} is unknown"),
        }),
    }
}

/// The kernel's topdown pseudo encodings (`cpu/events/topdown-*`: event=0x00, umask=0x80+).
fn topdown_metric(metric: &str) -> Option<u64> {
    let umask = match metric {
        "RETIRING" => 0x80,
        "BAD_SPECULATION" => 0x81,
        "FRONTEND_BOUND" => 0x82,
        "BACKEND_BOUND" => 0x83,
        "HEAVY_OPERATIONS" => 0x84,
        "BRANCH_MISPREDICTS" => 0x85,
        "FETCH_LATENCY" => 0x86,
        "MEMORY_BOUND" => 0x87,
        _ => return None,
    };
    Some(umask << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{"Header": {}, "Events": [
      {"EventCode": "0xA3", "UMask": "0x14", "EventName": "CYCLE_ACTIVITY.STALLS_MEM_ANY", "Counter": "0,1,2,3", "CounterMask": "20", "Invert": "0", "AnyThread": "0", "EdgeDetect": "0", "Offcore": "0", "MSRValue": "0"},
      {"EventCode": "0x48", "UMask": "0x02", "EventName": "L1D_PEND_MISS.FB_FULL", "Counter": "0,1,2,3", "CounterMask": "0", "Invert": "0", "EdgeDetect": "0"},
      {"EventCode": "0x00", "UMask": "0x02", "EventName": "CPU_CLK_UNHALTED.THREAD", "Counter": "Fixed counter 1"},
      {"EventCode": "0x00", "UMask": "0x02", "EventName": "CPU_CLK_UNHALTED.THREAD_ANY", "Counter": "Fixed counter 1", "AnyThread": "1"},
      {"EventCode": "0x00", "UMask": "0x04", "EventName": "TOPDOWN.SLOTS", "Counter": "Fixed counter 3"},
      {"EventCode": "0x0D", "UMask": "0x01", "EventName": "INT_MISC.CLEARS_COUNT", "Counter": "0,1", "CounterMask": "1", "EdgeDetect": "1"},
      {"EventCode": "0xB7, 0xBB", "UMask": "0x01", "EventName": "OFFCORE_RESPONSE.X", "Counter": "0,1,2,3", "Offcore": "1", "MSRValue": "0x3FBC000491"}
    ]}"#;

    fn enc(name: &str) -> Encoded {
        PerfmonEvents::load(FILE)
            .unwrap_or_else(|e| panic!("{e}"))
            .encode(name)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn raw_fields_go_where_perfevtsel_has_them() {
        let e = enc("CYCLE_ACTIVITY.STALLS_MEM_ANY");
        assert_eq!((e.kind, e.config), (Kind::Raw, 0x1400_14a3));
        assert_eq!(e.perf_spelling(), "cpu/event=0xa3,umask=0x14,cmask=0x14/");
        assert_eq!(enc("INT_MISC.CLEARS_COUNT").config, 0x0104_010d);
        let off = enc("OFFCORE_RESPONSE.X");
        assert_eq!((off.config, off.config1), (0x01b7, 0x3F_BC00_0491));
    }

    #[test]
    fn modifiers_override_the_file() {
        assert_eq!(enc("L1D_PEND_MISS.FB_FULL:c1").config, 0x0100_0248);
        assert_eq!(enc("L1D_PEND_MISS.FB_FULL:c1:e1").config, 0x0104_0248);
        assert_eq!(enc("L1D_PEND_MISS.FB_FULL:i1").config, 0x0080_0248);
        let e = PerfmonEvents::load(FILE).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            e.encode("L1D_PEND_MISS.FB_FULL:z"),
            Err(EncodeError::Bad { .. })
        ));
        assert!(matches!(
            e.encode("L1D_PEND_MISS.FB_FULL:c999"),
            Err(EncodeError::Bad { .. })
        ));
        assert!(matches!(e.encode("NO.SUCH"), Err(EncodeError::Unknown(_))));
    }

    #[test]
    fn fixed_counters_use_the_kernels_names() {
        assert_eq!(
            (
                enc("CPU_CLK_UNHALTED.THREAD").kind,
                enc("CPU_CLK_UNHALTED.THREAD").config
            ),
            (Kind::Hardware, perf_hw::CPU_CYCLES)
        );
        assert_eq!(enc("CPU_CLK_UNHALTED.THREAD_ANY").config, 0x20_003c);
        let s = enc("TOPDOWN.SLOTS:perf_metrics");
        assert_eq!((s.kind, s.config), (Kind::Slots, SLOTS_CONFIG));
        let m = enc("PERF_METRICS.BACKEND_BOUND");
        assert_eq!((m.kind, m.config), (Kind::Metric, 0x8300));
    }

    #[test]
    fn bad_files_are_errors() {
        assert!(matches!(
            PerfmonEvents::load("{"),
            Err(EncodeError::Parse(_))
        ));
        assert!(matches!(
            PerfmonEvents::load(r#"{"Events": [{"EventName": 3}]}"#),
            Err(EncodeError::Parse(_))
        ));
    }
}
