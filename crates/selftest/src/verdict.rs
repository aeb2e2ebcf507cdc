//! The comparison of a kairos figure with its reference (perf's figure, or the program's
//! own), the tolerance each may differ by, and one capability's verdict from its figures.
//! Everything here is pure, so the verdicts are tested on recorded figures.

use serde::Serialize;

/// What one capability came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Every figure is within its tolerance of the reference.
    Agrees,
    /// A figure is outside its tolerance, or kairos failed where it says it can collect.
    Disagrees,
    /// This machine (or perf) cannot do it; the line says why.
    NotAvailable,
}

impl Verdict {
    /// As the text output prints it: a disagreement stands out.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::Disagrees => "DISAGREES",
            Verdict::NotAvailable => "not available",
        }
    }

    /// As the JSON output writes it.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::Disagrees => "disagrees",
            Verdict::NotAvailable => "not available",
        }
    }
}

/// How far a kairos figure may be from its reference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Tolerance {
    /// At most this much apart, in the figure's unit (percentage points for shares).
    Absolute(f64),
    /// At most this fraction of the reference apart, and never less than `floor`.
    Relative { fraction: f64, floor: f64 },
}

impl Tolerance {
    /// The largest difference allowed against `reference`: 1% of 20042 is 200.42, not the
    /// 200.42000000000002 that binary floating point makes of it (the figure is printed
    /// and written to JSON as it is).
    pub fn allowed(self, reference: f64) -> f64 {
        match self {
            Tolerance::Absolute(a) => a.abs(),
            Tolerance::Relative { fraction, floor } => {
                significant(fraction.abs() * reference.abs()).max(floor.abs())
            }
        }
    }

    /// In words, for the summaries: "2.0 points", "10%", "10% (at least 20)".
    pub fn describe(self, unit: Unit) -> String {
        match self {
            Tolerance::Absolute(0.0) => "exactly".into(),
            Tolerance::Absolute(a) => format!("within {}", unit.amount(a)),
            Tolerance::Relative {
                fraction,
                floor: 0.0,
            } => {
                format!("within {:.0}%", fraction * 100.0)
            }
            Tolerance::Relative { fraction, floor } => {
                format!(
                    "within {:.0}% (at least {})",
                    fraction * 100.0,
                    unit.amount(floor)
                )
            }
        }
    }
}

/// `x` to 12 significant digits: a product's rounding error gone, its meaning kept.
fn significant(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let digits = 12 - x.abs().log10().ceil() as i32;
    let scale = 10f64.powi(digits);
    let r = (x * scale).round() / scale;
    if r.is_finite() {
        r
    } else {
        x
    }
}

/// Three standard deviations of a share's estimate, in percentage points, never less
/// than `floor`: a share `p_percent` seen in `n_kairos` samples against one seen in
/// `n_reference` independent samples (0 when the reference is exact, the program's own
/// measurement). Few samples widen it, so a short run does not disagree by chance.
pub fn share_tolerance(p_percent: f64, n_kairos: u64, n_reference: u64, floor: f64) -> Tolerance {
    let p = (p_percent / 100.0).clamp(0.0, 1.0);
    // A share of 0 or 1 still varies by about one sample in n.
    let var = (p * (1.0 - p)).max(0.25 / n_kairos.max(1) as f64);
    let inv = |n: u64| if n == 0 { 0.0 } else { 1.0 / n as f64 };
    let sigma = (var * (inv(n_kairos.max(1)) + inv(n_reference))).sqrt() * 100.0;
    Tolerance::Absolute((3.0 * sigma).max(floor))
}

/// What a figure counts, for printing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Unit {
    /// A share in percent; differences are percentage points.
    Percent,
    Count,
    /// Bytes a second, printed in GB/s.
    BytesPerSecond,
    Bytes,
    /// Branch records per sample.
    Entries,
    Cycles,
    /// 1 for yes, 0 for no.
    Flag,
}

