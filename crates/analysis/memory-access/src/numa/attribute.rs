//! Per memory object: its pages by node (placement queries; pages touched after the last
//! query by their first touch's node, counted apart), who placed them (the fault that
//! placed each page: the first write fault, as a read of untouched anonymous memory maps
//! the shared zero page and places nothing; a page with no fault of its own is placed by
//! the first fault in its 2 MiB block, a transparent huge page), which nodes its accessing
//! threads ran on, and its sampled accesses that were remote.

use std::collections::{BTreeMap, HashMap};

use kairos_model::Profile;
use kairos_platform::numa::Topology;

use super::faults::{stack_text, Fault, Faults};
use super::placement::Placement;
use super::{HUGE, PAGE, UNKNOWN_NODE};
use crate::build::Built;
use crate::objects::ObjectMap;
use crate::{Bucket, Source};

/// Touchers kept per object, the busiest first.
const TOUCHERS_PER_OBJECT: usize = 5;
const STACK_DEPTH: usize = 6;

/// One object's NUMA figures. Node keys are node ids, [`UNKNOWN_NODE`] where the CPU's
/// node is not known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectNuma {
    pub object: u32,
    /// Present pages by node, as the placement queries last saw them.
    pub pages: BTreeMap<u32, u64>,
    /// Pages no query saw (touched after the last one), by their first touch's node.
    pub estimated: BTreeMap<u32, u64>,
    /// Pages (queried or estimated) by the node of the CPU whose fault placed them.
    pub first_touch: BTreeMap<u32, u64>,
    /// Pages placed without a fault of their own, by the first fault of their 2 MiB
    /// block (a transparent huge page: one fault per 2 MiB).
    pub huge_pages: u64,
    /// Queried pages with no recorded fault (placed before the recording started).
    pub untouched: u64,
    /// Sampled accesses by the node of the CPU that made them.
    pub samples: BTreeMap<u32, u64>,
    /// Samples whose CPU node and page node are both known, and of those the remote ones.
    pub with_node: u64,
    pub remote: u64,
    /// PMU samples, and those the data source says were served remotely.
    pub pmu: u64,
    pub pmu_remote: u64,
    /// Accessing threads by the node they ran on most while accessing it.
    pub threads: BTreeMap<u32, u64>,
    /// Of those, the threads that read it (a sampled load): the initialising thread that
    /// only wrote it is not among them.
    pub readers: BTreeMap<u32, u64>,
    pub loads: u64,
    pub stores: u64,
    /// Threads whose faults placed its pages.
    pub touching_threads: u64,
    /// The memory policy of its mapping (numa_maps), when read.
    pub policy: String,
    /// A heap object's allocation site as `path:line` (to name its variable), else empty.
    pub source: String,
}

impl ObjectNuma {
    pub fn total_pages(&self) -> u64 {
        self.pages.values().chain(self.estimated.values()).sum()
    }

    /// Pages by node, queried and estimated together.
    pub fn pages_by_node(&self) -> BTreeMap<u32, u64> {
        let mut m = self.pages.clone();
        for (n, c) in &self.estimated {
            *m.entry(*n).or_default() += c;
        }
        m
    }

    pub fn samples_total(&self) -> u64 {
        self.samples.values().sum()
    }
}

/// A thread that placed pages of an object, from one call stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toucher {
    pub object: u32,
    pub pid: u32,
    pub tid: u32,
    /// CPU and node of its first placing fault.
    pub cpu: u32,
    pub node: u32,
    pub pages: u64,
    pub first_ns: u64,
    pub function: String,
    pub stack: String,
}

/// Everything the `numa` report and the page show, besides what the manifest holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NumaData {
    /// By descending pages, then samples.
    pub objects: Vec<ObjectNuma>,
    pub touchers: Vec<Toucher>,
}

/// What the attribution reads.
pub struct Inputs<'a> {
    pub built: &'a Built,
    pub profile: &'a Profile,
    pub placement: Option<&'a Placement>,
    pub faults: &'a Faults,
    pub topology: Option<&'a Topology>,
    /// Heap allocation site (`file:line`, as objects are named) -> `path:line`.
    pub sources: &'a HashMap<String, String>,
}

#[derive(Default)]
struct Touch {
    fault: usize,
    /// Given to a queried page already (else the page is estimated from it).
    used: bool,
}

