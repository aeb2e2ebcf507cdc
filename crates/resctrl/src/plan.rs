//! The allocation planner: N exclusive, contiguous ways for a new group in every domain of
//! a cache level, checked against the hardware's rules (cbm_mask, min_cbm_bits,
//! contiguity unless sparse_masks), the ways I/O fills, the other groups' masks and the
//! CLOS count. The default group may be shrunk from one end; other groups are never
//! touched. When no placement exists the refusal says why and what would fit.

use serde::Serialize;

use crate::avail::hw_bits;
use crate::info::CacheResource;
use crate::mask::{self, Cbm};
use crate::{Error, Tree};

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// L2, L3, or one half of a CDP pair (L3CODE, L3DATA, L2CODE, L2DATA).
    pub level: String,
    pub ways: u32,
    /// Pseudo-lock instead of allocating: one domain only.
    pub lock_domain: Option<u32>,
    pub group: String,
}

/// The masks of one domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DomainPlan {
    pub domain: u32,
    /// The new group's ways.
    pub mask: Cbm,
    /// Default-group masks that must shrink first: (resource, old, new).
    pub shrink: Vec<(String, Cbm, Cbm)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub group: String,
    /// Schemata resources written: `[L3]`, or `[L3CODE, L3DATA]` under CDP.
    pub resources: Vec<String>,
    pub width: u32,
    pub cbm_mask: Cbm,
    pub ways: u32,
    pub lock: bool,
    pub domains: Vec<DomainPlan>,
}

/// The schemata resources a level names, or why it is not available.
fn resources<'a>(tree: &'a Tree, level: &str) -> Result<Vec<&'a CacheResource>, Error> {
    let caps = &tree.caps;
    let have: Vec<&str> = caps.caches.iter().map(|c| c.name.as_str()).collect();
    let have_txt = if have.is_empty() {
        "no cache allocation at all (info/ lists no L2 or L3)".to_string()
    } else {
        format!("cache allocation for {}", have.join(", "))
    };
    let (lvl, half) = match level {
        "L2" => (2, None),
        "L3" => (3, None),
        "L2CODE" | "L2DATA" => (2, Some(level)),
        "L3CODE" | "L3DATA" => (3, Some(level)),
        other => return Err(Error::Refused(format!("--level '{other}' is not a cache level; give L2 or L3 (or L3CODE/L3DATA, L2CODE/L2DATA with CDP)"))),
    };
    let at_level = caps.level(lvl);
    if at_level.is_empty() {
        return Err(Error::Refused(format!("this machine's resctrl offers {have_txt}, not L{lvl}: allocate at another level with --level")));
    }
    match half {
        None => Ok(at_level),
        Some(h) => match at_level.iter().find(|c| c.name == h) {
            Some(c) => Ok(vec![*c]),
            None => {
                let opt = if lvl == 3 { "cdp" } else { "cdpl2" };
                Err(Error::Refused(format!(
                    "{h} needs code/data prioritisation, but resctrl is mounted without the {opt} option; as root: \
                     umount {root} && mount -t resctrl -o {opt} resctrl {root} (this drops every group), or ask for L{lvl}",
                    root = tree.root.display()
                )))
            }
        },
    }
}

/// Plans `req` on `tree`.
pub fn plan(tree: &Tree, req: &Request) -> Result<Plan, Error> {
    let res = resources(tree, &req.level)?;
    let first = res[0];
    let (width, min) = (first.ways(), first.min_cbm_bits);
    let name = res
        .iter()
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join("/");
    if req.ways == 0 {
        return Err(Error::Refused("--cache-ways must be at least 1".into()));
    }
    if req.ways > width {
        return Err(Error::Refused(format!(
            "{name} has {width} ways per cache (cbm_mask {:x}); {} do not fit",
            first.cbm_mask, req.ways
        )));
    }
    if req.ways < min {
        return Err(Error::Refused(format!("{name} needs at least {min} ways in a mask (info/{}/min_cbm_bits); ask for {min} or more", first.name)));
    }
    if tree.group(&req.group).is_some() {
        return Err(Error::Refused(format!(
            "a group named {} exists already; remove it or pick another name",
            req.group
        )));
    }
    if let Some(limit) = tree.caps.closid_limit() {
        if tree.groups.len() as u32 >= limit {
            let names: Vec<&str> = tree.groups.iter().map(|g| g.label()).collect();
            return Err(Error::Refused(format!(
                "all {limit} classes of service (CLOS) are in use by the groups {}: a new group cannot be made; remove one (rmdir {}/NAME) and try again",
                names.join(", "),
                tree.root.display()
            )));
        }
    }
    if req.lock_domain.is_some() && tree.cdp_mounted {
        return Err(Error::Refused("pseudo-locking is not possible while resctrl is mounted with CDP (the kernel refuses it); remount without cdp".into()));
    }
    let doms: Vec<u32> = match req.lock_domain {
        Some(d) if tree.domains(&first.name).contains(&d) => vec![d],
        Some(d) => {
            return Err(Error::Refused(format!(
                "{name} has no domain {d}; its domains are {}",
                mask::format_list(&tree.domains(&first.name))
            )))
        }
        None => tree.domains(&first.name),
    };
    if doms.is_empty() {
        return Err(Error::Refused(format!(
            "the default group's schemata has no {} line",
            first.name
        )));
    }
    let mut domains = Vec::new();
    for d in doms {
        domains.push(plan_domain(tree, &res, d, req.ways)?);
    }
    Ok(Plan {
        group: req.group.clone(),
        resources: res.iter().map(|r| r.name.clone()).collect(),
        width,
        cbm_mask: first.cbm_mask,
        ways: req.ways,
        lock: req.lock_domain.is_some(),
        domains,
    })
}

