//! Sums per memory object and per (function, object): the rows of the `memory-objects` and
//! `memory-functions` reports.

use std::collections::{BTreeSet, HashMap};

use crate::objects::Location;
use crate::{AccessSample, Source, BUCKETS};

/// What was sampled on one object (or one function's use of one object).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub samples: u64,
    pub weight: u64,
    pub loads: u64,
    pub stores: u64,
    pub threads: BTreeSet<u32>,
    /// PMU samples only: their count, summed latency (cycles), count per [`BUCKETS`], HITM.
    pub pmu_samples: u64,
    pub latency: u64,
    pub levels: [u64; 10],
    pub hitm: u64,
}

impl Totals {
    fn add(&mut self, s: &AccessSample) {
        self.samples += 1;
        self.weight += s.weight;
        self.loads += u64::from(s.direction.reads());
        self.stores += u64::from(s.direction.writes());
        self.threads.insert(s.tid);
        if s.source == Source::Pmu {
            self.pmu_samples += 1;
            self.latency += s.weight;
            let level = s.level.unwrap_or(crate::Bucket::Other);
            if let Some(i) = BUCKETS.iter().position(|&l| l == level) {
                self.levels[i] += 1;
            }
            self.hitm += u64::from(s.hitm);
        }
    }

    /// Average latency in cycles of the PMU samples.
    pub fn average_latency(&self) -> Option<f64> {
        (self.pmu_samples > 0).then(|| self.latency as f64 / self.pmu_samples as f64)
    }
}

/// Per object, by descending weight (ties: object index).
pub fn by_object<'a>(
    accesses: impl IntoIterator<Item = (&'a AccessSample, Location)>,
) -> Vec<(u32, Totals)> {
    let mut map: HashMap<u32, Totals> = HashMap::new();
    for (s, loc) in accesses {
        map.entry(loc.object).or_default().add(s);
    }
    sorted(map)
}

/// Per (function, object), by descending weight.
pub fn by_function<'a>(
    accesses: impl IntoIterator<Item = (&'a AccessSample, Location)>,
) -> Vec<((u32, u32), Totals)> {
    let mut map: HashMap<(u32, u32), Totals> = HashMap::new();
    for (s, loc) in accesses {
        map.entry((s.function, loc.object)).or_default().add(s);
    }
    sorted(map)
}

fn sorted<K: Ord + Copy>(map: HashMap<K, Totals>) -> Vec<(K, Totals)> {
    let mut v: Vec<(K, Totals)> = map.into_iter().collect();
    v.sort_by(|a, b| b.1.weight.cmp(&a.1.weight).then(a.0.cmp(&b.0)));
    v
}