/// Which fault placed each page: per (object, pid, page) (an object's own touch), per
/// (pid, page) (a page shared by small objects), per (pid, 2 MiB block) (huge pages).
#[derive(Default)]
struct Placing {
    by_object: HashMap<(u32, u32, u64), Touch>,
    by_page: HashMap<(u32, u64), usize>,
    by_block: HashMap<(u32, u64), usize>,
    /// Distinct pages with a fault, per (pid, 2 MiB block).
    block_pages: HashMap<(u32, u64), u32>,
}

impl Placing {
    fn new(faults: &[Fault], map: &mut ObjectMap) -> Placing {
        let mut p = Placing::default();
        // The first write; a read before it mapped the zero page and placed nothing. Later
        // faults on a placed page (NUMA hinting, copy-on-write) do not move it.
        let better =
            |old: usize, new: &Fault| faults[old].write == Some(false) && new.write == Some(true);
        for (i, f) in faults.iter().enumerate() {
            let object = map.locate_addr(f.pid, f.tid, f.addr, f.time_ns).object;
            let page = f.addr & !(PAGE - 1);
            let t = p.by_object.entry((object, f.pid, page)).or_insert(Touch {
                fault: i,
                used: false,
            });
            if better(t.fault, f) {
                t.fault = i;
            }
            let block = f.addr & !(HUGE - 1);
            if !p.by_page.contains_key(&(f.pid, page)) {
                *p.block_pages.entry((f.pid, block)).or_default() += 1;
            }
            for slot in [
                p.by_page.entry((f.pid, page)).or_insert(i),
                p.by_block.entry((f.pid, block)).or_insert(i),
            ] {
                if better(*slot, f) {
                    *slot = i;
                }
            }
        }
        p
    }

    /// Pages a fault no query saw placed: a whole huge page when it is the only fault of
    /// its 2 MiB block, the block lies in one mapping and that mapping has transparent
    /// huge pages; else its own page.
    fn extent(&self, f: &Fault, placement: Option<&Placement>) -> u64 {
        let block = f.addr & !(HUGE - 1);
        let alone = self.block_pages.get(&(f.pid, block)) == Some(&1);
        let thp = placement
            .and_then(|p| vma_at(p, f.pid, f.addr))
            .is_some_and(|v| v.anon_huge_kb > 0 && v.start <= block && block + HUGE <= v.end);
        if alone && thp {
            HUGE / PAGE
        } else {
            1
        }
    }
}

pub fn attribute(inp: &Inputs<'_>, map: &mut ObjectMap) -> NumaData {
    let mut a = Attribution {
        inp,
        placing: Placing::new(&inp.faults.faults, map),
        tally: Tally::default(),
    };
    if let Some(p) = inp.placement {
        a.queried(p, map);
    }
    a.unqueried();
    let node_of = |cpu: u32| node_of_cpu(inp, cpu);
    samples(inp, &a.placing.by_object, &node_of, &mut a.tally.objs);
    finish(inp, map.objects(), a.tally.objs, a.tally.touchers)
}

/// The node of a CPU, [`UNKNOWN_NODE`] when the topology does not say.
fn node_of_cpu(inp: &Inputs<'_>, cpu: u32) -> u32 {
    inp.topology
        .and_then(|t| t.node_of_cpu(cpu))
        .unwrap_or(UNKNOWN_NODE)
}

/// The figures gathered per object, and the threads that placed its pages.
#[derive(Default)]
struct Tally {
    objs: HashMap<u32, ObjectNuma>,
    /// (object, pid, tid, stack) -> toucher
    touchers: HashMap<(u32, u32, u32, Option<u32>), Toucher>,
}

impl Tally {
    /// `pages` of object `o` placed by fault `f`: to its CPU's node and its thread's stack.
    fn credit(&mut self, inp: &Inputs<'_>, o: u32, f: &Fault, pages: u64) {
        let node = node_of_cpu(inp, f.cpu);
        *self
            .objs
            .entry(o)
            .or_default()
            .first_touch
            .entry(node)
            .or_default() += pages;
        let t = self
            .touchers
            .entry((o, f.pid, f.tid, f.stack))
            .or_insert_with(|| {
                let (function, stack) = stack_text(inp.profile, f.stack, STACK_DEPTH);
                Toucher {
                    object: o,
                    pid: f.pid,
                    tid: f.tid,
                    cpu: f.cpu,
                    node,
                    pages: 0,
                    first_ns: f.time_ns,
                    function,
                    stack,
                }
            });
        t.pages += pages;
    }
}

