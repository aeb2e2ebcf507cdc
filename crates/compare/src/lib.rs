//! Before/after comparison of two results: what each has (see README.md), side by side,
//! with the difference phrased the way a reader says it ("8.1x fewer", "5.6% shorter").

use std::collections::BTreeMap;

use kairos_report::{Cell, Column, Table};
use kairos_result::ResultDir;
use serde_json::Value;

pub mod io;

/// The comparable figures of one result; `None` where the result does not have it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub kind: String,
    pub elapsed_s: Option<f64>,
    pub samples: Option<u64>,
    /// Percent of time in kernel mode, and what it was measured from.
    pub kernel_share: Option<(f64, &'static str)>,
    /// Why the result has no kernel-time share that means anything (its samples leave
    /// kernel mode out: `cpu-clock:u`).
    pub kernel_share_not_measured: Option<String>,
    /// Why the result's run time says nothing of the program's speed (an emulated NUMA
    /// machine, whose nodes are equally fast).
    pub timing_caveat: Option<String>,
    pub page_faults: Option<u64>,
    pub major_faults: Option<u64>,
    pub kernel_entries: BTreeMap<String, u64>,
    pub allocated_bytes: Option<u64>,
    pub hugetlb_peak_kb: Option<u64>,
    pub anon_huge_peak_kb: Option<u64>,
    /// memory-access: cache lines with each verdict.
    pub false_sharing_lines: Option<u64>,
    pub true_sharing_lines: Option<u64>,
    /// memory-access NUMA: estimated share of sampled accesses to a page on another node
    /// than the CPU's (percent), the same from the PMU's data source, objects with a
    /// placement problem, and the pages on each node.
    pub remote_share_pct: Option<f64>,
    pub pmu_remote_share_pct: Option<f64>,
    pub numa_problems: Option<u64>,
    pub pages_by_node: BTreeMap<String, u64>,
    /// Memory bandwidth (GB/s) per domain ("socket 0", "all") and flow ("read", "write",
    /// "link", "total", "local"): (average, peak), from the result's bandwidth timeline.
    pub bandwidth: BTreeMap<(String, String), (f64, f64)>,
    /// io: average MB/s per device or stack and flow, DDIO hit rate per socket (see `io`).
    pub io: BTreeMap<String, f64>,
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

impl Facts {
    /// Reads what `dir` has. Tables that cannot be read only leave their figure out, with
    /// the reason in the returned notes.
    pub fn read(dir: &ResultDir) -> (Facts, Vec<String>) {
        let m = dir.manifest();
        let mut notes = Vec::new();
        let mut f = Facts {
            kind: m.kind.clone().unwrap_or_else(|| "unknown".into()),
            elapsed_s: m.duration_secs,
            samples: m.counts.map(|c| c.samples).filter(|&s| s > 0),
            ..Default::default()
        };
        let cpu = m.host.as_ref().and_then(|h| h.cpu_model.as_deref());
        let numa_emulated = m
            .extra
            .get("memory_access")
            .and_then(|ma| ma.get("numa"))
            .and_then(|n| n.get("emulated"))
            .and_then(Value::as_bool)
            == Some(true);
        if numa_emulated || cpu.is_some_and(|c| c.contains("QEMU TCG")) {
            f.timing_caveat = Some("not comparable: recorded on an emulated machine (QEMU TCG), whose NUMA nodes are equally fast; a NUMA fix changes where pages are there but not how long the program runs: compare run times on real sockets".into());
        }
        let user_only = m.event.as_ref().is_some_and(|e| user_only_event(&e.name));
        if let Some(p) = m.extra.get("process") {
            f.page_faults = match (u(p, "minor_faults"), u(p, "major_faults")) {
                (Some(a), b) => Some(a + b.unwrap_or(0)),
                (None, b) => b,
            };
            f.major_faults = u(p, "major_faults");
            if let (Some(us), Some(sy)) = (
                p.get("user_s").and_then(Value::as_f64),
                p.get("system_s").and_then(Value::as_f64),
            ) {
                if us + sy > 0.0 {
                    f.kernel_share =
                        Some((100.0 * sy / (us + sy), "system / (user + system) CPU time"));
                }
            }
        }
        // The system-overview analysis's section, when it wrote one; read leniently
        // because its format is its own.
        if let Some(so) = m.extra.get("system_overview") {
            if f.page_faults.is_none() {
                f.page_faults = u(so, "page_faults");
            }
            if let Some(Value::Object(ke)) = so.get("kernel_entries") {
                f.kernel_entries = ke
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                    .collect();
            }
            if let Some(s) = so.get("kernel_time_share_pct").and_then(Value::as_f64) {
                f.kernel_share = Some((s, "system-overview"));
            }
        }
        // The memory-access analysis's section: its verdicts per cache line.
        if let Some(ma) = m.extra.get("memory_access") {
            f.false_sharing_lines = u(ma, "false_sharing_lines");
            f.true_sharing_lines = u(ma, "true_sharing_lines");
            // Only where placement and first touch were recorded: an imported or numa=off
            // result has no pages to compare.
            if let Some(n) = ma
                .get("numa")
                .filter(|n| n.get("recorded").and_then(Value::as_bool) == Some(true))
            {
                f.remote_share_pct = n.get("remote_share_pct").and_then(Value::as_f64);
                f.numa_problems = u(n, "problems");
                if let Some(Value::Object(p)) = n.get("pages_by_node") {
                    f.pages_by_node = p
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                        .collect();
                }
            }
            if let Some(n) = ma.get("numa") {
                f.pmu_remote_share_pct = n.get("pmu_remote_share_pct").and_then(Value::as_f64);
            }
        }
        match kairos_bandwidth::timeline::Timeline::load(dir.path()) {
            Some(Ok(t)) => {
                for r in kairos_bandwidth::timeline::stats(&t) {
                    let domain = r
                        .domain
                        .map_or("all".to_string(), |d| format!("{} {d}", t.domain));
                    f.bandwidth.insert(
                        (domain, r.flow.name().to_string()),
                        (r.average_gbs, r.peak_gbs),
                    );
                }
            }
            Some(Err(e)) => notes.push(format!("{}: bandwidth n/a ({e})", dir.path().display())),
            None => {}
        }
        f.io = io::facts(dir.path(), &mut notes);
        if let Some(h) = m.extra.get("hugepages") {
            f.hugetlb_peak_kb = u(h, "hugetlb_peak_kb");
            f.anon_huge_peak_kb = u(h, "anon_huge_peak_kb");
        }
        if f.kind == "memory-consumption" {
            match kairos_analysis_memory_consumption::tables::read(&dir.tables_path()) {
                Ok(data) => {
                    f.allocated_bytes = Some(
                        kairos_analysis_memory_consumption::replay::replay(&data.rows, 0)
                            .heap_bytes,
                    )
                }
                Err(e) => notes.push(format!(
                    "{}: allocated bytes n/a ({e})",
                    dir.path().display()
                )),
            }
        } else if user_only && f.kernel_share.is_none() {
            f.kernel_share_not_measured = Some(format!(
                "not measured: its samples ({}) leave kernel mode out",
                m.event.as_ref().map_or("", |e| e.name.as_str())
            ));
        } else if m.table("samples").is_some() && f.kernel_share.is_none() {
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
                    if all > 0 {
                        f.kernel_share =
                            Some((100.0 * kernel as f64 / all as f64, "kernel-mode samples"));
                    }
                }
                Err(e) => notes.push(format!(
                    "{}: kernel-time share n/a ({e})",
                    dir.path().display()
                )),
            }
        }
        (f, notes)
    }
}

