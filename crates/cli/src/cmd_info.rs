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
            for line in any_result_lines() {
                println!("\n{}", line.1);
            }
            println!("\n{}", kairos_agent::info());
            println!("{}", kairos_fleet::info());
        }
        "json" => {
            let mut v = caps.to_json_value();
            let list: Vec<serde_json::Value> = ready
                .iter()
                .map(|r| serde_json::json!({ "analysis": r.analysis, "can_run": r.can_run, "missing": r.missing, "using": r.using, "without": r.without }))
                .collect();
            if let Some(o) = v.as_object_mut() {
                o.insert("analyses".into(), serde_json::Value::Array(list));
                for (name, line) in any_result_lines() {
                    o.insert(name.into(), serde_json::Value::String(line));
                }
                o.insert(
                    "agent".into(),
                    serde_json::Value::String(kairos_agent::info()),
                );
                o.insert(
                    "fleet".into(),
                    serde_json::Value::String(kairos_fleet::info()),
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

/// What each report of any result (the registry's) will know on this machine.
fn any_result_lines() -> Vec<(&'static str, String)> {
    kairos_analysis_registry::ANY_RESULT
        .iter()
        .filter_map(|r| Some((r.spec.name, (r.info?)())))
        .collect()
}