fn plan_domain(tree: &Tree, res: &[&CacheResource], d: u32, n: u32) -> Result<DomainPlan, Error> {
    let u = DomainUsage::read(tree, res, d)?;
    // Prefer ways nobody uses; else shrink the default group.
    let free = (0..=u.width - n)
        .map(|low| mask::run(low, n))
        .find(|&w| w & (u.others() | u.io) == 0 && u.defaults.iter().all(|(_, dm)| dm & w == 0));
    if let Some(w) = free.or_else(|| u.fits(n)) {
        let shrink = u
            .defaults
            .iter()
            .filter(|(_, dm)| dm & w != 0)
            .map(|(r, dm)| (r.clone(), *dm, dm & !w))
            .collect();
        return Ok(DomainPlan {
            domain: d,
            mask: w,
            shrink,
        });
    }
    Err(u.refusal(res, d, n))
}

/// Who uses the ways of one domain of the resources planned.
struct DomainUsage {
    /// Ways, minimum ways in a mask and whether masks may have holes (the first resource's).
    width: u32,
    min: u32,
    sparse: bool,
    /// Ways I/O or hardware fills too (shareable_bits, bit_usage).
    io: Cbm,
    /// The ways of each other group.
    taken: Vec<(String, Cbm)>,
    locked: Cbm,
    /// The default group's mask for each resource.
    defaults: Vec<(String, Cbm)>,
}

impl DomainUsage {
    fn read(tree: &Tree, res: &[&CacheResource], d: u32) -> Result<DomainUsage, Error> {
        let r0 = res[0];
        let mut io: Cbm = 0;
        let mut taken: Vec<(String, Cbm)> = Vec::new();
        let mut locked: Cbm = 0;
        for r in res {
            io |= r.shareable_bits;
            if let Some((_, u)) = r.bit_usage.iter().find(|(id, _)| *id == d) {
                io |= hw_bits(u);
                let cnt = u.chars().count() as u32;
                locked |= u
                    .chars()
                    .enumerate()
                    .filter(|(_, c)| *c == 'P')
                    .fold(0, |m, (i, _)| m | 1u64 << (cnt - 1 - i as u32));
            }
            for g in tree.groups.iter().skip(1) {
                if let Some(m) = g.cbm(&r.name, d)? {
                    match taken.iter_mut().find(|(n, _)| n == g.label()) {
                        Some(t) => t.1 |= m,
                        None => taken.push((g.label().to_string(), m)),
                    }
                }
            }
        }
        io &= r0.cbm_mask;
        let defaults: Vec<(String, Cbm)> = res
            .iter()
            .map(|r| {
                Ok((
                    r.name.clone(),
                    tree.default_group().cbm(&r.name, d)?.unwrap_or(r.cbm_mask),
                ))
            })
            .collect::<Result<_, Error>>()?;
        Ok(DomainUsage {
            width: r0.ways(),
            min: r0.min_cbm_bits,
            sparse: r0.sparse_masks,
            io,
            taken,
            locked,
            defaults,
        })
    }

    /// The ways other groups hold or the kernel has locked.
    fn others(&self) -> Cbm {
        self.taken.iter().fold(self.locked, |a, (_, m)| a | m)
    }

    /// The lowest run of `k` ways free of others and I/O whose taking leaves the default
    /// group a valid mask.
    fn fits(&self, k: u32) -> Option<Cbm> {
        let default_ok =
            |m: Cbm| mask::ways(m) >= self.min.max(1) && (self.sparse || mask::is_contiguous(m));
        let others = self.others();
        (0..=self.width.saturating_sub(k))
            .map(|low| mask::run(low, k))
            .find(|&w| {
                w & (others | self.io) == 0
                    && self
                        .defaults
                        .iter()
                        .all(|(_, dm)| dm & w == 0 || default_ok(dm & !w))
            })
    }

    /// Refused: say what is in the way and what would fit.
    fn refusal(&self, res: &[&CacheResource], d: u32, n: u32) -> Error {
        let (width, min, sparse) = (self.width, self.min, self.sparse);
        let best = (1..n).rev().find(|&k| k >= min && self.fits(k).is_some());
        let mut parts = Vec::new();
        if self.io != 0 {
            parts.push(format!("ways {} are filled by I/O or hardware as well (shareable_bits/bit_usage), so never exclusive", mask::way_list(self.io)));
        }
        // Groups with the same mask in one clause: "ways 0-19 belong to groups A, B".
        let mut by_mask: Vec<(Cbm, Vec<&str>)> = Vec::new();
        for (g, m) in &self.taken {
            match by_mask.iter_mut().find(|(x, _)| x == m) {
                Some((_, v)) => v.push(g),
                None => by_mask.push((*m, vec![g])),
            }
        }
        for (m, gs) in by_mask.iter().filter(|(m, _)| *m != 0) {
            let who = if gs.len() == 1 {
                format!("group {}", gs[0])
            } else {
                format!("groups {}", gs.join(", "))
            };
            parts.push(format!("ways {} belong to {who}", mask::way_list(*m)));
        }
        if self.locked != 0 {
            parts.push(format!(
                "ways {} are pseudo-locked",
                mask::way_list(self.locked)
            ));
        }
        let keep = min.max(1);
        parts.push(format!(
            "the default group must keep at least {keep}{} way{}",
            if sparse { "" } else { " contiguous" },
            if keep == 1 { "" } else { "s" }
        ));
        let fit = match best {
            Some(k) => format!("at most {k} would fit"),
            None => "none would fit".to_string(),
        };
        Error::Refused(format!(
            "{n} exclusive ways do not fit in {} domain {d} ({width} ways): {}; {fit}",
            res.iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join("/"),
            parts.join("; ")
        ))
    }
}