/// Whether a perf event name's modifiers leave kernel mode out: `cpu-clock:u`,
/// `cycles:upp`, `cpu/mem-loads/u` (perf's spellings; `:uk` and `:k` count the kernel).
pub fn user_only_event(name: &str) -> bool {
    let mods = match name.rsplit_once(':') {
        Some((_, m)) => m,
        None => match name.rsplit_once('/') {
            Some((head, m)) if head.contains('/') => m,
            _ => "",
        },
    };
    !mods.is_empty()
        && mods.chars().all(|c| "ukhHGIpPSDWe".contains(c))
        && mods.contains('u')
        && !mods.contains('k')
}

/// "8.1x fewer", "5.6% shorter", "same": how B differs from A. `less`/`more` are the
/// words for a smaller or larger B ("fewer"/"more", "shorter"/"longer").
pub fn phrase(a: f64, b: f64, less: &str, more: &str) -> String {
    if !(a.is_finite() && b.is_finite()) || a < 0.0 || b < 0.0 {
        return "n/a".into();
    }
    if a == b {
        return "same".into();
    }
    let (hi, lo, word) = if b < a { (a, b, less) } else { (b, a, more) };
    if lo == 0.0 {
        return format!("{word} (from {a} to {b})");
    }
    let r = hi / lo;
    if r >= 1.5 {
        format!("{r:.1}x {word}")
    } else {
        format!("{:.1}% {word}", 100.0 * (hi - lo) / a)
    }
}

