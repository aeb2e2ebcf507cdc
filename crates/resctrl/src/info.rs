//! Capabilities from `info/`: one directory per resource (L3, L2, L3CODE/L3DATA under
//! CDP, MB, SMBA) and one per monitoring scope (L3_MON).

use std::path::Path;

use serde::Serialize;

use crate::mask::{self, Cbm};
use crate::schemata::parse_domains;
use crate::Error;

/// A cache resource that can be partitioned by ways.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheResource {
    /// Schemata name: L3, L2, L3CODE, L3DATA, L2CODE, L2DATA.
    pub name: String,
    pub cbm_mask: Cbm,
    pub min_cbm_bits: u32,
    /// Classes of service (CLOS); with CDP each class uses a CODE and a DATA mask.
    pub num_closids: u32,
    /// Ways that other agents (I/O, DDIO) also fill: never exclusive to a group.
    pub shareable_bits: Cbm,
    /// `sparse_masks` = 1: masks need not be contiguous (absent = 0, older kernels).
    pub sparse_masks: bool,
    /// info/RES/bit_usage per domain: one letter per way, highest way first
    /// (0 unused, H hardware only, X hardware and software, S software shareable,
    /// E exclusive, P pseudo-locked).
    pub bit_usage: Vec<(u32, String)>,
}

impl CacheResource {
    pub fn ways(&self) -> u32 {
        mask::ways(self.cbm_mask)
    }
    /// The cache level this resource partitions (2 or 3).
    pub fn level(&self) -> Option<u8> {
        match self.name.get(..2) {
            Some("L2") => Some(2),
            Some("L3") => Some(3),
            _ => None,
        }
    }
    /// Code/data prioritisation: the resource is one half of a CDP pair.
    pub fn is_cdp(&self) -> bool {
        self.name.ends_with("CODE") || self.name.ends_with("DATA")
    }
}

/// Memory bandwidth allocation (MB) or slow-memory bandwidth (SMBA).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MbResource {
    pub name: String,
    pub bandwidth_gran: Option<u32>,
    pub min_bandwidth: Option<u32>,
    pub delay_linear: Option<bool>,
    pub num_closids: Option<u32>,
    pub thread_throttle_mode: Option<String>,
}

/// Monitoring (info/L3_MON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MonInfo {
    pub num_rmids: Option<u32>,
    /// llc_occupancy, mbm_total_bytes, mbm_local_bytes, ...
    pub features: Vec<String>,
    pub max_threshold_occupancy: Option<u64>,
}

/// Everything `info/` says.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Caps {
    pub caches: Vec<CacheResource>,
    pub bandwidth: Vec<MbResource>,
    pub mon: Option<MonInfo>,
}

impl Caps {
    pub fn read(root: &Path) -> Result<Caps, Error> {
        let info = root.join("info");
        let rd = std::fs::read_dir(&info).map_err(|_| Error::NotResctrl(root.to_path_buf()))?;
        let mut names: Vec<String> = rd
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        let mut caps = Caps::default();
        for name in names {
            let dir = info.join(&name);
            if name.ends_with("_MON") {
                let features = read_opt(&dir.join("mon_features"))
                    .map(|s| s.split_whitespace().map(String::from).collect())
                    .unwrap_or_default();
                caps.mon = Some(MonInfo {
                    num_rmids: num_opt(&dir.join("num_rmids"))?,
                    features,
                    max_threshold_occupancy: num_opt(&dir.join("max_threshold_occupancy"))?,
                });
            } else if dir.join("cbm_mask").is_file() {
                caps.caches.push(cache_resource(&dir, &name)?);
            } else if dir.join("bandwidth_gran").is_file() || dir.join("min_bandwidth").is_file() {
                caps.bandwidth.push(MbResource {
                    name: name.clone(),
                    bandwidth_gran: num_opt(&dir.join("bandwidth_gran"))?,
                    min_bandwidth: num_opt(&dir.join("min_bandwidth"))?,
                    delay_linear: num_opt::<u32>(&dir.join("delay_linear"))?.map(|v| v == 1),
                    num_closids: num_opt(&dir.join("num_closids"))?,
                    thread_throttle_mode: read_opt(&dir.join("thread_throttle_mode"))
                        .map(|s| s.trim().to_string()),
                });
            }
        }
        Ok(caps)
    }

    /// The resources that partition cache level `level`: `[L3]`, or `[L3CODE, L3DATA]`
    /// when mounted with CDP.
    pub fn level(&self, level: u8) -> Vec<&CacheResource> {
        self.caches
            .iter()
            .filter(|c| c.level() == Some(level))
            .collect()
    }
    pub fn cache(&self, name: &str) -> Option<&CacheResource> {
        self.caches.iter().find(|c| c.name == name)
    }
    /// The number of control groups the machine can have: the smallest CLOS count of the
    /// allocation resources (the kernel uses the same minimum).
    pub fn closid_limit(&self) -> Option<u32> {
        let c = self.caches.iter().map(|c| c.num_closids);
        let b = self.bandwidth.iter().filter_map(|b| b.num_closids);
        c.chain(b).min()
    }
    pub fn monitors(&self, feature: &str) -> bool {
        self.mon
            .as_ref()
            .is_some_and(|m| m.features.iter().any(|f| f == feature))
    }
}

fn cache_resource(dir: &Path, name: &str) -> Result<CacheResource, Error> {
    let cbm_mask = mask::parse_cbm(&read(dir, "cbm_mask")?)?;
    if cbm_mask == 0 || !mask::is_contiguous(cbm_mask) {
        return Err(Error::Parse(format!(
            "info/{name}/cbm_mask {cbm_mask:x} is not a run of ways"
        )));
    }
    Ok(CacheResource {
        name: name.to_string(),
        cbm_mask,
        min_cbm_bits: num_opt(&dir.join("min_cbm_bits"))?.unwrap_or(1),
        num_closids: num_opt(&dir.join("num_closids"))?
            .ok_or_else(|| Error::Parse(format!("info/{name}/num_closids is missing")))?,
        shareable_bits: match read_opt(&dir.join("shareable_bits")) {
            Some(s) => mask::parse_cbm(&s)?,
            None => 0,
        },
        sparse_masks: num_opt::<u32>(&dir.join("sparse_masks"))? == Some(1),
        bit_usage: match read_opt(&dir.join("bit_usage")) {
            Some(s) => parse_domains(&s)?,
            None => Vec::new(),
        },
    })
}

fn read(dir: &Path, file: &str) -> Result<String, Error> {
    let p = dir.join(file);
    std::fs::read_to_string(&p).map_err(|e| Error::io("read", p, e))
}

pub(crate) fn read_opt(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

/// A number file; absent = None, present but not a number = an error.
pub(crate) fn num_opt<T: std::str::FromStr>(p: &Path) -> Result<Option<T>, Error> {
    match read_opt(p) {
        None => Ok(None),
        Some(s) => s.trim().parse::<T>().map(Some).map_err(|_| {
            Error::Parse(format!(
                "{} holds '{}', not a number",
                p.display(),
                s.trim()
            ))
        }),
    }
}
