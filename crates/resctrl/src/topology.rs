//! Which cache instance (resctrl domain id) each CPU uses: resctrl numbers the domains
//! of L2/L3 by the cache `id` in /sys/devices/system/cpu/cpuN/cache/indexK.

use std::collections::BTreeMap;
use std::path::Path;

/// CPU -> cache id, per cache level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheTopology {
    pub by_level: BTreeMap<u8, BTreeMap<u32, u32>>,
}

impl CacheTopology {
    /// Reads `cpu_root` (normally /sys/devices/system/cpu); empty when it has no cache
    /// directories (some VMs, copies of trees without it).
    pub fn read(cpu_root: &Path) -> CacheTopology {
        let mut t = CacheTopology::default();
        let Ok(rd) = std::fs::read_dir(cpu_root) else {
            return t;
        };
        for e in rd.filter_map(Result::ok) {
            let name = e.file_name();
            let Some(cpu) = name
                .to_str()
                .and_then(|n| n.strip_prefix("cpu"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(idx) = std::fs::read_dir(e.path().join("cache")) else {
                continue;
            };
            for i in idx.filter_map(Result::ok) {
                let p = i.path();
                let rd = |f: &str| {
                    std::fs::read_to_string(p.join(f))
                        .ok()
                        .map(|s| s.trim().to_string())
                };
                if rd("type").as_deref() == Some("Instruction") {
                    continue;
                }
                if let (Some(level), Some(id)) = (
                    rd("level").and_then(|s| s.parse::<u8>().ok()),
                    rd("id").and_then(|s| s.parse::<u32>().ok()),
                ) {
                    t.by_level.entry(level).or_default().insert(cpu, id);
                }
            }
        }
        t
    }
    pub fn is_empty(&self) -> bool {
        self.by_level.is_empty()
    }
    pub fn domain_of(&self, level: u8, cpu: u32) -> Option<u32> {
        self.by_level.get(&level)?.get(&cpu).copied()
    }
    /// CPUs of cache `id` at `level`, sorted.
    pub fn cpus_of(&self, level: u8, id: u32) -> Vec<u32> {
        self.by_level
            .get(&level)
            .map(|m| {
                m.iter()
                    .filter(|(_, d)| **d == id)
                    .map(|(c, _)| *c)
                    .collect()
            })
            .unwrap_or_default()
    }
}
