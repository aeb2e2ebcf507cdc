//! The end of a memory-access collection (or of an import that holds data addresses):
//! the recording goes through the one converter, heap blocks come from the allocation
//! tracker's files, every access gets its object, and the tables and summary are written.

use std::collections::HashMap;
use std::path::Path;

use kairos_analysis_api::Failure;
use kairos_collector::{CollectError, CollectSummary, TargetExit};
use kairos_result::{ResultDir, TableInfo};
use kairos_session::{self as session, Conversion};
use serde_json::json;

use crate::blocks::heap_blocks;
use crate::lines::{lines, Verdict};
use crate::objects::HeapBlock;
use crate::tables::{parse_source, source_key};
use crate::{build, reports, tables, AccessData, Source};

use crate::manifest_key::EXTRA;

/// Stores the chosen source in the manifest before recording starts.
pub(crate) fn remember_source(dir: &mut ResultDir, source: Source, reason: &str) {
    dir.manifest_mut().extra.insert(
        EXTRA.into(),
        json!({ "source": source_key(source), "reason": reason }),
    );
}

/// Stores one more fact of the collection in the manifest (after `remember_source`).
pub(crate) fn remember(dir: &mut ResultDir, key: &str, value: String) {
    if let Some(extra) = dir.manifest_mut().extra.get_mut(EXTRA) {
        extra[key] = json!(value);
    }
}

pub(crate) fn finish(
    dir: &mut ResultDir,
    summary: Result<CollectSummary, CollectError>,
    quiet: bool,
    watched: Option<crate::watch::Outcome>,
    numa: crate::numa::collect::Numa,
) -> Result<(), Failure> {
    // First, so that the placement thread stops whatever happens next.
    let numa = numa.finish(summary.as_ref().ok());
    let (summary, kallsyms) = session::finish_collection(dir, summary)?;
    for p in &summary.pmu_events {
        dir.manifest_mut()
            .notes
            .extend(p.notes.iter().map(|n| format!("{}: {n}", p.name)));
    }
    let refused = summary.pmu_events.iter().find_map(|p| p.refused.clone());
    if let Some(extra) = dir.manifest_mut().extra.get_mut(EXTRA) {
        // The collection's own reason (no perfmon files, ...) stands; else the kernel's.
        if extra["memory_bound"].is_null() {
            extra["memory_bound"] = json!(match refused {
                Some(why) =>
                    format!("not measured: the memory-bound counters were refused ({why})"),
                None => memory_bound_status(),
            });
        }
    }
    session::save(dir)?;
    session::warn_write_error(&summary.stopped_by);
    let c = session::convert_result_full(
        dir,
        &session::convert_options(kallsyms),
        &Default::default(),
        quiet,
        &mut |_, _| {},
    )?;
    let heap = read_heap(dir);
    // After the conversion, which lists the tables it writes.
    let hits = match watched {
        Some(w) => record_watch(dir, w)?,
        None => Vec::new(),
    };
    complete(
        dir,
        &c,
        heap,
        &hits,
        numa,
        (summary.start_monotonic_ns, summary.end_monotonic_ns),
    )?;
    if let Some(TargetExit::Signal(sig)) = summary.target_exit {
        eprintln!(
            "kairos: the target was killed by signal {sig}; the result covers it up to that point"
        );
    }
    Ok(())
}

/// `kairos import` of a memory recording, as [`crate::claim::claim`] decided (`perf mem
/// record`, load latency, IBS, SPE, faults with `-d`, or cpu-clock with `--user-regs` and
/// no stack copy): the result becomes a memory-access result, which keeps the sampled
/// profile's reports. Only the claimed events' accesses are attributed.
pub fn finish_import(
    dir: &mut ResultDir,
    c: &mut Conversion,
    header: &kairos_perf_data::Features,
    claim: &crate::claim::Claim,
) -> Result<(), Failure> {
    claim.keep_own(&mut c.data_accesses);
    let (source, reason) = (claim.source, claim.reason);
    let m = dir.manifest_mut();
    m.kind = Some(crate::SPEC.name.into());
    m.notes.push("heap blocks are named by their mapping: an imported recording has no allocation tracker files".into());
    remember_source(dir, source, reason);
    let numa = crate::numa::imported::recorded(header, &c.data_accesses, &c.profile);
    let span = (
        c.profile.samples.first().map_or(0, |s| s.time_ns),
        c.profile.samples.last().map_or(0, |s| s.time_ns),
    );
    complete(dir, c, Heap::default(), &[], numa, span)
}

