//! From the converter's data accesses (one path for live and imported recordings) to
//! attributed samples: each gets its thread, function, weight, direction and, with a PMU,
//! its level; then the object that held its address at that moment.

use std::collections::HashMap;

use kairos_convert::{AccessSource, DataAccess};
use kairos_mem_source::{classify, Access as MemOp, Bucket, DataSrc};
use kairos_model::Profile;

use crate::objects::{HeapBlock, Location, Object, ObjectMap, Region, StaticVar};
use crate::{AccessSample, Direction, Source};

const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

/// Attributed samples, in time order, with the names they refer to.
#[derive(Debug, Default)]
pub struct Built {
    pub samples: Vec<AccessSample>,
    /// One per sample.
    pub locations: Vec<Location>,
    pub objects: Vec<Object>,
    /// Indexed by `AccessSample::function`.
    pub functions: Vec<String>,
    /// PMU samples that were neither loads nor stores (prefetch, instruction fetch).
    pub skipped: u64,
}

pub fn build(profile: &Profile, accesses: &[DataAccess], heap: Vec<HeapBlock>) -> Built {
    build_with_hits(profile, accesses, heap, &[])
}

/// As [`build`], plus watchpoint hits as samples of weight 1 after the others. A hit's
/// function is that of a sampled access at the same IP (no symbolizer runs here).
pub fn build_with_hits(
    profile: &Profile,
    accesses: &[DataAccess],
    heap: Vec<HeapBlock>,
    hits: &[kairos_collector::watch::Hit],
) -> Built {
    build_full(profile, accesses, heap, hits).0
}

/// As [`build_with_hits`], also returning the object map, which the NUMA attribution
/// goes on using for pages and page faults (it may intern more objects: take them from
/// [`ObjectMap::objects`] afterwards).
pub fn build_full(
    profile: &Profile,
    accesses: &[DataAccess],
    heap: Vec<HeapBlock>,
    hits: &[kairos_collector::watch::Hit],
) -> (Built, ObjectMap) {
    let mut seen = Seen::default();
    let mut samples = Vec::with_capacity(accesses.len());
    let mut skipped = 0;
    for a in accesses {
        let thread = profile.threads.get(a.thread as usize);
        let pid = thread.map_or(0, |t| t.pid.max(0) as u32);
        let tid = thread.map_or(0, |t| t.tid.max(0) as u32);
        let name = a
            .stack
            .and_then(|s| profile.stacks.get(s as usize))
            .and_then(|s| profile.frames.get(s.frame as usize))
            .map_or("[unknown]", |f| f.function.as_str());
        let function = seen.function(name);
        seen.places(a, pid);
        let Some(k) = kind(a) else {
            skipped += 1;
            continue;
        };
        samples.push(AccessSample {
            time_ns: a.time_ns,
            pid,
            tid,
            ip: a.ip,
            function,
            addr: a.addr,
            size: a.size,
            direction: k.direction,
            weight: k.weight,
            source: k.source,
            sp: a.sp,
            level: k.level,
            hitm: k.hitm,
            cpu: a.cpu,
            phys_addr: a.phys_addr.filter(|&p| p != 0),
        });
    }
    if !hits.is_empty() {
        let by_ip: HashMap<u64, u32> = samples.iter().map(|s| (s.ip, s.function)).collect();
        for h in hits {
            let function = match by_ip.get(&h.ip) {
                Some(&f) => f,
                None => seen.function("[unknown]"),
            };
            samples.push(crate::watch_table::sample(h, function));
        }
    }
    let mut map = ObjectMap::new(
        heap,
        seen.statics.into_values().collect(),
        seen.regions.into_values().collect(),
    );
    let locations = samples.iter().map(|s| map.locate(s)).collect();
    (
        Built {
            samples,
            locations,
            objects: map.objects().to_vec(),
            functions: seen.functions,
            skipped,
        },
        map,
    )
}

/// The functions, static variables and mapped regions the accesses name.
#[derive(Default)]
struct Seen {
    functions: Vec<String>,
    function_ids: HashMap<String, u32>,
    statics: HashMap<(u32, u64), StaticVar>,
    regions: HashMap<(u32, u64, u64), Region>,
}

impl Seen {
    /// The id of a function name, given on first sight.
    fn function(&mut self, name: &str) -> u32 {
        let functions = &mut self.functions;
        *self
            .function_ids
            .entry(name.to_string())
            .or_insert_with(|| {
                functions.push(name.to_string());
                (functions.len() - 1) as u32
            })
    }

    /// The static variable and the mapping the access's address lies in.
    fn places(&mut self, a: &DataAccess, pid: u32) {
        if let Some(v) = &a.static_var {
            self.statics
                .entry((pid, v.start))
                .or_insert_with(|| StaticVar {
                    pid,
                    addr: v.start,
                    size: v.size,
                    name: v.name.clone(),
                });
        }
        let m = &a.mapping;
        // The upper half of the x86-64 (and arm64) address space is the kernel's.
        let name = if m.name == "[unmapped]" && a.addr >= KERNEL_HALF {
            "[kernel]".to_string()
        } else {
            m.name.clone()
        };
        let (start, end) = if name == "[kernel]" {
            (KERNEL_HALF, u64::MAX)
        } else {
            (m.start, m.end)
        };
        self.regions
            .entry((pid, start, end))
            .or_insert_with(|| Region {
                pid,
                start,
                end,
                name,
            });
    }
}

/// What kind of access a sample is, and what it weighs.
struct Kind {
    direction: Direction,
    weight: u64,
    source: Source,
    level: Option<Bucket>,
    hitm: bool,
}

/// The access's kind; None for a PMU sample that is neither a load nor a store
/// (prefetch, instruction fetch).
fn kind(a: &DataAccess) -> Option<Kind> {
    let plain = |source| Kind {
        direction: a.direction.unwrap_or(Direction::Load),
        weight: a.period,
        source,
        level: None,
        hitm: false,
    };
    Some(match a.source {
        AccessSource::Registers => plain(Source::Registers),
        AccessSource::Event => plain(Source::Event),
        AccessSource::Pmu => {
            let class = classify(&DataSrc::from_raw(a.data_src.unwrap_or(0)));
            let direction = match class.access {
                MemOp::Load => Direction::Load,
                MemOp::Store => Direction::Store,
                // Samples of a loads-only event (ldlat) often carry no op: they are loads.
                MemOp::Unknown => Direction::Load,
                MemOp::Prefetch | MemOp::Exec => return None,
            };
            let bucket = class.bucket();
            Kind {
                direction,
                weight: a.latency.unwrap_or(0),
                source: Source::Pmu,
                level: Some(bucket),
                hitm: matches!(bucket, Bucket::LocalHitm | Bucket::RemoteHitm),
            }
        }
    })
}
