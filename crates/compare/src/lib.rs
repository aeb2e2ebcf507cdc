//! Before/after comparison of two results: what each has (see README.md), side by side,
//! with the difference phrased the way a reader says it ("8.1x fewer", "5.6% shorter").
//! Kairos's own figures (run time, kernel-time share, page faults, bandwidth, samples,
//! huge pages) are read here; each analysis adds its own through the registry
//! ([`kairos_analysis_registry::AnalysisSpec::compare`]), and every row is compared the
//! same way, by its [`Measure`].

use std::collections::BTreeMap;

use kairos_analysis_registry::{Comparable, Figure, Measure};
use kairos_report::{Cell, Column, Table};
use kairos_result::ResultDir;

mod figures;

/// The comparable figures of one result; a figure it does not have is n/a.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub kind: String,
    pub figures: Vec<Figure>,
    /// Why the result has no kernel-time share that means anything (its samples leave
    /// kernel mode out: `cpu-clock:u`).
    pub kernel_share_not_measured: Option<String>,
    /// Why the result's run time says nothing of the program's speed (an emulated NUMA
    /// machine, whose nodes are equally fast).
    pub timing_caveat: Option<String>,
}

impl Facts {
    /// Reads what `dir` has: Kairos's own figures, then each analysis's. Tables that cannot
    /// be read only leave their figure out, with the reason in the returned notes.
    pub fn read(dir: &ResultDir) -> (Facts, Vec<String>) {
        let given: Vec<Comparable> = kairos_analysis_registry::ANALYSES
            .iter()
            .filter_map(|a| a.compare.map(|read| read(dir)))
            .collect();
        // A kernel-time share an analysis measured (the system overview's) is not estimated
        // again from the samples, which would read the whole profile for nothing.
        let measured = given.iter().flat_map(|c| &c.figures).any(|x| {
            (x.place, x.key.as_str()) == (KERNEL_SHARE_ROW.0, KERNEL_SHARE) && x.value.is_some()
        });
        let mut notes = Vec::new();
        let mut f = figures::own(dir, measured, &mut notes);
        for c in given {
            f.take(c.figures, c.fallback);
            f.timing_caveat = f.timing_caveat.or(c.timing_caveat);
            notes.extend(c.notes);
        }
        (f, notes)
    }

    /// An analysis's figures: one of Kairos's own rows (same place and key) takes its
    /// value from `figures` where they have one, from `fallback` where it has none; the
    /// others are rows of their own.
    fn take(&mut self, figures: Vec<Figure>, fallback: Vec<Figure>) {
        let own = |fs: &[Figure], x: &Figure| {
            fs.iter().position(|o| o.place == x.place && o.key == x.key)
        };
        for x in figures {
            match own(&self.figures, &x) {
                Some(i) if x.value.is_some() => self.figures[i] = x,
                Some(_) => {}
                None => self.figures.push(x),
            }
        }
        for x in fallback {
            if let Some(i) = own(&self.figures, &x) {
                if self.figures[i].value.is_none() {
                    self.figures[i] = x;
                }
            }
        }
    }