/// The watchpoint hits' table and the manifest's record of the watching; returns the hits.
fn record_watch(
    dir: &mut ResultDir,
    w: crate::watch::Outcome,
) -> Result<Vec<kairos_collector::watch::Hit>, Failure> {
    let (name, file, rows, bytes) = crate::watch_table::write(&dir.tables_path(), &w.hits)
        .map_err(|e| Failure::failed(format!("cannot write the watchpoint hits table: {e}; check free disk space and permissions")))?;
    let m = dir.manifest_mut();
    m.tables.push(TableInfo {
        name,
        file,
        rows,
        bytes,
    });
    m.notes.extend(w.notes.iter().cloned());
    if let Some(extra) = m.extra.get_mut(EXTRA) {
        extra["watch"] = w.to_json();
    }
    Ok(w.hits)
}

/// Heap blocks from the tracker, and each allocation site's source (`path:line`) by the
/// `file:line` objects are named with.
#[derive(Default)]
struct Heap {
    blocks: Vec<HeapBlock>,
    sources: HashMap<String, String>,
}

/// Attribution, tables, manifest and the printed summary, for collect and import alike.
fn complete(
    dir: &mut ResultDir,
    c: &Conversion,
    heap: Heap,
    hits: &[kairos_collector::watch::Hit],
    numa: crate::numa::Recorded,
    span: (u64, u64),
) -> Result<(), Failure> {
    crate::tma_collect::record(dir, &c.profile);
    let (mut built, mut map) = build::build_full(&c.profile, &c.data_accesses, heap.blocks, hits);
    let faults = crate::numa::faults::read(&dir.path().join(session::PERF_DATA), c);
    let (numa_data, numa_summary) = crate::numa::analyse(
        &numa,
        &faults,
        &built,
        &mut map,
        &c.profile,
        &heap.sources,
        span.0,
        span.1,
    );
    // Pages of mappings no sample touched became objects too.
    built.objects = map.objects().to_vec();
    let cannot = |e: kairos_table::TableError| {
        Failure::failed(format!(
            "cannot write the memory-access tables: {e}; check free disk space and permissions"
        ))
    };
    let mut written = tables::write(&dir.tables_path(), &built).map_err(cannot)?;
    written.extend(crate::numa::table::write(&dir.tables_path(), &numa_data).map_err(cannot)?);
    let m = dir.manifest_mut();
    m.tables.extend(
        written
            .into_iter()
            .map(|(name, file, rows, bytes)| TableInfo {
                name,
                file,
                rows,
                bytes,
            }),
    );
    for n in &numa_summary.notes {
        if !m.notes.contains(n) {
            m.notes.push(n.clone());
        }
    }
    if faults.recording_faults > 0 {
        m.notes.push(format!("first touch leaves out {} page faults taken while kairos read a sample's call stack (the recording's own, not the program's)", faults.recording_faults));
    }
    let mut extra = m.extra.get(EXTRA).cloned().unwrap_or_else(|| json!({}));
    extra[crate::numa::KEY] = serde_json::to_value(&numa_summary).unwrap_or_default();
    extra["unresolved"] = json!(c.unresolved_accesses);
    extra["skipped"] = json!(built.skipped);
    let all = lines(built.samples.iter().zip(built.locations.iter().copied()));
    let count = |v: Verdict| all.iter().filter(|l| l.verdict == v).count();
    extra["false_sharing_lines"] = json!(count(Verdict::FalseSharing));
    extra["true_sharing_lines"] = json!(count(Verdict::TrueSharing));
    if !hits.is_empty() {
        extra["confirmed_false_sharing_lines"] = json!(all
            .iter()
            .filter(|l| l.confirmed == Some(Verdict::FalseSharing))
            .count());
        extra["confirmed_true_sharing_lines"] = json!(all
            .iter()
            .filter(|l| l.confirmed == Some(Verdict::TrueSharing))
            .count());
    }
    m.extra.insert(EXTRA.into(), extra);
    session::save(dir)?;
    let data = load(dir, built);
    print!("{}", reports::summary(&data, &meta(dir), 5).to_text());
    session::print_notes(dir);
    println!(
        "\nResult: {}  (see `kairos report cache-lines -r {}`)",
        dir.path().display(),
        dir.path().display()
    );
    Ok(())
}