impl Unit {
    /// A value of this unit: "29.5%", "20041", "12.31 GB/s", "yes".
    pub fn value(self, v: f64) -> String {
        if !v.is_finite() {
            return "none".into();
        }
        match self {
            Unit::Percent => format!("{v:.1}%"),
            Unit::Count => format!("{v:.0}"),
            Unit::BytesPerSecond => format!("{:.2} GB/s", v / 1e9),
            Unit::Bytes => format!("{:.1} MiB", v / (1024.0 * 1024.0)),
            Unit::Entries => format!("{v:.1}"),
            Unit::Cycles => format!("{v:.0} cycles"),
            Unit::Flag if v >= 0.5 => "yes".into(),
            Unit::Flag => "no".into(),
        }
    }

    /// A difference of this unit: "2.0 points", "20", "0.50 GB/s".
    pub fn amount(self, v: f64) -> String {
        match self {
            Unit::Percent => format!("{v:.1} points"),
            Unit::Flag => "nothing".into(),
            _ => self.value(v),
        }
    }
}

/// One figure kairos gave, with the reference it is held against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// What it is: "F2 self", "kernel-mode fault entries".
    pub what: String,
    pub unit: Unit,
    /// None: kairos gave no such figure (a function it never sampled counts as 0, not None).
    pub kairos: Option<f64>,
    pub reference: Option<f64>,
    pub tolerance: Tolerance,
}

impl Figure {
    pub fn new(
        what: impl Into<String>,
        unit: Unit,
        kairos: Option<f64>,
        reference: Option<f64>,
        tolerance: Tolerance,
    ) -> Figure {
        Figure {
            what: what.into(),
            unit,
            kairos,
            reference,
            tolerance,
        }
    }

    /// |kairos - reference|, when both exist and are numbers.
    pub fn difference(&self) -> Option<f64> {
        match (self.kairos, self.reference) {
            (Some(k), Some(r)) if k.is_finite() && r.is_finite() => Some((k - r).abs()),
            _ => None,
        }
    }

    /// The largest difference allowed, when there is a reference.
    pub fn allowed(&self) -> Option<f64> {
        self.reference
            .filter(|r| r.is_finite())
            .map(|r| self.tolerance.allowed(r))
    }

    /// Within tolerance; a missing figure on either side never agrees.
    pub fn agrees(&self) -> bool {
        match (self.difference(), self.allowed()) {
            // A hair of slack for figures computed in floating point.
            (Some(d), Some(a)) => d <= a + 1e-9 * a.max(1.0),
            _ => false,
        }
    }

    /// "F2 self 29.5% vs 29.9%", with the difference and tolerance when it disagrees.
    pub fn describe(&self) -> String {
        let v = |x: Option<f64>| x.map_or("none".to_string(), |x| self.unit.value(x));
        let base = format!("{} {} vs {}", self.what, v(self.kairos), v(self.reference));
        if self.agrees() {
            return base;
        }
        match (self.difference(), self.allowed()) {
            // "yes vs no" says it all: a flag is not apart by an amount.
            (Some(_), Some(_)) if self.unit == Unit::Flag => base,
            (Some(d), Some(a)) => format!(
                "{base} (apart by {}, allowed {})",
                self.unit.amount(d),
                self.unit.amount(a)
            ),
            _ => format!("{base} (no figure to compare)"),
        }
    }
}

/// One capability's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    /// The check's name, as `--only` takes it.
    pub name: String,
    pub verdict: Verdict,
    /// What kairos is held against: "perf record -e cpu-clock -g, the same run of
    /// transitions", "the program's own measurement". Empty when not available.
    pub against: String,
    /// What was compared and how close it must be, or why it is not available, or what
    /// failed.
    pub summary: String,
    pub figures: Vec<Figure>,
}