/// The pages of each object, by node and by the fault that placed them.
struct Attribution<'i, 'a> {
    inp: &'i Inputs<'a>,
    placing: Placing,
    tally: Tally,
}

impl Attribution<'_, '_> {
    /// The pages the placement queries saw, each counted for every object it holds.
    fn queried(&mut self, p: &Placement, map: &mut ObjectMap) {
        map.add_regions(
            p.vmas
                .values()
                .map(|v| crate::objects::Region {
                    pid: v.pid,
                    start: v.start,
                    end: v.end,
                    name: v.name.clone(),
                })
                .collect(),
        );
        // Beyond 16 GiB of mappings every k-th page was asked: each stands for k.
        let stride = p.stride.max(1);
        let mut owners = Vec::new();
        for (&pid, runs) in &p.runs {
            for r in runs.iter() {
                let mut page = r.start;
                while page < r.end {
                    map.owners(pid, page, page + PAGE, (r.first_ns, r.seen_ns), &mut owners);
                    for &o in &owners {
                        self.queried_page(p, o, (pid, page), (r.node, stride));
                    }
                    page += stride * PAGE;
                }
            }
        }
    }

    /// One queried page of object `o`, standing for `stride` pages: on its node, and
    /// credited to the fault that placed it (its own, its page's, or its huge page's).
    fn queried_page(
        &mut self,
        p: &Placement,
        o: u32,
        (pid, page): (u32, u64),
        (node, stride): (u32, u64),
    ) {
        let inp = self.inp;
        let placing = &mut self.placing;
        let e = self.tally.objs.entry(o).or_default();
        *e.pages.entry(node).or_default() += stride;
        if e.policy.is_empty() {
            e.policy = vma_at(p, pid, page)
                .map(|v| v.policy.clone())
                .unwrap_or_default();
        }
        let own = placing.by_object.get_mut(&(o, pid, page)).map(|t| {
            t.used = true;
            t.fault
        });
        let fault = own
            .or_else(|| placing.by_page.get(&(pid, page)).copied())
            .or_else(|| {
                // No fault of its own: the first of its 2 MiB block placed it, if the
                // mapping has transparent huge pages.
                let thp = vma_at(p, pid, page).is_some_and(|v| v.anon_huge_kb > 0);
                let f = placing
                    .by_block
                    .get(&(pid, page & !(HUGE - 1)))
                    .copied()
                    .filter(|_| thp);
                if f.is_some() {
                    e.huge_pages += stride;
                }
                f
            });
        match fault {
            Some(i) => self.tally.credit(inp, o, &inp.faults.faults[i], stride),
            None => e.untouched += stride,
        }
    }

    /// Touched after the last query (or never queried): placed where the toucher ran. A
    /// fault's time stamp is its entry, and a huge page takes a while to clear before it
    /// is mapped, so a query just after a fault may miss its page: only a page that two
    /// later queries did not see is taken as gone (freed); a read placed nothing if one
    /// did not.
    fn unqueried(&mut self) {
        let inp = self.inp;
        let faults = &inp.faults.faults;
        let starts: Vec<u64> = inp
            .placement
            .map(|p| p.snapshots.iter().map(|q| q.time_ns).collect())
            .unwrap_or_default();
        for (&(o, pid, page), t) in self.placing.by_object.iter().filter(|(_, t)| !t.used) {
            let f = &faults[t.fault];
            // A page inside what a query saw (a page between two asked ones): counted there.
            if inp.placement.is_some_and(|p| p.node(pid, page).is_some()) {
                continue;
            }
            let later = starts.len() - starts.partition_point(|&q| q <= f.time_ns);
            if later >= 2 || (later >= 1 && f.write == Some(false)) {
                continue;
            }
            let pages = self.placing.extent(f, inp.placement);
            let e = self.tally.objs.entry(o).or_default();
            *e.estimated.entry(node_of_cpu(inp, f.cpu)).or_default() += pages;
            e.huge_pages += pages - 1;
            self.tally.credit(inp, o, f, pages);
        }
    }
}

