//! Cache availability: per domain, which ways each group may fill and whether it fills
//! them alone or shares them (with other groups, or with I/O through the shareable
//! bits); per CPU, which group's masks its default-group tasks use.

use serde::Serialize;

use crate::mask::{self, Cbm};
use crate::topology::CacheTopology;
use crate::{Error, Tree};

/// The name used for I/O agents (DDIO etc.) filling the shareable ways.
pub const IO: &str = "I/O";

/// One group's ways in one domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupUse {
    pub group: String,
    pub mode: Option<String>,
    pub mask: Cbm,
    /// Ways no other group and no I/O agent fills.
    pub exclusive: Cbm,
    /// Who else fills some of this group's ways, [`IO`] included.
    pub shared_with: Vec<String>,
}

/// One domain (cache instance) of a resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DomainUse {
    pub resource: String,
    pub domain: u32,
    pub width: u32,
    pub way_bytes: Option<u64>,
    /// Ways hardware or I/O also fills: shareable_bits plus H/X marks of bit_usage.
    pub io: Cbm,
    pub groups: Vec<GroupUse>,
}

impl DomainUse {
    pub fn group(&self, name: &str) -> Option<&GroupUse> {
        self.groups.iter().find(|g| g.group == name)
    }
}

/// Ways marked as filled by hardware in a bit_usage string (highest way first).
pub fn hw_bits(usage: &str) -> Cbm {
    let n = usage.chars().count() as u32;
    usage
        .chars()
        .enumerate()
        .filter(|(_, c)| matches!(c, 'H' | 'X'))
        .fold(0, |m, (i, _)| m | 1u64 << (n - 1 - i as u32))
}

/// Every cache resource and domain of `tree`.
pub fn domains(tree: &Tree) -> Result<Vec<DomainUse>, Error> {
    let mut out = Vec::new();
    for res in &tree.caps.caches {
        for d in tree.domains(&res.name) {
            let usage = res
                .bit_usage
                .iter()
                .find(|(id, _)| *id == d)
                .map(|(_, u)| hw_bits(u))
                .unwrap_or(0);
            let io = (res.shareable_bits | usage) & res.cbm_mask;
            let mut masks = Vec::new();
            for g in &tree.groups {
                if let Some(m) = g.cbm(&res.name, d)? {
                    masks.push((g.label().to_string(), g.mode.clone(), m));
                }
            }
            let groups = masks
                .iter()
                .map(|(name, mode, m)| {
                    let mut others: Cbm = 0;
                    let mut shared_with: Vec<String> = Vec::new();
                    for (n2, _, m2) in &masks {
                        if n2 != name {
                            others |= m2;
                            if m2 & m != 0 {
                                shared_with.push(n2.clone());
                            }
                        }
                    }
                    if io & m != 0 {
                        shared_with.push(IO.to_string());
                    }
                    GroupUse {
                        group: name.clone(),
                        mode: mode.clone(),
                        mask: *m,
                        exclusive: m & !others & !io,
                        shared_with,
                    }
                })
                .collect();
            out.push(DomainUse {
                resource: res.name.clone(),
                domain: d,
                width: res.ways(),
                way_bytes: tree.way_bytes(&res.name, d),
                io,
                groups,
            });
        }
    }
    Ok(out)
}

/// CPUs whose default-group tasks fill the same ways: a resource, a domain and a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuRow {
    pub cpus: Vec<u32>,
    pub resource: String,
    pub domain: u32,
    pub group: String,
    pub mask: Cbm,
    pub exclusive: Cbm,
    pub shared_with: Vec<String>,
}

/// Per CPU, by way of the topology (None when it does not cover the tree's CPUs).
pub fn per_cpu(tree: &Tree, topo: &CacheTopology, uses: &[DomainUse]) -> Option<Vec<CpuRow>> {
    let mut rows: Vec<CpuRow> = Vec::new();
    for u in uses {
        let level = u.resource.get(1..2).and_then(|c| c.parse::<u8>().ok())?;
        for cpu in topo.cpus_of(level, u.domain) {
            // A CPU belongs to the one group whose cpus list has it, else the default.
            let owner = tree
                .groups
                .iter()
                .skip(1)
                .find(|g| g.cpus.contains(&cpu))
                .map_or("default", |g| g.label());
            let Some(g) = u.group(owner) else { continue };
            match rows
                .iter_mut()
                .find(|r| r.resource == u.resource && r.domain == u.domain && r.group == owner)
            {
                Some(r) => r.cpus.push(cpu),
                None => rows.push(CpuRow {
                    cpus: vec![cpu],
                    resource: u.resource.clone(),
                    domain: u.domain,
                    group: owner.to_string(),
                    mask: g.mask,
                    exclusive: g.exclusive,
                    shared_with: g.shared_with.clone(),
                }),
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| (a.cpus.first(), &a.resource).cmp(&(b.cpus.first(), &b.resource)));
    Some(rows)
}

/// `4 of 20 ways (0-3)`.
pub fn describe(m: Cbm, width: u32) -> String {
    if m == 0 {
        return format!("0 of {width} ways");
    }
    format!("{} of {width} ways ({})", mask::ways(m), mask::way_list(m))
}
