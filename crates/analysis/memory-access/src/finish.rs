//! The end of a memory-access collection (or of an import that holds data addresses):
//! the recording goes through the one converter, heap blocks come from the allocation
//! tracker's files, every access gets its object, and the tables and summary are written.

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

/// The manifest entry holding what the tables do not: source, reason, unresolved counts.
const EXTRA: &str = "memory_access";

/// Stores the chosen source in the manifest before recording starts.
pub(crate) fn remember_source(dir: &mut ResultDir, source: Source, reason: &str) {
    dir.manifest_mut().extra.insert(EXTRA.into(), json!({ "source": source_key(source), "reason": reason }));
}

pub(crate) fn finish(
    dir: &mut ResultDir,
    summary: Result<CollectSummary, CollectError>,
    quiet: bool,
    watched: Option<crate::watch::Outcome>,
) -> Result<(), Failure> {
    let (summary, kallsyms) = session::finish_collection(dir, summary)?;
    for p in &summary.pmu_events {
        dir.manifest_mut().notes.extend(p.notes.iter().map(|n| format!("{}: {n}", p.name)));
    }
    let bound = memory_bound_status();
    if let Some(extra) = dir.manifest_mut().extra.get_mut(EXTRA) {
        extra["memory_bound"] = json!(bound);
    }
    session::save(dir)?;
    session::warn_write_error(&summary.stopped_by);
    let c = session::convert_result_full(dir, &session::convert_options(kallsyms), &Default::default(), quiet)?;
    let heap = read_heap(dir);
    // After the conversion, which lists the tables it writes.
    let hits = match watched {
        Some(w) => record_watch(dir, w)?,
        None => Vec::new(),
    };
    complete(dir, &c, heap, &hits)?;
    if let Some(TargetExit::Signal(sig)) = summary.target_exit {
        eprintln!("kairos: the target was killed by signal {sig}; the result covers it up to that point");
    }
    Ok(())
}

/// `kairos import` of a recording with data addresses (`perf mem record`, or cpu-clock
/// with `--user-regs` and no stack copy): the result becomes a memory-access result.
pub fn finish_import(dir: &mut ResultDir, c: &Conversion) -> Result<(), Failure> {
    let pmu = c.data_accesses.iter().any(|a| a.source == kairos_convert::AccessSource::Pmu);
    let (source, reason) = if pmu {
        (Source::Pmu, "imported: the recording's samples carry data addresses and sources (PEBS or IBS)")
    } else {
        (Source::Registers, "imported: timer samples with user registers and no stack copy, decoded as address samples")
    };
    let m = dir.manifest_mut();
    m.kind = Some(crate::SPEC.name.into());
    m.notes.push("heap blocks are named by their mapping: an imported recording has no allocation tracker files".into());
    remember_source(dir, source, reason);
    complete(dir, c, Vec::new(), &[])
}

/// The watchpoint hits' table and the manifest's record of the watching; returns the hits.
fn record_watch(dir: &mut ResultDir, w: crate::watch::Outcome) -> Result<Vec<kairos_collector::watch::Hit>, Failure> {
    let (name, file, rows, bytes) = crate::watch_table::write(&dir.tables_path(), &w.hits)
        .map_err(|e| Failure::failed(format!("cannot write the watchpoint hits table: {e}; check free disk space and permissions")))?;
    let m = dir.manifest_mut();
    m.tables.push(TableInfo { name, file, rows, bytes });
    m.notes.extend(w.notes.iter().cloned());
    if let Some(extra) = m.extra.get_mut(EXTRA) {
        extra["watch"] = w.to_json();
    }
    Ok(w.hits)
}