/// The comparison table: figure, A, B, B - A, B / A, in words.
pub fn compare(a: &Facts, b: &Facts) -> Table {
    let mut t = Table::new(vec![
        Column::left("Figure"),
        Column::right("A"),
        Column::right("B"),
        Column::right("B - A"),
        Column::right("B / A"),
        Column::left("B against A"),
    ]);
    let na = || Cell::text("n/a");
    let ratio = |x: f64, y: f64| if x > 0.0 { Cell::float(y / x, 3) } else { na() };
    let counts =
        |t: &mut Table, name: &str, x: Option<u64>, y: Option<u64>, less: &str, more: &str| {
            let cell = |v: Option<u64>| v.map(Cell::UInt).unwrap_or_else(na);
            let (d, r, w) = match (x, y) {
                (Some(x), Some(y)) => (
                    Cell::Int(y as i64 - x as i64),
                    ratio(x as f64, y as f64),
                    Cell::text(phrase(x as f64, y as f64, less, more)),
                ),
                _ => (na(), na(), na()),
            };
            t.push_row(vec![Cell::text(name), cell(x), cell(y), d, r, w]);
        };
    let (ea, eb) = (a.elapsed_s, b.elapsed_s);
    let secs = |v: Option<f64>| v.map(|s| Cell::float(s, 3)).unwrap_or_else(na);
    let caveat = a.timing_caveat.as_ref().or(b.timing_caveat.as_ref());
    let (d, r, w) = match (ea, eb) {
        (Some(x), Some(y)) => (
            Cell::float(y - x, 3),
            ratio(x, y),
            match caveat {
                Some(c) => Cell::text(c.split(':').next().unwrap_or("not comparable")),
                None => Cell::text(phrase(x, y, "shorter", "longer")),
            },
        ),
        _ => (na(), na(), na()),
    };
    t.push_row(vec![
        Cell::text("run time (s)"),
        secs(ea),
        secs(eb),
        d,
        r,
        w,
    ]);
    points(
        &mut t,
        "kernel-time share",
        a.kernel_share.map(|x| x.0),
        b.kernel_share.map(|x| x.0),
    );
    if a.kernel_share_not_measured.is_some() || b.kernel_share_not_measured.is_some() {
        if let Some(row) = t.rows.last_mut() {
            for (i, f) in [(1, a), (2, b)] {
                if f.kernel_share_not_measured.is_some() {
                    row[i] = Cell::text("not measured");
                }
            }
            row[5] = Cell::text("not measured");
        }
    }
    counts(
        &mut t,
        "page faults",
        a.page_faults,
        b.page_faults,
        "fewer",
        "more",
    );
    counts(
        &mut t,
        "major page faults",
        a.major_faults,
        b.major_faults,
        "fewer",
        "more",
    );
    let causes: std::collections::BTreeSet<&String> = a
        .kernel_entries
        .keys()
        .chain(b.kernel_entries.keys())
        .collect();
    if causes.is_empty() {
        counts(&mut t, "kernel entries", None, None, "fewer", "more");
    }
    for c in causes {
        counts(
            &mut t,
            &format!("kernel entries: {c}"),
            a.kernel_entries.get(c).copied(),
            b.kernel_entries.get(c).copied(),
            "fewer",
            "more",
        );
    }
    counts(
        &mut t,
        "allocated bytes",
        a.allocated_bytes,
        b.allocated_bytes,
        "less",
        "more",
    );
    counts(
        &mut t,
        "cache lines with false sharing",
        a.false_sharing_lines,
        b.false_sharing_lines,
        "fewer",
        "more",
    );
    counts(
        &mut t,
        "cache lines with true sharing",
        a.true_sharing_lines,
        b.true_sharing_lines,
        "fewer",
        "more",
    );
    points(
        &mut t,
        "remote accesses (estimated)",
        a.remote_share_pct,
        b.remote_share_pct,
    );
    points(
        &mut t,
        "remote accesses (PMU)",
        a.pmu_remote_share_pct,
        b.pmu_remote_share_pct,
    );
    counts(
        &mut t,
        "objects with a NUMA problem",
        a.numa_problems,
        b.numa_problems,
        "fewer",
        "more",
    );
    let nodes: std::collections::BTreeSet<&String> = a
        .pages_by_node
        .keys()
        .chain(b.pages_by_node.keys())
        .collect();
    for n in nodes {
        let get = |f: &Facts| {
            if f.pages_by_node.is_empty() {
                None
            } else {
                Some(f.pages_by_node.get(n).copied().unwrap_or(0))
            }
        };
        counts(
            &mut t,
            &format!("pages on node {n}"),
            get(a),
            get(b),
            "fewer",
            "more",
        );
    }
    let keys: std::collections::BTreeSet<&(String, String)> =
        a.bandwidth.keys().chain(b.bandwidth.keys()).collect();
    for k in keys {
        for (what, pick) in [("average", 0), ("peak", 1)] {
            let get = |f: &Facts| {
                f.bandwidth
                    .get(k)
                    .map(|v| if pick == 0 { v.0 } else { v.1 })
            };
            let (x, y) = (get(a), get(b));
            let gbs = |v: Option<f64>| v.map(|s| Cell::float(s, 2)).unwrap_or_else(na);
            let (d, r, w) = match (x, y) {
                (Some(x), Some(y)) => (
                    Cell::float(y - x, 2),
                    ratio(x, y),
                    Cell::text(phrase(x, y, "lower", "higher")),
                ),
                _ => (na(), na(), na()),
            };
            t.push_row(vec![
                Cell::text(format!("bandwidth {} {}, {what} (GB/s)", k.0, k.1)),
                gbs(x),
                gbs(y),
                d,
                r,
                w,
            ]);
        }
    }
    io::rows(&mut t, a, b);
    counts(&mut t, "samples", a.samples, b.samples, "fewer", "more");
    counts(
        &mut t,
        "huge pages in use, peak (kB)",
        a.hugetlb_peak_kb,
        b.hugetlb_peak_kb,
        "less",
        "more",
    );
    counts(
        &mut t,
        "THP in use, peak (kB)",
        a.anon_huge_peak_kb,
        b.anon_huge_peak_kb,
        "less",
        "more",
    );
    for (name, f) in [("A", a), ("B", b)] {
        if let Some((_, how)) = f.kernel_share {
            t.push_note(format!("kernel-time share of {name} ({}): {how}", f.kind));
        }
        if let Some(why) = &f.kernel_share_not_measured {
            t.push_note(format!("kernel-time share of {name} ({}): {why}", f.kind));
        }
    }
    if let Some(c) = caveat {
        t.push_note(format!("run time: {c}"));
    }
    t
}

