//! The weight (PERF_SAMPLE_WEIGHT vs WEIGHT_STRUCT) and one memory sample taken from a
//! decoded perf.data sample.

use kairos_perf_data::{EventAttr, Sample, PERF_SAMPLE_WEIGHT, PERF_SAMPLE_WEIGHT_STRUCT};
use serde::Serialize;

use crate::classify::{classify, Class};
use crate::data_src::DataSrc;

/// A sample's weight, split by its format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Weight {
    /// Access latency in cycles: the whole u64 for PERF_SAMPLE_WEIGHT, the low 32 bits
    /// (`var1_dw`) for WEIGHT_STRUCT. This is what perf prints as `weight`.
    pub latency: u64,
    /// WEIGHT_STRUCT `var2_w`: instruction latency (`ins_lat`), set by newer CPUs only
    /// (0 on Skylake-SP, for example).
    pub ins_lat: Option<u16>,
    /// WEIGHT_STRUCT `var3_w` (retire latency on newer Intel CPUs).
    pub var3: Option<u16>,
}

impl Weight {
    /// Splits the raw weight word according to the event's sample_type. With neither bit
    /// the whole word is taken as the latency.
    pub fn from_raw(raw: u64, sample_type: u64) -> Weight {
        if sample_type & PERF_SAMPLE_WEIGHT_STRUCT != 0 && sample_type & PERF_SAMPLE_WEIGHT == 0 {
            Weight {
                latency: raw & 0xffff_ffff,
                ins_lat: Some((raw >> 32) as u16),
                var3: Some((raw >> 48) as u16),
            }
        } else {
            Weight {
                latency: raw,
                ins_lat: None,
                var3: None,
            }
        }
    }
}

/// One sampled memory access.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemSample {
    pub ip: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub cpu: Option<u32>,
    /// Data (virtual) address.
    pub addr: Option<u64>,
    pub phys_addr: Option<u64>,
    /// The raw word, its fields and our classification.
    pub data_src_raw: u64,
    pub data_src: DataSrc,
    pub class: Class,
    pub weight: Option<Weight>,
    /// Call chain as recorded (PERF_CONTEXT_* markers included).
    pub callchain: Vec<u64>,
}

impl MemSample {
    /// The memory fields of a sample; None when it carries no data source (another event).
    pub fn from_sample(s: &Sample<'_>, attr: &EventAttr) -> Option<MemSample> {
        let raw = s.data_src?;
        let data_src = DataSrc::from_raw(raw);
        Some(MemSample {
            ip: s.ip,
            pid: s.pid,
            tid: s.tid,
            time: s.time,
            cpu: s.cpu,
            addr: s.addr,
            phys_addr: s.phys_addr,
            data_src_raw: raw,
            data_src,
            class: classify(&data_src),
            weight: s.weight.map(|w| Weight::from_raw(w, attr.sample_type)),
            callchain: s.callchain.as_ref().map(|c| c.to_vec()).unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_formats() {
        let raw = 0x0003_0002_0000_00e1;
        assert_eq!(
            Weight::from_raw(raw, PERF_SAMPLE_WEIGHT_STRUCT),
            Weight {
                latency: 225,
                ins_lat: Some(2),
                var3: Some(3)
            }
        );
        assert_eq!(Weight::from_raw(raw, PERF_SAMPLE_WEIGHT).latency, raw);
    }
}