/// The result's description for the summary, with the watching's line when there was one.
pub(crate) fn meta(dir: &ResultDir) -> Vec<(String, String)> {
    let mut m = session::meta(dir);
    m.extend(crate::watch::meta(dir));
    m
}

/// Why the memory-bound share (TMA) is not in this result.
fn memory_bound_status() -> String {
    match kairos_mem_source::tma::availability(
        Path::new(kairos_mem_source::choice::DEVICES),
        crate::cpu::this_cpu().as_ref(),
    ) {
        Err(r) => format!("unavailable: {}", r.reason),
        Ok(()) => {
            "not measured: this collection records memory samples, not the TMA counters".into()
        }
    }
}

/// Heap blocks from the tracker's files in the result, if it ran; a note says why not.
fn read_heap(dir: &mut ResultDir) -> Heap {
    let raw = dir.path().join(kairos_analysis_memory_consumption::RAW_DIR);
    if !raw.is_dir() {
        return Heap::default();
    }
    match kairos_analysis_memory_consumption::decode::read_dir(&raw) {
        Ok(trace) if !trace.processes.is_empty() => {
            let origin = trace.processes.iter().map(|p| p.inst).min().unwrap_or(0);
            let data = kairos_analysis_memory_consumption::build::build(&trace);
            dir.manifest_mut().notes.extend(data.notes.iter().cloned());
            let sources = data
                .sites
                .iter()
                .filter(|s| !s.file.is_empty() && s.line > 0)
                .map(|s| (s.location(), format!("{}:{}", s.file, s.line)))
                .collect();
            Heap {
                blocks: heap_blocks(&data.rows, &data.sites, origin),
                sources,
            }
        }
        Ok(_) => {
            dir.manifest_mut().notes.push(
                "the allocation tracker wrote nothing (a static, setuid or LD_PRELOAD-clearing program): heap addresses are named by their mapping".into(),
            );
            Heap::default()
        }
        Err(e) => {
            dir.manifest_mut().notes.push(format!("the allocation tracker's files are unreadable ({e}): heap addresses are named by their mapping"));
            Heap::default()
        }
    }
}

/// A result's data for the reports and the page: tables plus what the manifest remembers.
pub fn load(dir: &ResultDir, built: build::Built) -> AccessData {
    let extra = dir.manifest().extra.get(EXTRA).cloned().unwrap_or_default();
    let numa = load_numa(dir, &extra, built.objects.len());
    AccessData {
        built,
        unresolved: serde_json::from_value(extra["unresolved"].clone()).unwrap_or_default(),
        source: extra["source"]
            .as_str()
            .and_then(parse_source)
            .unwrap_or(Source::Registers),
        source_reason: extra["reason"].as_str().unwrap_or("").to_string(),
        memory_bound: extra["memory_bound"].as_str().map(str::to_string),
        numa,
    }
}

/// The NUMA side of a result: the manifest's summary and the `numa_*` tables. Results
/// written before them have none; damaged tables leave the summary with a note.
fn load_numa(
    dir: &ResultDir,
    extra: &serde_json::Value,
    objects: usize,
) -> Option<crate::numa::report::Numa> {
    let mut summary: crate::numa::Summary =
        serde_json::from_value(extra.get(crate::numa::KEY)?.clone()).ok()?;
    let data = match crate::numa::table::read(&dir.tables_path(), objects) {
        Ok(d) => d,
        Err(e) => {
            summary.notes.push(format!(
                "the NUMA tables are unreadable ({e}): collect the result again"
            ));
            Default::default()
        }
    };
    Some(crate::numa::report::Numa { summary, data })
}

/// Reads a result's tables back.
pub(crate) fn open(path: &Path) -> Result<(ResultDir, AccessData), Failure> {
    let dir = session::open_result(path)?;
    let built = tables::read(&dir.tables_path()).map_err(|e| {
        Failure::failed(format!(
            "result {} is damaged: {e}; collect it again",
            path.display()
        ))
    })?;
    let data = load(&dir, built);
    Ok((dir, data))
}
