//! Kairos's own figures of a result, which every kind of result may have: run time,
//! kernel-time share, page faults (the target's rusage), the memory-bandwidth timeline,
//! samples, and the huge pages `kairos run` and `collect --hugepages` saw.

use kairos_analysis_registry::{Figure, EMULATED_MACHINE, KERNEL_SHARE, PAGE_FAULTS};
use kairos_result::ResultDir;
use serde_json::Value;

use crate::{user_only_event, Facts, RUN_TIME};

/// Places of Kairos's own rows (see [`Figure::place`]).
const PLACE_RUN_TIME: u16 = 10;
const PLACE_MAJOR_FAULTS: u16 = 40;
const PLACE_BANDWIDTH: u16 = 70;
const PLACE_SAMPLES: u16 = 90;
const PLACE_HUGETLB: u16 = 100;
const PLACE_THP: u16 = 110;

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

/// Kairos's own figures of `dir`, with the kernel-time share's source and caveats; no
/// kernel-time share where an analysis `measured` it.
pub(crate) fn own(dir: &ResultDir, measured: bool, notes: &mut Vec<String>) -> Facts {
    let m = dir.manifest();
    let mut f = Facts {
        kind: m.kind.clone().unwrap_or_else(|| "unknown".into()),
        ..Default::default()
    };
    let cpu = m.host.as_ref().and_then(|h| h.cpu_model.as_deref());
    if cpu.is_some_and(|c| c.contains("QEMU TCG")) {
        f.timing_caveat = Some(EMULATED_MACHINE.into());
    }
    let (faults, major) = page_faults(dir);
    let (share, how) = if measured {
        None
    } else {
        kernel_share(dir, &mut f, notes)
    }
    .unzip();
    let samples = m.counts.map(|c| c.samples).filter(|&s| s > 0);
    let huge = m.extra.get("hugepages");
    f.figures = vec![
        Figure::quantity(PLACE_RUN_TIME, RUN_TIME, m.duration_secs, 3).words("shorter", "longer"),
        Figure {
            how,
            ..Figure::share(KERNEL_SHARE.0, KERNEL_SHARE.1, share)
        },
        Figure::count(PAGE_FAULTS.0, PAGE_FAULTS.1, faults),
        Figure::count(PLACE_MAJOR_FAULTS, "major page faults", major),
        Figure::count(PLACE_SAMPLES, "samples", samples),
        Figure::count(
            PLACE_HUGETLB,
            "huge pages in use, peak (kB)",
            huge.and_then(|h| u(h, "hugetlb_peak_kb")),
        )
        .words("less", "more"),
        Figure::count(
            PLACE_THP,
            "THP in use, peak (kB)",
            huge.and_then(|h| u(h, "anon_huge_peak_kb")),
        )
        .words("less", "more"),
    ];
    bandwidth(dir, &mut f.figures, notes);
    f
}

/// Minor + major faults and major faults, from the target's rusage (an analysis may give
/// a count where it is not recorded).
fn page_faults(dir: &ResultDir) -> (Option<u64>, Option<u64>) {
    let Some(p) = dir.manifest().extra.get("process") else {
        return (None, None);
    };
    let faults = match (u(p, "minor_faults"), u(p, "major_faults")) {
        (Some(a), b) => Some(a + b.unwrap_or(0)),
        (None, b) => b,
    };
    (faults, u(p, "major_faults"))
}

/// Percent of time in kernel mode, and what it was measured from: the target's rusage,
/// else the kernel-mode samples of a sampled profile (unless they leave kernel mode out,
/// which `f` then says). An analysis may measure it better (the system overview).
fn kernel_share(
    dir: &ResultDir,
    f: &mut Facts,
    notes: &mut Vec<String>,
) -> Option<(f64, &'static str)> {
    let m = dir.manifest();
    if let Some(p) = m.extra.get("process") {
        if let (Some(us), Some(sy)) = (
            p.get("user_s").and_then(Value::as_f64),
            p.get("system_s").and_then(Value::as_f64),
        ) {
            if us + sy > 0.0 {
                return Some((100.0 * sy / (us + sy), "system / (user + system) CPU time"));
            }
        }
    }
    let event = m.event.as_ref().map_or("", |e| e.name.as_str());
    if user_only_event(event) {
        f.kernel_share_not_measured = Some(format!(
            "not measured: its samples ({event}) leave kernel mode out"
        ));
        return None;
    }
    m.table("samples")?;
    match kairos_result::read_profile_of_event(dir, None) {
        Ok(p) => {
            let (mut all, mut kernel) = (0u128, 0u128);
            for s in &p.samples {
                all += u128::from(s.weight);
                if p.leaf_frame(s)
                    .is_some_and(|fr| fr.mode == kairos_model::Mode::Kernel)
                {
                    kernel += u128::from(s.weight);
                }
            }
            (all > 0).then(|| (100.0 * kernel as f64 / all as f64, "kernel-mode samples"))
        }
        Err(e) => {
            notes.push(format!(
                "{}: kernel-time share n/a ({e})",
                dir.path().display()
            ));
            None
        }
    }
}

/// Average and peak GB/s per domain and flow, from the bandwidth timeline every
/// collection records.
fn bandwidth(dir: &ResultDir, figures: &mut Vec<Figure>, notes: &mut Vec<String>) {
    match kairos_bandwidth::timeline::Timeline::load(dir.path()) {
        Some(Ok(t)) => {
            for r in kairos_bandwidth::timeline::stats(&t) {
                let domain = r
                    .domain
                    .map_or("all".to_string(), |d| format!("{} {d}", t.domain));
                let flow = r.flow.name();
                for (i, what, v) in [(0, "average", r.average_gbs), (1, "peak", r.peak_gbs)] {
                    let name = format!("bandwidth {domain} {flow}, {what} (GB/s)");
                    // Ordered as (domain, flow), the average before the peak.
                    let key = format!("{domain}\u{0}{flow}\u{0}{i}");
                    figures.push(Figure::quantity(PLACE_BANDWIDTH, name, Some(v), 2).keyed(key));
                }
            }
        }
        Some(Err(e)) => notes.push(format!("{}: bandwidth n/a ({e})", dir.path().display())),
        None => {}
    }
}
