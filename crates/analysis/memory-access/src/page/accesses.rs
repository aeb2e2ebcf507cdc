//! The memory-access data of a result, for `api/memory`: its tables read once, on first
//! use, and summed as the memory-access reports sum them (`totals::by_object` for objects,
//! `lines::lines` for cache lines), plus each top object's sample times, sorted, so that a
//! time series of any range and width costs a few binary searches.

use std::collections::BTreeMap;

use crate::lines::{lines, Line, Verdict};
use crate::objects::Object;
use crate::tables;
use crate::totals::{by_object, Totals};
use crate::Source;
use std::sync::Arc;

use kairos_result::ResultDir;
use kairos_view_engine::{Data, Error};

/// Whether the result has sampled memory accesses.
pub(crate) fn has_memory(d: &Data) -> bool {
    d.dir.manifest().table(tables::ACCESSES).is_some()
}

/// The memory accesses of a memory-access result, read once; later requests wait for the
/// first read rather than repeat it.
pub(crate) fn memory(d: &Data) -> Result<Arc<Memory>, Error> {
    if !has_memory(d) {
        let kind = d.dir.manifest().kind.as_deref().unwrap_or("unknown");
        return Err(Error::NotFound(format!(
            "this {kind} result has no sampled memory accesses; collect them with `kairos collect memory-access -r DIR -- PROGRAM`"
        )));
    }
    d.extension(Memory::read).map_err(Error::NotFound)
}

/// Objects that get a time series: the page draws one line per object, so a few.
pub const SERIES_OBJECTS: usize = 8;

pub struct Memory {
    pub source: Source,
    pub source_reason: String,
    /// Why the memory-bound share is missing, when it is.
    pub memory_bound: Option<String>,
    /// Samples without a data address, by reason.
    pub unresolved: BTreeMap<String, u64>,
    /// Samples with a data address, as the summary report counts them: watchpoint hits
    /// are not samples and are counted apart, in `watch_hits`.
    pub samples: u64,
    pub watch_hits: u64,
    pub objects: Vec<Object>,
    /// Every object that was sampled, by descending weight.
    pub totals: Vec<(u32, Totals)>,
    pub weight_total: u64,
    /// Every line: those used by more than one thread first, each group by samples.
    pub lines: Vec<Line>,
    pub functions: Vec<String>,
    /// (object, its samples' absolute times, ascending) for the top objects.
    pub times: Vec<(u32, Vec<u64>)>,
    /// The NUMA side (placement, first touch, remote share), when the result has it.
    pub numa: Option<crate::numa::report::Numa>,
}

impl Memory {
    /// Reads the tables of `dir`; the error is a sentence for the page.
    pub fn read(dir: &ResultDir) -> Result<Memory, String> {
        let built = tables::read(&dir.tables_path()).map_err(|e| {
            format!(
                "the memory-access tables of {} are damaged: {e}; collect the result again",
                dir.path().display()
            )
        })?;
        let data = crate::load(dir, built);
        let (samples, watch_hits) = (data.sampled(), data.watch_hits());
        let totals = by_object(data.located());
        let weight_total = totals
            .iter()
            .fold(0u64, |a, (_, t)| a.saturating_add(t.weight));
        let mut all = lines(data.located());
        // As the cache-lines report orders them: lines shared by threads are the story.
        all.sort_by_key(|l| (l.threads.len() < 2, std::cmp::Reverse(l.samples), l.addr));
        let top: Vec<u32> = totals
            .iter()
            .take(SERIES_OBJECTS)
            .map(|(o, _)| *o)
            .collect();
        let mut times: Vec<(u32, Vec<u64>)> = top.iter().map(|&o| (o, Vec::new())).collect();
        for (s, loc) in data.located() {
            if let Some((_, t)) = times.iter_mut().find(|(o, _)| *o == loc.object) {
                t.push(s.time_ns);
            }
        }
        for (_, t) in &mut times {
            t.sort_unstable();
        }
        let b = data.built;
        Ok(Memory {
            source: data.source,
            source_reason: data.source_reason,
            memory_bound: data.memory_bound,
            unresolved: data.unresolved,
            samples,
            watch_hits,
            objects: b.objects,
            totals,
            weight_total,
            lines: all,
            functions: b.functions,
            times,
            numa: data.numa,
        })
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.lines.iter().filter(|l| l.verdict == v).count()
    }

    /// What sample weights are: CPU time, latency, watchpoint hits or event counts.
    pub fn weight_unit(&self) -> &'static str {
        match self.source {
            Source::Registers => "ns",
            Source::Pmu => "cycles",
            Source::Watchpoint => "hits",
            Source::Event => "events",
        }
    }

    pub fn object_kind(&self, o: u32) -> crate::objects::ObjectKind {
        self.objects
            .get(o as usize)
            .map_or(crate::objects::ObjectKind::Unknown, |x| x.kind)
    }

    pub fn object_name(&self, o: u32) -> &str {
        self.objects
            .get(o as usize)
            .map_or("[unknown]", |x| x.name.as_str())
    }
}