/// Sampled accesses: by CPU node, remote when the page is on another node, threads by node.
fn samples(
    inp: &Inputs<'_>,
    touch: &HashMap<(u32, u32, u64), Touch>,
    node_of: &dyn Fn(u32) -> u32,
    objs: &mut HashMap<u32, ObjectNuma>,
) {
    // (object, tid) -> (samples by CPU node, loads)
    let mut thread_nodes: HashMap<(u32, u32), (BTreeMap<u32, u64>, u64)> = HashMap::new();
    for (s, loc) in inp
        .built
        .samples
        .iter()
        .zip(&inp.built.locations)
        .filter(|(s, _)| s.source != Source::Watchpoint)
    {
        let o = objs.entry(loc.object).or_default();
        let cpu = node_of(s.cpu);
        *o.samples.entry(cpu).or_default() += 1;
        let t = thread_nodes.entry((loc.object, s.tid)).or_default();
        *t.0.entry(cpu).or_default() += 1;
        t.1 += u64::from(s.direction.reads());
        o.loads += u64::from(s.direction.reads());
        o.stores += u64::from(s.direction.writes());
        let page = inp
            .placement
            .and_then(|p| p.node(s.pid, s.addr))
            .or_else(|| {
                touch
                    .get(&(loc.object, s.pid, s.addr & !(PAGE - 1)))
                    .map(|t| node_of(inp.faults.faults[t.fault].cpu))
            });
        if let Some(page) = page.filter(|&n| n != UNKNOWN_NODE && cpu != UNKNOWN_NODE) {
            o.with_node += 1;
            o.remote += u64::from(page != cpu);
        }
        if s.source == Source::Pmu {
            o.pmu += 1;
            o.pmu_remote += u64::from(matches!(
                s.level,
                Some(Bucket::RemoteDram | Bucket::RemoteCache | Bucket::RemoteHitm)
            ));
        }
    }
    for ((object, _), (nodes, loads)) in thread_nodes {
        // The node it ran on most; ties go to the lower node id.
        if let Some((&n, _)) = nodes.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) {
            let o = objs.entry(object).or_default();
            *o.threads.entry(n).or_default() += 1;
            if loads > 0 {
                *o.readers.entry(n).or_default() += 1;
            }
        }
    }
}

fn finish(
    inp: &Inputs<'_>,
    objects: &[crate::objects::Object],
    objs: HashMap<u32, ObjectNuma>,
    touchers: HashMap<(u32, u32, u32, Option<u32>), Toucher>,
) -> NumaData {
    let mut objects: Vec<ObjectNuma> = objs
        .into_iter()
        .map(|(id, mut o)| {
            o.object = id;
            if let Some(obj) = objects
                .get(id as usize)
                .filter(|x| x.kind == crate::objects::ObjectKind::Heap)
            {
                let site = obj
                    .name
                    .rsplit_once(" (")
                    .map_or(obj.name.as_str(), |(s, _)| s);
                o.source = inp.sources.get(site).cloned().unwrap_or_default();
            }
            o
        })
        .collect();
    objects.sort_by(|a, b| {
        b.total_pages()
            .cmp(&a.total_pages())
            .then(b.samples_total().cmp(&a.samples_total()))
            .then(a.object.cmp(&b.object))
    });
    let mut by_object: BTreeMap<u32, Vec<Toucher>> = BTreeMap::new();
    for t in touchers.into_values() {
        by_object.entry(t.object).or_default().push(t);
    }
    for o in &mut objects {
        let mut tids: Vec<u32> = by_object
            .get(&o.object)
            .into_iter()
            .flatten()
            .map(|t| t.tid)
            .collect();
        tids.sort_unstable();
        tids.dedup();
        o.touching_threads = tids.len() as u64;
    }
    let mut out = Vec::new();
    for (_, mut v) in by_object {
        v.sort_by(|a, b| {
            b.pages
                .cmp(&a.pages)
                .then(a.first_ns.cmp(&b.first_ns))
                .then(a.tid.cmp(&b.tid))
        });
        out.extend(v.into_iter().take(TOUCHERS_PER_OBJECT));
    }
    NumaData {
        objects,
        touchers: out,
    }
}

/// The mapping holding `addr` of `pid`, as the queries last saw it.
fn vma_at(p: &Placement, pid: u32, addr: u64) -> Option<&super::query::Vma> {
    p.vmas
        .range(..=(pid, addr))
        .next_back()
        .filter(|(k, v)| k.0 == pid && addr < v.end)
        .map(|(_, v)| v)
}
