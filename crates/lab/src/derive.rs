//! How long deriving a time-assignment method's profile takes and how much memory it
//! needs (`kairos lab derive`), measured in this process: what the page's method switch
//! does (points, each record's time, the derived profile), timed from start to end, and
//! the peak resident memory while it ran (the kernel's high-water mark, reset after the
//! result was loaded), next to the memory the loaded result takes.
//!
//! Memory comes from `/proc/self/status` (VmRSS, VmHWM) and the reset from
//! `/proc/self/clear_refs`; where they cannot be read, the figures are absent and the
//! report says so rather than guess.

use std::time::Instant;

use kairos_model::Profile;
use kairos_report::{Cell, Document, Section};
use kairos_time_assignment::{derive, Method};

use crate::Result;

/// What one derivation took.
#[derive(Debug, Clone, PartialEq)]
pub struct DeriveMeasure {
    pub method: Method,
    pub samples: u64,
    pub records: u64,
    /// Records given a point (`is_new`).
    pub new_records: u64,
    /// Samples of the derived profile.
    pub points: u64,
    pub points_per_sample: f64,
    /// Seconds to read the result (given by the caller), and to derive.
    pub load_s: f64,
    pub derive_s: f64,
    /// Resident memory after loading, and its peak while deriving (bytes).
    pub rss_loaded: Option<u64>,
    pub rss_peak: Option<u64>,
}

/// One field of `/proc/self/status` in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Resets the peak to the current resident size; false when the kernel refuses.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Derives `method`'s profile of `profile` once and measures it; `load_s` is how long
/// reading the result took.
pub fn measure_derive(profile: &Profile, method: Method, load_s: f64) -> Result<DeriveMeasure> {
    let rss_loaded = status_bytes("VmRSS:");
    let can_peak = reset_peak();
    let t0 = Instant::now();
    let d = derive(profile, method)?;
    let derive_s = t0.elapsed().as_secs_f64();
    let rss_peak = if can_peak {
        status_bytes("VmHWM:")
    } else {
        None
    };
    Ok(DeriveMeasure {
        method,
        samples: profile.samples.len() as u64,
        records: profile.branches.len() as u64,
        new_records: profile.branches.iter().filter(|b| b.is_new).count() as u64,
        points: d.samples.len() as u64,
        points_per_sample: d.points_per_sample,
        load_s,
        derive_s,
        rss_loaded,
        rss_peak,
    })
}

fn mib(b: Option<u64>) -> Cell {
    b.map_or(
        Cell::text("not measured (/proc/self/status or clear_refs unavailable)"),
        |b| Cell::UInt(b >> 20),
    )
}

impl DeriveMeasure {
    /// The measure as a report: input, time, memory.
    pub fn to_document(&self) -> Document {
        let mut d = Document::new(format!("Deriving the {} points", self.method));
        let mut s = Section::new("Input");
        s.push("Method", Cell::text(self.method.as_str()));
        s.push("Samples", Cell::UInt(self.samples));
        s.push("Branch records", Cell::UInt(self.records));
        s.push("New branch records", Cell::UInt(self.new_records));
        d.push_section(s);
        let mut s = Section::new("Time");
        s.push("Load (s)", Cell::float(self.load_s, 3));
        s.push("Derive (s)", Cell::float(self.derive_s, 3));
        s.push("Points", Cell::UInt(self.points));
        s.push("Points per sample", Cell::float(self.points_per_sample, 2));
        d.push_section(s);
        let mut s = Section::new("Memory");
        s.push("Resident after load (MiB)", mib(self.rss_loaded));
        s.push("Peak while deriving (MiB)", mib(self.rss_peak));
        let extra = self
            .rss_loaded
            .zip(self.rss_peak)
            .map(|(a, b)| b.saturating_sub(a));
        s.push("Added by deriving (MiB)", mib(extra));
        d.push_section(s);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_report::{assert_golden, Format};

    #[test]
    fn report_matches_golden() {
        let m = DeriveMeasure {
            method: Method::Covered,
            samples: 10_000_000,
            records: 160_000_000,
            new_records: 64_000_000,
            points: 74_000_000,
            points_per_sample: 7.4,
            load_s: 12.5,
            derive_s: 2.75,
            rss_loaded: Some(9 << 30),
            rss_peak: Some(12 << 30),
        };
        let no_mem = DeriveMeasure {
            rss_loaded: None,
            rss_peak: None,
            ..m.clone()
        };
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
        for (name, f) in [
            ("derive.txt", Format::Text),
            ("derive.csv", Format::Csv),
            ("derive.json", Format::Json),
        ] {
            assert_golden(&dir.join(name), &m.to_document().render(f));
        }
        assert_golden(
            &dir.join("derive_no_memory.txt"),
            &no_mem.to_document().render(Format::Text),
        );
    }

    #[test]
    fn measures_a_synthetic_profile() {
        let o = crate::ScaleOptions {
            samples: 2000,
            functions: 40,
            threads: 2,
            interval_ns: 100_000,
            branch_depth: 16,
            ..Default::default()
        };
        let p = crate::synthesize(&o).unwrap_or_default();
        let m = measure_derive(&p, Method::Covered, 0.0);
        let m = m
            .as_ref()
            .map(|m| (m.samples, m.records, m.points > m.samples));
        assert_eq!(m.ok(), Some((2000, p.branches.len() as u64, true)));
    }
}
