//! `kairos report topology -r DIR`: the platform snapshot of a result and the check of each
//! network, storage and accelerator device's NUMA node against where the target ran and
//! where its memory is. It applies to every result kind, so the CLI dispatches it before
//! the analysis of the result; see the README.

pub mod check;
pub mod page;
pub mod render;

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::{UInt32Array, UInt64Array};
use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_platform::Platform;
use kairos_report::Format;
use kairos_session as session;

pub use check::{check, Finding, ThreadUse, Usage, Verdict};

/// The report's name on the command line.
pub const REPORT: &str = "topology";

/// The memory-access NUMA table whose `pages` per `node` are the target's resident pages.
const NUMA_OBJECTS: &str = "numa_objects.parquet";
/// The profile's samples table, by its manifest name and its file.
const SAMPLES: &str = "samples";
const SAMPLES_FILE: &str = "samples.parquet";
/// `node` value of rows without a node.
const UNKNOWN_NODE: u32 = u32::MAX;

/// What the report prints, for the CLI, the page and tests.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Topology {
    pub platform: Platform,
    pub usage: Usage,
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
}

/// Reads a result's snapshot and measurements and checks them. Any result will do: one
/// without samples (io counts, it does not sample) is judged by what it has, the traced
/// device use and the resident pages, and says so.
pub fn analyse(result_dir: &Path) -> Result<Topology, Failure> {
    let mut notes = Vec::new();
    let dir = session::open_result(result_dir)?;
    let profile = if holds_samples(&dir) {
        match session::open(result_dir) {
            Ok((_, profile)) => Some(profile),
            Err(e) => {
                notes.push(format!("no samples to place: {e}"));
                None
            }
        }
    } else {
        notes.push("this result holds no samples (its analysis counts, it does not sample)".into());
        None
    };
    let threads = profile
        .as_ref()
        .map(|p| p.threads.as_slice())
        .unwrap_or_default();
    let samples = profile
        .as_ref()
        .map(|p| p.samples.as_slice())
        .unwrap_or_default();
    let mut t = analyse_with(
        result_dir,
        threads,
        samples.iter().map(|s| (s.cpu, s.thread)),
    )?;
    t.notes.extend(notes);
    Ok(t)
}

/// The same with the samples' (CPU, thread index into `threads`) already read (the page has
/// them loaded).
pub fn analyse_with(
    result_dir: &Path,
    threads: &[kairos_model::Thread],
    samples: impl Iterator<Item = (u32, u32)>,
) -> Result<Topology, Failure> {
    let notes: Vec<String> = Vec::new();
    let dir = session::open_result(result_dir)?;
    let platform = match Platform::load(result_dir) {
        Ok(Some(p)) => p,
        // Not this machine's layout: the result may come from anywhere.
        Ok(None) => Platform {
            source: "none".into(),
            sockets: Vec::new(),
            nodes: Vec::new(),
            devices: None,
            notes: vec!["this result kept no platform snapshot (imported from a file without NUMA_TOPOLOGY/CPU_TOPOLOGY, or made before snapshots): sockets, nodes and devices unknown".into()],
        },
        Err(e) => return Err(Failure::failed(format!("{e}; collect the result again"))),
    };
    let mut usage = Usage::default();
    for (cpu, thread) in samples {
        *usage.samples_by_cpu.entry(cpu).or_default() += 1;
        match platform.node_of_cpu(cpu) {
            Some(n) => {
                *usage.samples_by_node.entry(n).or_default() += 1;
                if let Some(t) = threads.get(thread as usize).filter(|t| t.tid > 0) {
                    let u = usage
                        .threads
                        .entry(t.tid as u32)
                        .or_insert_with(|| ThreadUse {
                            name: t.name.clone(),
                            ..ThreadUse::default()
                        });
                    *u.samples_by_node.entry(n).or_default() += 1;
                }
            }
            None => usage.samples_without_node += 1,
        }
    }
    usage.traffic = kairos_session::device_use::DeviceUse::load(result_dir)
        .filter(|u| u.unavailable.is_none())
        .map(|u| traffic(&platform, &u));
    usage.pages_by_node = pages_by_node(&dir.tables_path().join(NUMA_OBJECTS)).map_err(|e| {
        Failure::failed(format!(
            "result {} is damaged: {e}; collect it again",
            result_dir.display()
        ))
    })?;
    let findings = check(&platform, &usage);
    Ok(Topology {
        platform,
        usage,
        findings,
        notes,
    })
}