/// A share in percent: A, B and the difference in points ("12.0 points lower").
fn points(t: &mut Table, name: &str, a: Option<f64>, b: Option<f64>) {
    let na = || Cell::text("n/a");
    let share = |v: Option<f64>| v.map(Cell::Percent).unwrap_or_else(na);
    let (d, w) = match (a, b) {
        (Some(x), Some(y)) => {
            let pts = y - x;
            let w = if pts.abs() < 0.05 {
                "same".into()
            } else {
                format!(
                    "{:.1} points {}",
                    pts.abs(),
                    if pts < 0.0 { "lower" } else { "higher" }
                )
            };
            (Cell::float(pts, 1), Cell::text(w))
        }
        _ => (na(), na()),
    };
    t.push_row(vec![Cell::text(name), share(a), share(b), d, na(), w]);
}

/// One line per figure both results have: "page faults: 96.3x fewer".
pub fn sentences(a: &Facts, b: &Facts) -> Vec<String> {
    let t = compare(a, b);
    t.rows
        .iter()
        .filter_map(|r| match (r.first(), r.get(5)) {
            (Some(Cell::Text(n)), Some(Cell::Text(w))) if w != "n/a" => {
                Some(format!("{}: {w}", n.trim_end_matches(" (s)")))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_only_events_are_told_by_their_modifiers() {
        for n in [
            "cpu-clock:u",
            "cycles:upp",
            "cpu/mem-loads/u",
            "cpu_core/cycles/u",
        ] {
            assert!(user_only_event(n), "{n}");
        }
        for n in [
            "cpu-clock",
            "cycles:uk",
            "cycles:k",
            "raw_syscalls:sys_enter",
            "cpu/event=0x3c/",
            "cpu/mem-loads,ldlat=30/P",
        ] {
            assert!(!user_only_event(n), "{n}");
        }
    }

    /// A user-only recording has no kernel-time share, and says so rather than n/a or 0%;
    /// run times from an emulated NUMA machine are not compared.
    #[test]
    fn rows_say_what_they_cannot_mean() {
        let a = Facts {
            kind: "hotspots".into(),
            elapsed_s: Some(12.4),
            kernel_share_not_measured: Some("not measured: its samples (cpu-clock:u) leave kernel mode out".into()),
            timing_caveat: Some("not comparable: recorded on an emulated machine (QEMU TCG), whose NUMA nodes are equally fast".into()),
            ..Default::default()
        };
        let b = Facts {
            kind: "hotspots".into(),
            elapsed_s: Some(6.7),
            kernel_share: Some((5.0, "kernel-mode samples")),
            ..Default::default()
        };
        let t = compare(&a, &b);
        let row = |name: &str| {
            t.rows
                .iter()
                .find(|r| matches!(r.first(), Some(Cell::Text(n)) if n == name))
                .cloned()
                .unwrap()
        };
        let k = row("kernel-time share");
        assert_eq!(k[1], Cell::text("not measured"));
        assert_eq!(k[5], Cell::text("not measured"));
        assert_eq!(row("run time (s)")[5], Cell::text("not comparable"));
        assert!(t
            .notes
            .iter()
            .any(|n| n.contains("cpu-clock:u") && n.contains("leave kernel mode out")));
        assert!(t
            .notes
            .iter()
            .any(|n| n.starts_with("run time: not comparable") && n.contains("QEMU TCG")));
        assert!(!sentences(&a, &b).iter().any(|s| s.contains("shorter")));
    }

    #[test]
    fn phrases_read_like_the_recipe() {
        assert_eq!(phrase(439_000.0, 54_200.0, "fewer", "more"), "8.1x fewer");
        assert_eq!(phrase(106.4, 100.5, "shorter", "longer"), "5.5% shorter");
        assert_eq!(phrase(1.0, 1.0, "fewer", "more"), "same");
        assert_eq!(phrase(10.0, 30.0, "fewer", "more"), "3.0x more");
        assert_eq!(phrase(f64::NAN, 1.0, "a", "b"), "n/a");
    }

    #[test]
    fn missing_figures_are_na() {
        let a = Facts {
            page_faults: Some(25_921),
            elapsed_s: Some(20.0),
            ..Default::default()
        };
        let b = Facts {
            page_faults: Some(160),
            elapsed_s: Some(19.0),
            ..Default::default()
        };
        let s = sentences(&a, &b);
        assert!(
            s.contains(&"page faults: 162.0x fewer".to_string()),
            "{s:?}"
        );
        assert!(s.contains(&"run time: 5.0% shorter".to_string()), "{s:?}");
        assert!(!s.iter().any(|l| l.starts_with("allocated")));
    }

    #[test]
    fn bandwidth_per_socket_average_and_peak() {
        let bw = |avg: f64, peak: f64| {
            BTreeMap::from([(("socket 0".to_string(), "read".to_string()), (avg, peak))])
        };
        let a = Facts {
            bandwidth: bw(20.0, 40.0),
            ..Default::default()
        };
        let b = Facts {
            bandwidth: bw(10.0, 40.0),
            ..Default::default()
        };
        let s = sentences(&a, &b);
        assert!(
            s.contains(&"bandwidth socket 0 read, average (GB/s): 2.0x lower".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"bandwidth socket 0 read, peak (GB/s): same".to_string()),
            "{s:?}"
        );
        // One result without a timeline: n/a, no sentence.
        assert!(sentences(&a, &Facts::default())
            .iter()
            .all(|l| !l.starts_with("bandwidth")));
    }

    #[test]
    fn numa_placement_reads_as_a_fix() {
        let pages = |a: u64, b: u64| BTreeMap::from([("0".to_string(), a), ("1".to_string(), b)]);
        let a = Facts {
            remote_share_pct: Some(48.0),
            numa_problems: Some(3),
            pages_by_node: pages(196_608, 0),
            ..Default::default()
        };
        let b = Facts {
            remote_share_pct: Some(1.5),
            numa_problems: Some(0),
            pages_by_node: pages(98_304, 98_304),
            ..Default::default()
        };
        let s = sentences(&a, &b);
        assert!(
            s.contains(&"remote accesses (estimated): 46.5 points lower".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"objects with a NUMA problem: fewer (from 3 to 0)".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"pages on node 1: more (from 0 to 98304)".to_string()),
            "{s:?}"
        );
        assert!(
            !s.iter().any(|l| l.starts_with("remote accesses (PMU)")),
            "{s:?}"
        );
    }
}
