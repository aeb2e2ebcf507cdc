//! Monitoring reads: `mon_data/mon_L3_XX/{llc_occupancy, mbm_total_bytes,
//! mbm_local_bytes}` of a group. Occupancy is a level in bytes; the MBM files are
//! cumulative byte counts, so bandwidth is the difference of two reads. A file can say
//! "Unavailable" (no RMID counter yet, or the counter was stolen) or "Error".

use std::path::Path;

use serde::Serialize;

use crate::Error;

/// One domain's counters at one moment; None = absent, "Unavailable" or "Error".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reading {
    pub domain: u32,
    pub llc_occupancy: Option<u64>,
    pub mbm_total_bytes: Option<u64>,
    pub mbm_local_bytes: Option<u64>,
}

/// A counter file's value.
pub fn value(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// Reads every `mon_L3_XX` of the group at `group` (sorted by domain).
pub fn read(group: &Path) -> Result<Vec<Reading>, Error> {
    let dir = group.join("mon_data");
    let rd = std::fs::read_dir(&dir).map_err(|e| Error::io("list", &dir, e))?;
    let mut out = Vec::new();
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(domain) = name
            .strip_prefix("mon_L3_")
            .and_then(|d| d.parse::<u32>().ok())
        else {
            continue;
        };
        let f = |file: &str| {
            std::fs::read_to_string(e.path().join(file))
                .ok()
                .as_deref()
                .and_then(value)
        };
        out.push(Reading {
            domain,
            llc_occupancy: f("llc_occupancy"),
            mbm_total_bytes: f("mbm_total_bytes"),
            mbm_local_bytes: f("mbm_local_bytes"),
        });
    }
    out.sort_by_key(|r| r.domain);
    Ok(out)
}

/// Sum of occupancy over the domains that report it (None when none does).
pub fn total_occupancy(r: &[Reading]) -> Option<u64> {
    r.iter()
        .filter_map(|x| x.llc_occupancy)
        .reduce(|a, b| a + b)
}

/// What happened to a cumulative counter between two reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Delta {
    Bytes(u64),
    /// The count went down: the counter was reset (RMID reused, group re-made), so the
    /// interval's traffic is unknown.
    Reset,
    /// One of the reads had no value.
    Unknown,
}

/// `now - prev` for a counter that wraps at 2^`width` bits. The kernel already widens
/// the hardware counters to 64 bits (it reads them before they can wrap), so a decrease
/// of a 64-bit value is a reset, not a wrap.
pub fn delta(prev: Option<u64>, now: Option<u64>, width: u32) -> Delta {
    match (prev, now) {
        (Some(p), Some(n)) if n >= p => Delta::Bytes(n - p),
        (Some(p), Some(n)) if width < 64 && p < 1u64 << width && n < 1u64 << width => {
            Delta::Bytes((1u64 << width) - p + n)
        }
        (Some(_), Some(_)) => Delta::Reset,
        _ => Delta::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_deltas() {
        assert_eq!(value("32440320\n"), Some(32440320));
        assert_eq!(value("Unavailable\n"), None);
        assert_eq!(value("Error"), None);
        assert_eq!(delta(Some(100), Some(250), 64), Delta::Bytes(150));
        assert_eq!(delta(Some(250), Some(100), 64), Delta::Reset);
        // A 24-bit hardware counter that wrapped: 2^24 - 16 -> 16 is 32 bytes.
        assert_eq!(delta(Some((1 << 24) - 16), Some(16), 24), Delta::Bytes(32));
        assert_eq!(delta(None, Some(1), 64), Delta::Unknown);
        assert_eq!(delta(Some(1), None, 64), Delta::Unknown);
    }
}
