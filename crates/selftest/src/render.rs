//! The report as text (one line per capability: name, verdict, then what was compared
//! and the figures, or why it is not available) and as JSON.

use serde_json::json;

use crate::verdict::{Line, Verdict};
use crate::Report;

/// Width of the name column: the longest check name.
const NAME_WIDTH: usize = 17;
/// Width of the verdict column: "not available".
const VERDICT_WIDTH: usize = 13;

/// One capability's line of text.
pub fn text_line(l: &Line) -> String {
    let body = match l.verdict {
        Verdict::NotAvailable => l.summary.clone(),
        _ if l.figures.is_empty() => format!("{} (against {})", l.summary, l.against),
        _ => format!(
            "{} (against {}; {})",
            l.figures_text(),
            l.against,
            l.summary
        ),
    };
    format!(
        "{:<NAME_WIDTH$} {:<VERDICT_WIDTH$} {body}",
        l.name,
        l.verdict.text()
    )
}

/// The whole report as text, with a closing sentence.
pub fn text(r: &Report) -> String {
    let mut out: String = r.lines.iter().map(|l| text_line(l) + "\n").collect();
    out.push_str(&closing(r));
    out.push('\n');
    out
}

/// "2 agree, 0 disagree, 9 not available here (12.3 s); results removed".
pub fn closing(r: &Report) -> String {
    let n = |v: Verdict| r.lines.iter().filter(|l| l.verdict == v).count();
    let kept = match &r.kept {
        Some(p) => format!("results kept in {}", p.display()),
        None => "results removed (keep them with --keep DIR)".into(),
    };
    format!(
        "{} agree, {} disagree, {} not available here ({:.1} s); {kept}",
        n(Verdict::Agrees),
        n(Verdict::Disagrees),
        n(Verdict::NotAvailable),
        r.seconds
    )
}

/// The report as a JSON value.
pub fn json(r: &Report) -> serde_json::Value {
    let lines: Vec<serde_json::Value> = r
        .lines
        .iter()
        .map(|l| {
            let figures: Vec<serde_json::Value> = l
                .figures
                .iter()
                .map(|f| {
                    json!({
                        "what": f.what,
                        "unit": f.unit,
                        "kairos": f.kairos,
                        "reference": f.reference,
                        "difference": f.difference(),
                        "allowed": f.allowed(),
                        "agrees": f.agrees(),
                    })
                })
                .collect();
            let mut v = json!({
                "capability": l.name,
                "verdict": l.verdict.key(),
                "summary": l.summary,
                "figures": figures,
            });
            if l.verdict == Verdict::NotAvailable {
                v["reason"] = json!(l.summary);
            } else {
                v["against"] = json!(l.against);
            }
            v
        })
        .collect();
    json!({
        "lines": lines,
        "disagreements": r.disagreements(),
        "seconds": r.seconds,
        "kept": r.kept,
        "perf": r.perf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Figure, Tolerance, Unit};

    /// Made-up lines of a machine with a PMU, for the formatting only.
    fn report() -> Report {
        let fig = |what: &str, k: f64, p: f64| {
            Figure::new(
                what,
                Unit::Percent,
                Some(k),
                Some(p),
                Tolerance::Absolute(2.0),
            )
        };
        Report {
            lines: vec![
                Line::judged(
                    "cpu-clock",
                    "perf record -e cpu-clock -g of the same run",
                    "self and total shares",
                    vec![fig("F2 self", 29.5, 29.9), fig("p3_C self", 28.2, 28.9)],
                ),
                Line::judged(
                    "lbr",
                    "perf record -j any_call,any_ret,u",
                    "records per sample",
                    vec![Figure::new(
                        "records per sample",
                        Unit::Entries,
                        Some(16.0),
                        Some(32.0),
                        Tolerance::Relative {
                            fraction: 0.1,
                            floor: 1.0,
                        },
                    )],
                ),
                Line::not_available("resctrl", "kairos: the kernel was built without resctrl"),
                Line::disagrees(
                    "pebs-ibs",
                    "perf mem record",
                    "kairos collect memory-access failed: no such event",
                ),
            ],
            seconds: 12.34,
            kept: None,
            perf: Some("perf version 6.1.187".into()),
        }
    }

    #[test]
    fn one_line_per_capability_with_verdict_and_figures() {
        let t = text(&report());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5, "{t}");
        assert_eq!(
            lines[0],
            "cpu-clock         agrees        F2 self 29.5% vs 29.9%; p3_C self 28.2% vs 28.9% (against perf record -e cpu-clock -g of the same run; self and total shares)"
        );
        assert!(lines[1].starts_with("lbr               DISAGREES     records per sample 16.0 vs 32.0 (apart by 16.0, allowed 3.2)"), "{}", lines[1]);
        assert_eq!(
            lines[2],
            "resctrl           not available kairos: the kernel was built without resctrl"
        );
        assert_eq!(lines[3], "pebs-ibs          DISAGREES     kairos collect memory-access failed: no such event (against perf mem record)");
        assert_eq!(lines[4], "1 agree, 2 disagree, 1 not available here (12.3 s); results removed (keep them with --keep DIR)");
    }

    #[test]
    fn json_keeps_every_figure_and_the_verdicts() {
        let v = json(&report());
        assert_eq!(v["disagreements"], 2);
        assert_eq!(v["lines"][0]["verdict"], "agrees");
        assert_eq!(v["lines"][0]["figures"][1]["reference"], 28.9);
        assert_eq!(v["lines"][1]["figures"][0]["agrees"], false);
        assert_eq!(v["lines"][1]["figures"][0]["unit"], "Entries");
        assert_eq!(v["lines"][2]["verdict"], "not available");
        assert_eq!(
            v["lines"][2]["reason"],
            "kairos: the kernel was built without resctrl"
        );
        assert_eq!(v["lines"][3]["against"], "perf mem record");
    }
}
