//! The CPU's identity (vendor, family, model, stepping), from /proc/cpuinfo or from perf's
//! CPUID header string, and the Intel model groups that decide the load/store encodings
//! when sysfs does not give them.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Vendor {
    Intel,
    Amd,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CpuId {
    pub vendor: Vendor,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
}

fn vendor(s: &str) -> Vendor {
    match s.trim() {
        "GenuineIntel" => Vendor::Intel,
        "AuthenticAMD" | "HygonGenuine" => Vendor::Amd,
        _ => Vendor::Other,
    }
}

impl CpuId {
    /// The first processor of /proc/cpuinfo (`vendor_id`, `cpu family`, `model`, `stepping`).
    pub fn from_cpuinfo(text: &str) -> Option<CpuId> {
        let (mut v, mut f, mut m, mut s) = (None, None, None, 0);
        for line in text.lines() {
            if line.trim().is_empty() && v.is_some() {
                break;
            }
            let Some((k, val)) = line.split_once(':') else {
                continue;
            };
            match k.trim() {
                "vendor_id" => v = Some(vendor(val)),
                "cpu family" => f = val.trim().parse().ok(),
                "model" => m = val.trim().parse().ok(),
                "stepping" => s = val.trim().parse().unwrap_or(0),
                _ => {}
            }
        }
        Some(CpuId {
            vendor: v?,
            family: f?,
            model: m?,
            stepping: s,
        })
    }

    /// perf's CPUID header feature on x86: "GenuineIntel,6,85,4" (decimal).
    pub fn from_perf_cpuid(s: &str) -> Option<CpuId> {
        let mut p = s.split(',');
        let v = vendor(p.next()?);
        let family = p.next()?.trim().parse().ok()?;
        let model = p.next()?.trim().parse().ok()?;
        let stepping = p.next().and_then(|x| x.trim().parse().ok()).unwrap_or(0);
        Some(CpuId {
            vendor: v,
            family,
            model,
            stepping,
        })
    }

    /// The key of Intel's perfmon mapfile.csv: "GenuineIntel-6-55-4" (hex, upper case).
    pub fn mapfile_key(&self) -> String {
        let v = match self.vendor {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
            Vendor::Other => "Unknown",
        };
        format!("{v}-{:X}-{:X}-{:X}", self.family, self.model, self.stepping)
    }
}

/// Intel load/store encodings by model, where the kernel's sysfs events are missing
/// (Linux arch/x86/events/intel/core.c; research/memory-cache-io.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum IntelGroup {
    /// Nehalem/Westmere: loads event 0x0b umask 0x10 (ldlat), no store event.
    Nehalem,
    /// Sandy Bridge / Ivy Bridge: stores 0xcd/0x2.
    SandyBridge,
    /// Haswell to Ice Lake: stores 0xd0/0x82.
    Haswell,
    /// Sapphire Rapids and later server parts, hybrid P-cores: loads need the
    /// `mem-loads-aux` (0x03/0x82) leader; stores 0xcd/0x2.
    SapphireRapids,
}

/// The group of a family-6 Intel model, None when unknown (then only sysfs can say).
pub fn intel_group(cpu: &CpuId) -> Option<IntelGroup> {
    if cpu.vendor != Vendor::Intel || cpu.family != 6 {
        return None;
    }
    Some(match cpu.model {
        0x1a | 0x1e | 0x1f | 0x2e | 0x25 | 0x2c | 0x2f => IntelGroup::Nehalem,
        0x2a | 0x2d | 0x3a | 0x3e => IntelGroup::SandyBridge,
        // Haswell, Broadwell, Skylake, Kaby/Coffee/Comet Lake, Cannon/Ice/Tiger Lake, Rocket Lake.
        0x3c | 0x3f | 0x45 | 0x46 | 0x3d | 0x47 | 0x4f | 0x56 | 0x4e | 0x5e | 0x55 | 0x8e
        | 0x9e | 0xa5 | 0xa6 | 0x66 | 0x7d | 0x7e | 0x6a | 0x6c | 0x8c | 0x8d | 0xa7 => {
            IntelGroup::Haswell
        }
        // Sapphire/Emerald/Granite Rapids; Alder/Raptor/Meteor Lake P-cores.
        0x8f | 0xcf | 0xad | 0xae | 0x97 | 0x9a | 0xb7 | 0xba | 0xbf | 0xaa | 0xac => {
            IntelGroup::SapphireRapids
        }
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_forms() {
        let c = CpuId::from_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n").unwrap();
        assert_eq!(
            c,
            CpuId {
                vendor: Vendor::Amd,
                family: 25,
                model: 17,
                stepping: 1
            }
        );
        let skx = CpuId::from_perf_cpuid("GenuineIntel,6,85,4").unwrap();
        assert_eq!(
            (skx.mapfile_key().as_str(), intel_group(&skx)),
            ("GenuineIntel-6-55-4", Some(IntelGroup::Haswell))
        );
        assert_eq!(CpuId::from_cpuinfo("garbage"), None);
    }
}
