//! Perfmon uncore events and their `config`: the event file's codes and masks placed in
//! the bits the PMU's sysfs `format` files give (so SKX, ICX and SPR layouts all follow
//! the kernel), and the bytes a count stands for, from the event's own description.

use std::path::Path;

use serde::Deserialize;

/// One perfmon uncore event.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Event {
    pub event_name: String,
    pub event_code: String,
    #[serde(rename = "UMask")]
    pub umask: String,
    #[serde(rename = "UMaskExt", default)]
    pub umask_ext: Option<String>,
    #[serde(default)]
    pub port_mask: Option<String>,
    #[serde(rename = "FCMask", default)]
    pub fc_mask: Option<String>,
    #[serde(default)]
    pub brief_description: String,
    #[serde(default)]
    pub public_description: String,
    /// The uncore unit that counts it: `CHA`, `IIO`.
    #[serde(default)]
    pub unit: String,
    /// Which box filter register the event needs (SKX: `Filter1`, `CHAFilter1[31:0]`).
    #[serde(default)]
    pub filter: Option<String>,
    /// The value of that filter register (SKX CHA: opcode, local/remote, NM bits).
    #[serde(rename = "FILTER_VALUE", default)]
    pub filter_value: Option<String>,
}

impl Event {
    /// FILTER_VALUE as a number (0 when absent or not hex).
    pub fn filter_bits(&self) -> u64 {
        self.filter_value.as_deref().and_then(hex).unwrap_or(0)
    }
}

/// An event's attr fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Config {
    pub config: u64,
    /// The box filter (SKX CHA: FILTER0 in bits 0-31, FILTER1 in bits 32-63).
    pub config1: u64,
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "Events")]
    events: Vec<Event>,
}

/// Reads a perfmon uncore event file.
pub fn events(json: &str) -> Result<Vec<Event>, String> {
    serde_json::from_str::<File>(json)
        .map(|f| f.events)
        .map_err(|e| format!("the perfmon uncore file is not perfmon JSON: {e}"))
}

fn hex(s: &str) -> Option<u64> {
    let s = s.trim();
    u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).ok()
}

/// Bytes one count stands for, from the event's description ("Four byte data request",
/// "Read request for 4 bytes", "Number of DWs (4 bytes)"); None when it does not say.
pub fn bytes_per_count(e: &Event) -> Option<f64> {
    let d = format!("{} {}", e.brief_description, e.public_description).to_ascii_lowercase();
    let words = d
        .split(|c: char| !c.is_ascii_alphanumeric())
        .collect::<Vec<_>>();
    words.windows(2).find_map(|w| {
        let n = match w[0] {
            "four" => Some(4.0),
            "eight" => Some(8.0),
            "64" | "32" | "16" | "8" | "4" => w[0].parse().ok(),
            _ => None,
        }?;
        matches!(w[1], "byte" | "bytes").then_some(n)
    })
}

/// Puts `value` into the bits of a sysfs format field (`config:8-15,32-57`), low bits
/// first; None for a field of config1/config2, a malformed one, or a value too wide.
pub fn place(format: &str, mut value: u64) -> Option<u64> {
    let ranges = format.trim().strip_prefix("config:")?;
    let mut out = 0u64;
    for r in ranges.split(',') {
        let (lo, hi) = match r.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => (r.parse().ok()?, r.parse().ok()?),
        };
        if hi < lo || hi > 63 {
            return None;
        }
        let bits = hi - lo + 1;
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1 << bits) - 1
        };
        out |= (value & mask) << lo;
        value = value.checked_shr(bits).unwrap_or(0);
    }
    // Bits left over do not fit the field: refuse rather than count another event.
    (value == 0).then_some(out)
}

/// The bits of `config1` the PMU's format fields cover (the kernel passes only those on to
/// the filter registers).
fn config1_bits(pmu_dir: &Path) -> u64 {
    let Ok(dir) = std::fs::read_dir(pmu_dir.join("format")) else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|f| std::fs::read_to_string(f.path()).ok())
        .filter_map(|t| t.trim().strip_prefix("config1:").map(mask))
        .fold(0, |a, b| a | b)
}

