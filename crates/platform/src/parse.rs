//! Parsers for the text files under /proc and /sys that capability detection reads.
//! All of them are total: malformed input gives empty / `None` fields, never a panic.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What /proc/cpuinfo says about the first CPU, plus the CPU count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuInfo {
    /// `vendor_id`, e.g. `GenuineIntel`, `AuthenticAMD` (empty when not found).
    pub vendor: String,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub stepping: Option<u32>,
    pub model_name: String,
    /// Number of `processor` entries.
    pub logical_cpus: u32,
    /// Feature flags of the first CPU (`flags` on x86, `Features` on arm64).
    pub flags: BTreeSet<String>,
}

impl CpuInfo {
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.contains(flag)
    }
    pub fn is_intel(&self) -> bool {
        self.vendor == "GenuineIntel"
    }
    pub fn is_amd(&self) -> bool {
        self.vendor == "AuthenticAMD" || self.vendor == "HygonGenuine"
    }
    /// Running under a hypervisor (the `hypervisor` cpuid flag).
    pub fn is_virtual(&self) -> bool {
        self.has_flag("hypervisor")
    }
}

fn parse_num(v: &str) -> Option<u32> {
    let v = v.trim();
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16).ok()
    } else {
        v.parse().ok()
    }
}

/// Parse /proc/cpuinfo. Fields come from the first `processor` block.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    let mut block = 0u32; // index of the block being read (1-based once seen)
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        let value = value.trim();
        if key == "processor" {
            info.logical_cpus += 1;
            block += 1;
            continue;
        }
        if block > 1 {
            continue;
        }
        match key {
            "vendor_id" | "CPU implementer" if info.vendor.is_empty() => {
                info.vendor = value.to_string()
            }
            "cpu family" => info.family = parse_num(value),
            "model" | "CPU part" if info.model.is_none() => info.model = parse_num(value),
            "stepping" | "CPU revision" if info.stepping.is_none() => {
                info.stepping = parse_num(value)
            }
            "model name" if info.model_name.is_empty() => info.model_name = value.to_string(),
            "flags" | "Features" if info.flags.is_empty() => {
                info.flags = value.split_whitespace().map(str::to_string).collect()
            }
            _ => {}
        }
    }
    info
}

/// One line of /proc/mounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub source: String,
    pub target: String,
    pub fstype: String,
    pub options: String,
}

/// Undo the octal escapes (`\040` for a space) of /proc/mounts.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = &b[i + 1..i + 4];
            if oct.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = u32::from(oct[0] - b'0') * 64
                    + u32::from(oct[1] - b'0') * 8
                    + u32::from(oct[2] - b'0');
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some(Mount {
                source: unescape_mount(f.next()?),
                target: unescape_mount(f.next()?),
                fstype: f.next()?.to_string(),
                options: f.next().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// File-system types the kernel knows (/proc/filesystems), `nodev` dropped.
pub fn parse_filesystems(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(str::to_string)
        .collect()
}

/// A `Key: value [kB]` field of /proc/meminfo, as the number (kB for sizes).
pub fn meminfo_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

/// Privileges of the process, from /proc/self/status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Privileges {
    pub euid: Option<u32>,
    /// Effective capability set (`CapEff`), when readable.
    pub cap_eff: Option<u64>,
}

pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYSLOG: u32 = 34;
pub const CAP_PERFMON: u32 = 38;
pub const CAP_BPF: u32 = 39;

impl Privileges {
    pub fn is_root(&self) -> bool {
        self.euid == Some(0)
    }
    pub fn has_cap(&self, cap: u32) -> bool {
        cap < 64 && self.cap_eff.is_some_and(|c| c & (1u64 << cap) != 0)
    }
    /// What perf_event_open counts as privileged: CAP_PERFMON, or CAP_SYS_ADMIN on
    /// kernels before 5.8.
    pub fn perf_privileged(&self) -> bool {
        self.has_cap(CAP_PERFMON) || self.has_cap(CAP_SYS_ADMIN)
    }
}

pub fn parse_status(text: &str) -> Privileges {
    let mut p = Privileges::default();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("Uid:") {
            // real, effective, saved, filesystem
            p.euid = rest.split_whitespace().nth(1).and_then(|v| v.parse().ok());
        } else if let Some(rest) = l.strip_prefix("CapEff:") {
            p.cap_eff = u64::from_str_radix(rest.trim(), 16).ok();
        }
    }
    p
}

/// The selected value of a sysfs multiple-choice file such as
/// `always [madvise] never`.
pub fn bracketed_choice(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

/// Meaning of a `kernel.perf_event_paranoid` value, in plain words.
pub fn paranoid_meaning(v: i32) -> &'static str {
    match v {
        i32::MIN..=-1 => "no restrictions for anyone",
        0 => "unprivileged users may profile user and kernel code, system-wide, but not raw tracepoint data",
        1 => "unprivileged users may profile user and kernel code of their own processes, not system-wide",
        2 => "unprivileged users may profile only user-space code of their own processes",
        _ => "unprivileged users may not use perf_event_open at all (distribution patch)",
    }
}

/// Meaning of a `kernel.kptr_restrict` value.
pub fn kptr_meaning(v: i32) -> &'static str {
    match v {
        0 => "kernel addresses are shown to everyone",
        1 => "kernel addresses are shown only to processes with CAP_SYSLOG",
        _ => "kernel addresses are hidden from everyone, root included",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_garbage_is_harmless() {
        let c = parse_cpuinfo("::::\n\nprocessor\nflags : a b\nmodel : zz\n");
        assert_eq!(c.logical_cpus, 0);
        assert!(c.model.is_none());
        let c = parse_cpuinfo("");
        assert_eq!(c, CpuInfo::default());
    }

    #[test]
    fn mounts_unescape() {
        let m = parse_mounts("none /mnt/huge\\040pages hugetlbfs rw,pagesize=2M 0 0\nbad\n");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].target, "/mnt/huge pages");
        assert_eq!(unescape_mount("a\\"), "a\\");
        assert_eq!(unescape_mount("a\\04"), "a\\04");
    }

    #[test]
    fn status_and_caps() {
        let p = parse_status("Name:\tx\nUid:\t1000\t0\t0\t0\nCapEff:\t0000004000000000\n");
        assert!(p.is_root());
        assert!(p.has_cap(CAP_PERFMON));
        assert!(!p.has_cap(CAP_SYS_ADMIN));
        assert!(!p.has_cap(200));
        assert_eq!(parse_status("junk"), Privileges::default());
    }

    #[test]
    fn choices_and_meanings() {
        assert_eq!(
            bracketed_choice("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed_choice("always madvise never"), None);
        assert_eq!(bracketed_choice("]["), None);
        assert!(paranoid_meaning(2).contains("user-space"));
        assert!(paranoid_meaning(4).contains("not use"));
        assert!(kptr_meaning(2).contains("hidden"));
    }

    #[test]
    fn meminfo() {
        let t = "HugePages_Total:      12\nHugepagesize:       2048 kB\n";
        assert_eq!(meminfo_field(t, "HugePages_Total"), Some(12));
        assert_eq!(meminfo_field(t, "Hugepagesize"), Some(2048));
        assert_eq!(meminfo_field(t, "Nope"), None);
    }
}
