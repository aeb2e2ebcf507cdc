//! `kairos info`: what this machine can measure, and why not where it cannot; then each
//! analysis of the registry with what it needs here.

use crate::args::InfoArgs;
use crate::error::{CliResult, UserError};

pub fn run(args: InfoArgs) -> CliResult {
    let mut caps = kairos_platform::detect();
    // The bandwidth timeline's sources (uncore IMC or resctrl MBM) are kairos-bandwidth's to judge.
    caps.items.push(kairos_bandwidth::record::capability(
        &kairos_bandwidth::record::Places::default(),
    ));
    let ready = kairos_analysis_registry::readiness(&|name| caps.is_available(name));
    match args.format.as_str() {
        "text" => {
            print!("{}", caps.render_text());
            print!("\n{}", analyses_text(&ready));
            println!("\n{}", topology_line());
        }
        "json" => {
            let mut v = caps.to_json_value();
            let list: Vec<serde_json::Value> = ready
                .iter()
                .map(|r| serde_json::json!({ "analysis": r.analysis, "can_run": r.can_run, "missing": r.missing, "using": r.using, "without": r.without }))
                .collect();
            if let Some(o) = v.as_object_mut() {
                o.insert("analyses".into(), serde_json::Value::Array(list));
                o.insert(
                    "topology".into(),
                    serde_json::Value::String(topology_line()),
                );
            }
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        other => {
            return Err(UserError::usage(format!(
                "unknown format '{other}' for info; use text or json"
            )))
        }
    }
    Ok(())
}

/// One line per analysis: can it run here, what it lacks, what it uses and does without.
fn analyses_text(ready: &[kairos_analysis_registry::Readiness]) -> String {
    let w = ready
        .iter()
        .map(|r| r.analysis.len())
        .max()
        .unwrap_or(8)
        .max("analysis".len());
    let mut out = format!(
        "{:<w$}  {:<7} needs and uses\n{:<w$}  {:<7} --------------\n",
        "analysis",
        "runs",
        "-".repeat(w),
        "-------"
    );
    for r in ready {
        let mut parts = Vec::new();
        if !r.missing.is_empty() {
            parts.push(format!("missing: {}", r.missing.join(", ")));
        }
        if !r.using.is_empty() {
            parts.push(format!("uses: {}", r.using.join(", ")));
        }
        if !r.without.is_empty() {
            parts.push(format!("does without: {}", r.without.join(", ")));
        }
        let runs = if r.can_run { "yes" } else { "no" };
        out.push_str(&format!(
            "{:<w$}  {:<7} {}\n",
            r.analysis,
            runs,
            parts.join("; ")
        ));
    }
    out
}

/// What `report topology` will know on this machine: it needs sysfs only.
fn topology_line() -> String {
    let p = kairos_platform::Platform::read(&kairos_platform::SystemRoot::live());
    let devices = p.devices.as_deref().unwrap_or_default();
    let checked = devices
        .iter()
        .filter(|d| kairos_analysis_topology::check::checked_kind(d))
        .count();
    let unknown = devices
        .iter()
        .filter(|d| kairos_analysis_topology::check::checked_kind(d) && d.node.is_none())
        .count();
    format!(
        "topology (report topology, any result): needs sysfs only; {} socket(s), {} NUMA node(s), {checked} network/storage/accelerator device(s), {unknown} without a node",
        p.sockets.len(),
        p.nodes.len()
    )
}
