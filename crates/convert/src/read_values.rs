//! Samples that carry counter values (PERF_SAMPLE_READ, e.g. `perf record -e
//! '{cycles,instructions}:S'`): as perf does, each value becomes a sample of its own
//! event, weighted by how much that counter advanced since the previous sample of the
//! same counter instance (id); a counter that did not advance gives no sample.

use rustc_hash::FxHashMap as HashMap;

use kairos_perf_data::{PerfFile, Sample};

pub(crate) struct ReadDeltas {
    attr_of_id: HashMap<u64, usize>,
    last: HashMap<u64, u64>,
}

/// What one sample stands for under PERF_SAMPLE_READ.
pub(crate) enum Split {
    /// No counter values with ids: the sample counts as itself.
    Plain,
    /// (attr index, weight) per counter that advanced; ids of no event counted apart.
    Values {
        values: Vec<(usize, u64)>,
        unknown: u64,
    },
}

impl ReadDeltas {
    pub(crate) fn new(file: &PerfFile) -> Self {
        let mut attr_of_id = HashMap::default();
        for (i, a) in file.attrs().iter().enumerate() {
            for &id in &a.ids {
                attr_of_id.entry(id).or_insert(i);
            }
        }
        ReadDeltas {
            attr_of_id,
            last: HashMap::default(),
        }
    }

    pub(crate) fn split(&mut self, s: &Sample<'_>) -> Split {
        let Some(read) = s
            .read
            .as_ref()
            .filter(|r| r.values.iter().any(|v| v.id.is_some()))
        else {
            return Split::Plain;
        };
        let mut values = Vec::with_capacity(read.values.len());
        let mut unknown = 0;
        for v in &read.values {
            let Some(id) = v.id else { continue };
            let Some(&attr) = self.attr_of_id.get(&id) else {
                unknown += 1;
                continue;
            };
            let before = self.last.insert(id, v.value).unwrap_or(0);
            let delta = v.value.saturating_sub(before);
            if delta > 0 {
                values.push((attr, delta));
            }
        }
        Split::Values { values, unknown }
    }
}