/// Attribution, tables, manifest and the printed summary, for collect and import alike.
fn complete(dir: &mut ResultDir, c: &Conversion, heap: Vec<HeapBlock>, hits: &[kairos_collector::watch::Hit]) -> Result<(), Failure> {
    let built = build::build_with_hits(&c.profile, &c.data_accesses, heap, hits);
    let written = tables::write(&dir.tables_path(), &built)
        .map_err(|e| Failure::failed(format!("cannot write the memory-access tables: {e}; check free disk space and permissions")))?;
    let m = dir.manifest_mut();
    m.tables.extend(written.into_iter().map(|(name, file, rows, bytes)| TableInfo { name, file, rows, bytes }));
    let mut extra = m.extra.get(EXTRA).cloned().unwrap_or_else(|| json!({}));
    extra["unresolved"] = json!(c.unresolved_accesses);
    extra["skipped"] = json!(built.skipped);
    let all = lines(built.samples.iter().zip(built.locations.iter().copied()));
    let count = |v: Verdict| all.iter().filter(|l| l.verdict == v).count();
    extra["false_sharing_lines"] = json!(count(Verdict::FalseSharing));
    extra["true_sharing_lines"] = json!(count(Verdict::TrueSharing));
    if !hits.is_empty() {
        extra["confirmed_false_sharing_lines"] = json!(all.iter().filter(|l| l.confirmed == Some(Verdict::FalseSharing)).count());
        extra["confirmed_true_sharing_lines"] = json!(all.iter().filter(|l| l.confirmed == Some(Verdict::TrueSharing)).count());
    }
    m.extra.insert(EXTRA.into(), extra);
    session::save(dir)?;
    let data = load(dir, built);
    print!("{}", reports::summary(&data, &meta(dir), 5).to_text());
    session::print_notes(dir);
    println!("\nResult: {}  (see `kairos report cache-lines -r {}`)", dir.path().display(), dir.path().display());
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
    match kairos_mem_source::tma::availability(Path::new(kairos_mem_source::choice::DEVICES), crate::collect::this_cpu().as_ref()) {
        Err(r) => format!("unavailable: {}", r.reason),
        Ok(()) => "not measured: this collection records memory samples, not the TMA counters".into(),
    }
}

/// Heap blocks from the tracker's files in the result, if it ran; a note says why not.
fn read_heap(dir: &mut ResultDir) -> Vec<HeapBlock> {
    let raw = dir.path().join(kairos_analysis_memory::RAW_DIR);
    if !raw.is_dir() {
        return Vec::new();
    }
    match kairos_analysis_memory::decode::read_dir(&raw) {
        Ok(trace) if !trace.processes.is_empty() => {
            let origin = trace.processes.iter().map(|p| p.inst).min().unwrap_or(0);
            let data = kairos_analysis_memory::build::build(&trace);
            dir.manifest_mut().notes.extend(data.notes.iter().cloned());
            heap_blocks(&data.rows, &data.sites, origin)
        }
        Ok(_) => {
            dir.manifest_mut().notes.push(
                "the allocation tracker wrote nothing (a static, setuid or LD_PRELOAD-clearing program): heap addresses are named by their mapping".into(),
            );
            Vec::new()
        }
        Err(e) => {
            dir.manifest_mut().notes.push(format!("the allocation tracker's files are unreadable ({e}): heap addresses are named by their mapping"));
            Vec::new()
        }
    }
}

/// A result's data for the reports and the page: tables plus what the manifest remembers.
pub fn load(dir: &ResultDir, built: build::Built) -> AccessData {
    let extra = dir.manifest().extra.get(EXTRA).cloned().unwrap_or_default();
    AccessData {
        built,
        unresolved: serde_json::from_value(extra["unresolved"].clone()).unwrap_or_default(),
        source: extra["source"].as_str().and_then(parse_source).unwrap_or(Source::Registers),
        source_reason: extra["reason"].as_str().unwrap_or("").to_string(),
        memory_bound: extra["memory_bound"].as_str().map(str::to_string),
    }
}

/// Reads a result's tables back.
pub(crate) fn open(path: &Path) -> Result<(ResultDir, AccessData), Failure> {
    let dir = session::open_result(path)?;
    let built = tables::read(&dir.tables_path())
        .map_err(|e| Failure::failed(format!("result {} is damaged: {e}; collect it again", path.display())))?;
    let data = load(&dir, built);
    Ok((dir, data))
}