    /// The value of the figure named `name`.
    pub fn value(&self, name: &str) -> Option<Measure> {
        self.figures.iter().find(|x| x.name == name)?.value
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

/// Names of the rows the comparison gives a meaning of its own.
const RUN_TIME: &str = "run time (s)";
const KERNEL_SHARE_ROW: (u16, &str) = kairos_analysis_registry::KERNEL_SHARE;
const KERNEL_SHARE: &str = KERNEL_SHARE_ROW.1;

/// The comparison table: figure, A, B, B - A, B / A, in words. One row per figure either
/// result has, ordered by place and key.
pub fn compare(a: &Facts, b: &Facts) -> Table {
    let mut t = Table::new(vec![
        Column::left("Figure"),
        Column::right("A"),
        Column::right("B"),
        Column::right("B - A"),
        Column::right("B / A"),
        Column::left("B against A"),
    ]);
    let caveat = a.timing_caveat.as_ref().or(b.timing_caveat.as_ref());
    for (row, x, y) in rows(a, b) {
        t.push_row(cells(row, x, y));
        let last = t.rows.len() - 1;
        if row.name == RUN_TIME && x.is_some() && y.is_some() {
            if let Some(c) = caveat {
                t.rows[last][5] = Cell::text(c.split(':').next().unwrap_or("not comparable"));
            }
        }
        if row.name == KERNEL_SHARE {
            let not = |f: &Facts| f.kernel_share_not_measured.is_some();
            for (i, f) in [(1, a), (2, b)] {
                if not(f) {
                    t.rows[last][i] = Cell::text("not measured");
                }
            }
            if not(a) || not(b) {
                t.rows[last][5] = Cell::text("not measured");
            }
        }
    }
    for (name, f) in [("A", a), ("B", b)] {
        for x in f.figures.iter().filter(|x| x.value.is_some()) {
            if let Some(how) = x.how {
                t.push_note(format!("{} of {name} ({}): {how}", x.name, f.kind));
            }
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

/// The rows, by (place, key), with A's and B's values; a row neither has a value for is
/// left out when another row shares its place.
fn rows<'a>(a: &'a Facts, b: &'a Facts) -> Vec<(&'a Figure, Option<Measure>, Option<Measure>)> {
    let mut by: BTreeMap<(u16, &str), &Figure> = BTreeMap::new();
    for f in a.figures.iter().chain(&b.figures) {
        by.entry((f.place, f.key.as_str())).or_insert(f);
    }
    let value = |facts: &Facts, row: &Figure| {
        let mine = facts
            .figures
            .iter()
            .find(|f| f.place == row.place && f.key == row.key);
        match mine {
            Some(f) => f.value,
            None => facts
                .figures
                .iter()
                .any(|f| f.place == row.place && f.missing_is_zero && f.value.is_some())
                .then_some(Measure::Count(0)),
        }
    };
    let mut places: BTreeMap<u16, usize> = BTreeMap::new();
    for (place, _) in by.keys() {
        *places.entry(*place).or_default() += 1;
    }
    by.into_values()
        .map(|row| (row, value(a, row), value(b, row)))
        .filter(|(row, x, y)| x.is_some() || y.is_some() || places.get(&row.place) == Some(&1))
        .collect()
}

/// Name, A, B, B - A, B / A and the words, as the measure compares.
fn cells(row: &Figure, x: Option<Measure>, y: Option<Measure>) -> Vec<Cell> {
    let na = || Cell::text("n/a");
    let ratio = |x: f64, y: f64| if x > 0.0 { Cell::float(y / x, 3) } else { na() };
    let name = Cell::text(row.name.as_str());
    let kind = x.or(y);
    match kind {
        Some(Measure::Share(_)) => {
            let v = |m: Option<Measure>| match m {
                Some(Measure::Share(p)) => Some(p),
                _ => None,
            };
            let (x, y) = (v(x), v(y));
            let share = |v: Option<f64>| v.map(Cell::Percent).unwrap_or_else(na);
            let (d, w) = match (x, y) {
                (Some(x), Some(y)) => (Cell::float(y - x, 1), Cell::text(points(y - x))),
                _ => (na(), na()),
            };
            vec![name, share(x), share(y), d, na(), w]
        }
        Some(Measure::Quantity { decimals, .. }) => {
            let v = |m: Option<Measure>| match m {
                Some(Measure::Quantity { value, .. }) => Some(value),
                _ => None,
            };
            let (x, y) = (v(x), v(y));
            let cell = |v: Option<f64>| v.map(|s| Cell::float(s, decimals)).unwrap_or_else(na);
            let (d, r, w) = match (x, y) {
                (Some(x), Some(y)) => (
                    Cell::float(y - x, decimals),
                    ratio(x, y),
                    Cell::text(phrase(x, y, row.less, row.more)),
                ),
                _ => (na(), na(), na()),
            };
            vec![name, cell(x), cell(y), d, r, w]
        }
        Some(Measure::Count(_)) | None => {
            let v = |m: Option<Measure>| match m {
                Some(Measure::Count(n)) => Some(n),
                _ => None,
            };
            let (x, y) = (v(x), v(y));
            let cell = |v: Option<u64>| v.map(Cell::UInt).unwrap_or_else(na);
            let (d, r, w) = match (x, y) {
                (Some(x), Some(y)) => (
                    Cell::Int(y as i64 - x as i64),
                    ratio(x as f64, y as f64),
                    Cell::text(phrase(x as f64, y as f64, row.less, row.more)),
                ),
                _ => (na(), na(), na()),
            };
            vec![name, cell(x), cell(y), d, r, w]
        }
    }
}

/// A change of a share: "12.0 points lower", "same".
fn points(pts: f64) -> String {
    if pts.abs() < 0.05 {
        "same".into()
    } else {
        format!(
            "{:.1} points {}",
            pts.abs(),
            if pts < 0.0 { "lower" } else { "higher" }
        )
    }
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kairos_analysis_registry::EMULATED_MACHINE;

    /// A result's facts from Kairos's own figures as [`figures::own`] makes them.
    fn facts(figures: Vec<Figure>) -> Facts {
        Facts {
            kind: "hotspots".into(),
            figures,
            ..Default::default()
        }
    }

    fn run_time(s: f64) -> Figure {
        Figure::quantity(10, RUN_TIME, Some(s), 3).words("shorter", "longer")
    }

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
            kernel_share_not_measured: Some(
                "not measured: its samples (cpu-clock:u) leave kernel mode out".into(),
            ),
            timing_caveat: Some(EMULATED_MACHINE.into()),
            ..facts(vec![run_time(12.4), Figure::share(20, KERNEL_SHARE, None)])
        };
        let b = facts(vec![
            run_time(6.7),
            Figure::share(20, KERNEL_SHARE, Some(5.0)).measured_from("kernel-mode samples"),
        ]);
        let t = compare(&a, &b);
        let row = |name: &str| {
            t.rows
                .iter()
                .find(|r| matches!(r.first(), Some(Cell::Text(n)) if n == name))
                .cloned()
                .unwrap()
        };
        let k = row(KERNEL_SHARE);
        assert_eq!(k[1], Cell::text("not measured"));
        assert_eq!(k[5], Cell::text("not measured"));
        assert_eq!(row(RUN_TIME)[5], Cell::text("not comparable"));
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
        let faults = |n| Figure::count(30, "page faults", Some(n));
        let alloc = || Figure::count(55, "allocated bytes", None).words("less", "more");
        let a = facts(vec![faults(25_921), run_time(20.0), alloc()]);
        let b = facts(vec![faults(160), run_time(19.0), alloc()]);
        let s = sentences(&a, &b);
        assert!(
            s.contains(&"page faults: 162.0x fewer".to_string()),
            "{s:?}"
        );
        assert!(s.contains(&"run time: 5.0% shorter".to_string()), "{s:?}");
        assert!(!s.iter().any(|l| l.starts_with("allocated")));
        // Rows neither has stay, as n/a, in the order of their places.
        let names: Vec<_> = compare(&a, &b).rows.iter().map(|r| r[0].clone()).collect();
        assert_eq!(
            names,
            [RUN_TIME, "page faults", "allocated bytes"].map(Cell::text)
        );
    }

    /// An analysis's measurement replaces Kairos's own estimate of one of its rows, and
    /// fills one it has no value for, but does not overwrite one it has.
    #[test]
    fn an_analysis_measures_better_or_fills_in() {
        let mut f = facts(vec![
            Figure::share(20, KERNEL_SHARE, Some(30.0)).measured_from("kernel-mode samples"),
            Figure::count(30, "page faults", Some(7)),
        ]);
        f.kernel_share_not_measured = None;
        f.take(
            vec![Figure::share(20, KERNEL_SHARE, Some(41.5)).measured_from("system-overview")],
            vec![Figure::count(30, "page faults", Some(900))],
        );
        assert_eq!(f.value(KERNEL_SHARE), Some(Measure::Share(41.5)));
        assert_eq!(f.value("page faults"), Some(Measure::Count(7)));
        let mut g = facts(vec![Figure::count(30, "page faults", None)]);
        g.take(
            Vec::new(),
            vec![Figure::count(30, "page faults", Some(900))],
        );
        assert_eq!(g.value("page faults"), Some(Measure::Count(900)));
        let t = compare(&f, &g);
        assert!(
            t.notes
                .iter()
                .any(|n| n == "kernel-time share of A (hotspots): system-overview"),
            "{:?}",
            t.notes
        );
    }

    #[test]
    fn a_placeholder_row_gives_way_to_its_family() {
        let entries = |causes: &[(&str, u64)]| {
            let mut v = vec![Figure::count(50, "kernel entries", None).keyed("")];
            for (c, n) in causes {
                v.push(Figure::count(50, format!("kernel entries: {c}"), Some(*n)).keyed(*c));
            }
            facts(v)
        };
        let names = |a: &Facts, b: &Facts| -> Vec<Cell> {
            compare(a, b).rows.iter().map(|r| r[0].clone()).collect()
        };
        assert_eq!(
            names(&entries(&[]), &entries(&[])),
            [Cell::text("kernel entries")]
        );
        assert_eq!(
            names(&entries(&[("syscall", 3)]), &entries(&[("fault", 1)])),
            ["kernel entries: fault", "kernel entries: syscall"].map(Cell::text)
        );
    }

    #[test]
    fn bandwidth_per_socket_average_and_peak() {
        let bw = |avg: f64, peak: f64| {
            facts(vec![
                Figure::quantity(70, "bandwidth socket 0 read, average (GB/s)", Some(avg), 2)
                    .keyed("socket 0\u{0}read\u{0}0"),
                Figure::quantity(70, "bandwidth socket 0 read, peak (GB/s)", Some(peak), 2)
                    .keyed("socket 0\u{0}read\u{0}1"),
            ])
        };
        let (a, b) = (bw(20.0, 40.0), bw(10.0, 40.0));
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
        let numa = |remote: f64, problems: u64, pages: &[(&str, u64)]| {
            let mut v = vec![
                Figure::share(62, "remote accesses (estimated)", Some(remote)),
                Figure::share(63, "remote accesses (PMU)", None),
                Figure::count(64, "objects with a NUMA problem", Some(problems)),
            ];
            for (node, n) in pages {
                v.push(
                    Figure::count(65, format!("pages on node {node}"), Some(*n))
                        .keyed(*node)
                        .zero_when_missing(),
                );
            }
            facts(v)
        };
        let a = numa(48.0, 3, &[("0", 196_608)]);
        let b = numa(1.5, 0, &[("0", 98_304), ("1", 98_304)]);
        let s = sentences(&a, &b);
        assert!(
            s.contains(&"remote accesses (estimated): 46.5 points lower".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"objects with a NUMA problem: fewer (from 3 to 0)".to_string()),
            "{s:?}"
        );
        // A's node 1 is absent from its pages: 0 of them, not n/a.
        assert!(
            s.contains(&"pages on node 1: more (from 0 to 98304)".to_string()),
            "{s:?}"
        );
        assert!(
            !s.iter().any(|l| l.starts_with("remote accesses (PMU)")),
            "{s:?}"
        );
    }

    #[test]
    fn device_averages_and_hit_rates_side_by_side() {
        let io = |avg: f64, hit: f64| {
            facts(vec![
                Figure::quantity(80, "io lo rx, average (MB/s)", Some(avg), 3),
                Figure::quantity(80, "DDIO hit rate socket 1 (%)", Some(hit), 3),
            ])
        };
        let s = sentences(&io(10.0, 90.0), &io(30.0, 45.0));
        assert!(
            s.contains(&"io lo rx, average (MB/s): 3.0x higher".to_string()),
            "{s:?}"
        );
        assert!(
            s.contains(&"DDIO hit rate socket 1 (%): 2.0x lower".to_string()),
            "{s:?}"
        );
    }
}