/// Whether the result keeps a sampled profile: its manifest lists the samples table (or,
/// in a result older than that list, the file is there).
fn holds_samples(dir: &kairos_result::ResultDir) -> bool {
    dir.manifest().table(SAMPLES).is_some() || dir.tables_path().join(SAMPLES_FILE).is_file()
}

/// The traced device use per device, by the node of each flow's CPU.
pub fn traffic(
    platform: &Platform,
    u: &kairos_session::device_use::DeviceUse,
) -> BTreeMap<String, check::Traffic> {
    let mut out: BTreeMap<String, check::Traffic> = BTreeMap::new();
    for f in &u.flows {
        let t = out.entry(f.device.clone()).or_default();
        t.read_bytes += f.read_bytes;
        t.write_bytes += f.write_bytes;
        let Some(node) = platform.node_of_cpu(f.cpu) else {
            continue;
        };
        let bytes = f.read_bytes + f.write_bytes;
        *t.bytes_by_node.entry(node).or_default() += bytes;
        let th = t.threads.entry(f.tid).or_insert_with(|| ThreadUse {
            name: f.comm.clone(),
            ..ThreadUse::default()
        });
        *th.samples_by_node.entry(node).or_default() += bytes;
    }
    out
}

/// Pages per node of the memory-access NUMA table; None when the result has none.
pub fn pages_by_node(path: &Path) -> Result<Option<BTreeMap<u32, u64>>, kairos_table::TableError> {
    if !path.is_file() {
        return Ok(None);
    }
    let mut by: BTreeMap<u32, u64> = BTreeMap::new();
    kairos_table::read(path, 1 << 16, |b| {
        let (node, pages) = (
            b.col::<UInt32Array>("node", false)?,
            b.col::<UInt64Array>("pages", false)?,
        );
        for i in 0..b.rows {
            if node.value(i) != UNKNOWN_NODE && pages.value(i) > 0 {
                *by.entry(node.value(i)).or_default() += pages.value(i);
            }
        }
        Ok(())
    })?;
    Ok(Some(by))
}

/// The report entry: `kairos report topology -r DIR [--format text|csv|json]`.
pub fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    if req.report != REPORT {
        return Err(Failure::usage(format!(
            "unknown report '{}'; this entry prints '{REPORT}'",
            req.report
        )));
    }
    let format = session::report_format(req)?;
    let t = analyse(&req.result_dir)?;
    let mut out = ReportOutput::new(render::render(
        &t.platform,
        &t.usage,
        &t.findings,
        &t.notes,
        format,
    ));
    if format == Format::Text {
        if let Ok(dir) = session::open_result(&req.result_dir) {
            out.push(&session::notes_text(&dir));
        }
    }
    Ok(out)
}

/// `kairos info`'s line: what `report topology` will know on this machine (it needs
/// sysfs only).
pub fn info_line() -> String {
    let p = kairos_platform::Platform::read(&kairos_platform::SystemRoot::live());
    let devices = p.devices.as_deref().unwrap_or_default();
    let checked = devices.iter().filter(|d| check::checked_kind(d)).count();
    let unknown = devices
        .iter()
        .filter(|d| check::checked_kind(d) && d.node.is_none())
        .count();
    format!(
        "topology (report topology, any result): needs sysfs only; {} socket(s), {} NUMA node(s), {checked} network/storage/accelerator device(s), {unknown} without a node",
        p.sockets.len(),
        p.nodes.len()
    )
}