/// The bits of format ranges such as `32,41-50` (malformed ranges cover nothing).
fn mask(ranges: &str) -> u64 {
    ranges
        .split(',')
        .filter_map(|r| {
            let (lo, hi) = match r.split_once('-') {
                Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
                None => (r.parse().ok()?, r.parse().ok()?),
            };
            (lo <= hi && hi <= 63).then(|| (lo..=hi).fold(0u64, |m, b| m | 1 << b))
        })
        .fold(0, |a, b| a | b)
}

/// The box filter of `e` as `config1`: Intel's SKX-generation CHA keeps FILTER0 in the low
/// and FILTER1 in the high 32 bits (the kernel's `filter_opc0` is `config1:41-50`, FILTER1
/// bits 9-18). Refused when the PMU's format fields do not cover every bit the value sets,
/// since the kernel would silently drop them and count another event.
fn filter(pmu_dir: &Path, e: &Event) -> Result<u64, String> {
    let value = e.filter_bits();
    if value == 0 {
        return Ok(0);
    }
    let which = e.filter.as_deref().unwrap_or_default().to_ascii_lowercase();
    let shift = if which.contains("filter1") {
        32
    } else if which.contains("filter0") {
        0
    } else {
        return Err(format!(
            "{}: filter register '{}' is not one Kairos knows how to place",
            e.event_name,
            e.filter.as_deref().unwrap_or_default()
        ));
    };
    let config1 = value
        .checked_shl(shift)
        .filter(|v| v >> shift == value)
        .ok_or_else(|| {
            format!(
                "{}: FILTER_VALUE {value:#x} is wider than its register",
                e.event_name
            )
        })?;
    let covered = config1_bits(pmu_dir);
    if config1 & !covered != 0 {
        return Err(format!(
            "{} needs the box filter {value:#x} ({}), which {} has no config1 fields for (an older kernel?)",
            e.event_name,
            e.filter.as_deref().unwrap_or_default(),
            pmu_dir.display()
        ));
    }
    Ok(config1)
}

/// The attr fields of `e` on the PMU whose sysfs folder is `pmu_dir`, from its `format`
/// files: event, umask (with the extension in its own field or above the umask's 8 bits),
/// ch_mask (PortMask), fc_mask (FCMask), and the box filter in `config1`.
pub fn encode(pmu_dir: &Path, e: &Event) -> Result<Config, String> {
    let field = |n: &str| std::fs::read_to_string(pmu_dir.join("format").join(n)).ok();
    let bad = |what: &str| format!("{}: bad {what}", e.event_name);
    let code = hex(&e.event_code).ok_or_else(|| bad("EventCode"))?;
    let umask = hex(&e.umask).ok_or_else(|| bad("UMask"))?;
    let ext = e.umask_ext.as_deref().and_then(hex).unwrap_or(0);
    let put = |name: &str, v: u64| -> Result<u64, String> {
        if v == 0 {
            return Ok(0);
        }
        let f = field(name).ok_or_else(|| {
            format!(
                "{} needs the {name} field, which {} does not have",
                e.event_name,
                pmu_dir.display()
            )
        })?;
        place(&f, v).ok_or_else(|| format!("{}: format {name} '{}'", e.event_name, f.trim()))
    };
    let mut config = put("event", code)?;
    if field("umask_ext").is_some() {
        config |= put("umask", umask)? | put("umask_ext", ext)?;
    } else {
        config |= put("umask", umask | ext << 8)?;
    }
    config |= put("ch_mask", e.port_mask.as_deref().and_then(hex).unwrap_or(0))?;
    config |= put("fc_mask", e.fc_mask.as_deref().and_then(hex).unwrap_or(0))?;
    Ok(Config {
        config,
        config1: filter(pmu_dir, e)?,
    })
}