impl Line {
    /// Judged by its figures: it agrees when every figure does (and there is one).
    pub fn judged(
        name: &str,
        against: impl Into<String>,
        summary: impl Into<String>,
        figures: Vec<Figure>,
    ) -> Line {
        let verdict = if !figures.is_empty() && figures.iter().all(Figure::agrees) {
            Verdict::Agrees
        } else {
            Verdict::Disagrees
        };
        let mut summary = summary.into();
        if figures.is_empty() {
            summary.push_str(": no figure to compare");
        }
        Line {
            name: name.into(),
            verdict,
            against: against.into(),
            summary,
            figures,
        }
    }

    pub fn not_available(name: &str, reason: impl Into<String>) -> Line {
        Line {
            name: name.into(),
            verdict: Verdict::NotAvailable,
            against: String::new(),
            summary: reason.into(),
            figures: Vec::new(),
        }
    }

    /// Kairos failed, or said it cannot, where the reference shows it could.
    pub fn disagrees(name: &str, against: impl Into<String>, what: impl Into<String>) -> Line {
        Line {
            name: name.into(),
            verdict: Verdict::Disagrees,
            against: against.into(),
            summary: what.into(),
            figures: Vec::new(),
        }
    }

    /// The figures in one run of text: disagreeing ones first, so they are seen.
    pub fn figures_text(&self) -> String {
        let (bad, good): (Vec<&Figure>, Vec<&Figure>) =
            self.figures.iter().partition(|f| !f.agrees());
        bad.into_iter()
            .chain(good)
            .map(Figure::describe)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The middle value (the mean of the two middle ones for an even count); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The rate of a series while the workload ran: the median of the intervals at or above
/// half the highest. Both series of a comparison cover the workload's run, but with
/// different idle ends (start-up and the import after it), which this leaves out.
pub fn busy_rate(rates: &[f64]) -> Option<f64> {
    let max = rates
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::max);
    if !max.is_finite() || max <= 0.0 {
        return None;
    }
    let busy: Vec<f64> = rates.iter().copied().filter(|&r| r >= max / 2.0).collect();
    median(&busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(what: &str, k: f64, r: f64, tol: f64) -> Figure {
        Figure::new(
            what,
            Unit::Percent,
            Some(k),
            Some(r),
            Tolerance::Absolute(tol),
        )
    }

    #[test]
    fn a_figure_agrees_within_its_tolerance_and_not_beyond() {
        assert!(pct("F2 self", 29.5, 29.9, 2.0).agrees());
        assert!(
            pct("F2 self", 31.9, 29.9, 2.0).agrees(),
            "the bound itself is within"
        );
        assert!(!pct("F2 self", 32.0, 29.9, 2.0).agrees());
        let rel = Figure::new(
            "syscalls",
            Unit::Count,
            Some(20041.0),
            Some(20042.0),
            Tolerance::Relative {
                fraction: 0.01,
                floor: 20.0,
            },
        );
        assert!(rel.agrees());
        assert_eq!(rel.allowed(), Some(200.42));
        // The floor holds for small references.
        let small = Figure::new(
            "faults",
            Unit::Count,
            Some(35.0),
            Some(20.0),
            Tolerance::Relative {
                fraction: 0.01,
                floor: 20.0,
            },
        );
        assert!(small.agrees());
        let off = Figure::new(
            "faults",
            Unit::Count,
            Some(41.0),
            Some(20.0),
            Tolerance::Relative {
                fraction: 0.01,
                floor: 20.0,
            },
        );
        assert!(!off.agrees());
    }

    #[test]
    fn a_missing_or_broken_figure_never_agrees() {
        let none = Figure::new(
            "x",
            Unit::Count,
            None,
            Some(1.0),
            Tolerance::Absolute(100.0),
        );
        assert!(!none.agrees());
        assert!(
            none.describe().contains("no figure to compare"),
            "{}",
            none.describe()
        );
        let nan = Figure::new(
            "x",
            Unit::Count,
            Some(f64::NAN),
            Some(1.0),
            Tolerance::Absolute(100.0),
        );
        assert!(!nan.agrees());
        let no_ref = Figure::new(
            "x",
            Unit::Count,
            Some(1.0),
            None,
            Tolerance::Absolute(100.0),
        );
        assert!(!no_ref.agrees());
    }

    #[test]
    fn a_line_agrees_only_when_every_figure_does() {
        let l = Line::judged(
            "cpu-clock",
            "perf",
            "shares",
            vec![pct("a", 1.0, 1.5, 2.0), pct("b", 10.0, 10.1, 2.0)],
        );
        assert_eq!(l.verdict, Verdict::Agrees);
        let l = Line::judged(
            "cpu-clock",
            "perf",
            "shares",
            vec![pct("a", 1.0, 1.5, 2.0), pct("b", 10.0, 14.0, 2.0)],
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
        // The disagreeing figure comes first, with both figures and how far apart they are.
        assert_eq!(
            l.figures_text(),
            "b 10.0% vs 14.0% (apart by 4.0 points, allowed 2.0 points); a 1.0% vs 1.5%"
        );
        // Nothing compared is no agreement.
        let l = Line::judged("cpu-clock", "perf", "shares", Vec::new());
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(l.summary.ends_with("no figure to compare"));
    }

    #[test]
    fn share_tolerance_widens_with_few_samples_and_keeps_its_floor() {
        // 14,000 samples each side at 30%: 3 sigma is 1.6 points, under the 2-point floor.
        assert_eq!(
            share_tolerance(30.0, 14_000, 14_000, 2.0),
            Tolerance::Absolute(2.0)
        );
        // 300 samples each side: about 11 points.
        let Tolerance::Absolute(t) = share_tolerance(30.0, 300, 300, 2.0) else {
            unreachable!()
        };
        assert!((t - 11.2).abs() < 0.1, "{t}");
        // Against an exact reference only kairos's own samples count: 2,000 at 50% is 3.4.
        let Tolerance::Absolute(t) = share_tolerance(50.0, 2_000, 0, 3.0) else {
            unreachable!()
        };
        assert!((t - 3.35).abs() < 0.01, "{t}");
        // No samples at all: the widest, but finite.
        let Tolerance::Absolute(t) = share_tolerance(0.0, 0, 0, 3.0) else {
            unreachable!()
        };
        assert!(t.is_finite() && t >= 100.0, "{t}");
    }

    #[test]
    fn busy_rate_leaves_out_the_idle_ends() {
        // 3 idle ticks, 8 busy ones around 10, 2 idle ones: the busy median.
        let r = [
            0.1, 0.2, 5.0, 10.0, 10.2, 9.8, 10.1, 9.9, 10.3, 10.0, 9.7, 0.1, 0.0,
        ];
        assert_eq!(busy_rate(&r), Some(10.0));
        assert_eq!(busy_rate(&[]), None);
        assert_eq!(busy_rate(&[0.0, 0.0]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }

    #[test]
    fn units_print_as_a_reader_expects() {
        assert_eq!(Unit::BytesPerSecond.value(12.345e9), "12.35 GB/s");
        assert_eq!(Unit::Flag.value(1.0), "yes");
        assert_eq!(Unit::Flag.value(0.0), "no");
        assert_eq!(Unit::Count.value(20041.0), "20041");
        assert_eq!(
            Tolerance::Relative {
                fraction: 0.01,
                floor: 20.0
            }
            .describe(Unit::Count),
            "within 1% (at least 20)"
        );
        assert_eq!(Tolerance::Absolute(0.0).describe(Unit::Flag), "exactly");
        assert_eq!(
            Tolerance::Absolute(2.0).describe(Unit::Percent),
            "within 2.0 points"
        );
        assert_eq!(Verdict::Disagrees.text(), "DISAGREES");
        assert_eq!(Verdict::NotAvailable.key(), "not available");
    }
}
