//! The accuracy benchmark's cells, run over several seeds (issue 14 items 3 and 5).
//!
//! A cell is one trace emulated at one LBR depth and sampling interval, with or without
//! cycles. Each seed gives the emulation another sampling phase (and the synthetic
//! `spikes` trace other durations), so a cell's spread over seeds is its noise: a method
//! is *worse than plain sampling* in a cell only if its mean paired difference to `none`
//! exceeds twice the standard error of that difference and 1% of `none`'s error (a
//! trace whose error hardly moves with the phase would otherwise call a rounding
//! difference worse).

use kairos_model::Profile;
use kairos_time_assignment::Method;

use crate::decompose::{coverage, exact_cycles};
use crate::error::Result;
use crate::{emulate_lbr_with, score_with, EmulateOptions, ScoreOptions};

/// Whether records carry cycles, and which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cycles {
    No,
    /// As LBR_INFO has them: 16 bits, saturating at 65535.
    Lbr,
    /// Exact and unsaturated ([`crate::decompose::exact_cycles`]): what a known rate
    /// and a wide counter would give; not a real CPU's.
    Wide,
}

impl Cycles {
    pub fn as_str(self) -> &'static str {
        match self {
            Cycles::No => "no",
            Cycles::Lbr => "yes",
            Cycles::Wide => "exact",
        }
    }
}

/// What a cell emulates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    pub depth: usize,
    pub interval_ns: u64,
    pub cycles: Cycles,
}

/// A difference below this share of `none`'s error is no difference.
const TOLERANCE: f64 = 0.01;

/// A method's share errors (0..=1) and recalls (percent), one per seed.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodRuns {
    pub method: Method,
    pub share_error: Vec<f64>,
    pub recall: Vec<f64>,
}

/// Everything measured in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellRuns {
    pub trace: String,
    pub cell: Cell,
    pub seeds: Vec<u64>,
    /// Share of the sampled time the records cover, per seed.
    pub coverage: Vec<f64>,
    /// Events to find (delays of 100 us or more), per seed.
    pub events: Vec<usize>,
    pub methods: Vec<MethodRuns>,
}

/// Mean and sample standard deviation (0 for one value).
pub fn mean_sd(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, 0.0);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

/// Mean of `a - b` over paired runs and twice its standard error: the difference is
/// real (not noise) when |mean| exceeds the second value.
pub fn paired(a: &[f64], b: &[f64]) -> (f64, f64) {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let (m, sd) = mean_sd(&d);
    (m, 2.0 * sd / (d.len().max(1) as f64).sqrt())
}

impl CellRuns {
    pub fn get(&self, m: Method) -> Option<&MethodRuns> {
        self.methods.iter().find(|r| r.method == m)
    }

    /// Whether `m` is worse than plain sampling beyond the cell's noise (paired over seeds).
    pub fn worse_than_none(&self, m: Method) -> Option<bool> {
        let (a, b) = (self.get(m)?, self.get(Method::None)?);
        let (d, noise) = paired(&a.share_error, &b.share_error);
        Some(d > noise.max(TOLERANCE * mean_sd(&b.share_error).0))
    }

    /// Mean share error of `none` over that of `m` (2 = twice as accurate).
    pub fn gain(&self, m: Method) -> Option<f64> {
        let a = mean_sd(&self.get(m)?.share_error).0;
        let b = mean_sd(&self.get(Method::None)?.share_error).0;
        (a > 0.0).then(|| b / a)
    }
}

/// Emulates `trace(seed)` for every seed and scores `methods` (share error over 10 ms
/// buckets, recall of 100 us delays on a 100 us grid). Methods that cannot run (e.g.
/// `cycles` without cycles) are left out.
pub fn run_cell(
    name: &str,
    trace: impl Fn(u64) -> Profile,
    cell: Cell,
    seeds: &[u64],
    methods: &[Method],
) -> Result<CellRuns> {
    let mut runs = CellRuns {
        trace: name.to_string(),
        cell,
        seeds: seeds.to_vec(),
        coverage: Vec::new(),
        events: Vec::new(),
        methods: methods
            .iter()
            .map(|&method| MethodRuns {
                method,
                share_error: Vec::new(),
                recall: Vec::new(),
            })
            .collect(),
    };
    for &seed in seeds {
        let t = trace(seed);
        let o = EmulateOptions {
            cycles: cell.cycles != Cycles::No,
            seed,
            ..EmulateOptions::new(cell.interval_ns, cell.depth)
        };
        let mut e = emulate_lbr_with(&t, &o)?;
        if cell.cycles == Cycles::Wide {
            e = exact_cycles(&e, o.cpu_ghz)?;
        }
        runs.coverage.push(coverage(&e)?);
        let table = score_with(
            &e,
            &ScoreOptions {
                methods: methods.to_vec(),
                ..ScoreOptions::new(10_000_000)
            },
        )?;
        runs.events.push(table.events_total);
        for r in &mut runs.methods {
            if let (Some(m), Some(rec)) = (table.get(r.method), table.recall(r.method)) {
                r.share_error.push(m.share_error);
                r.recall.push(rec);
            }
        }
    }
    runs.methods.retain(|r| r.share_error.len() == seeds.len());
    Ok(runs)
}

/// `12.3% ±0.4`: mean and standard deviation over seeds, in percent.
fn pct(v: &[f64]) -> String {
    let (m, sd) = mean_sd(v);
    let digits = if m < 0.01 { 2 } else { 1 };
    format!("{:.*}% ±{:.*}", digits, m * 100.0, digits, sd * 100.0)
}

/// One markdown table, a row per cell: coverage, each method's share error (mean ±sd
/// over seeds; recall after it for traces with events), and whether `default` meets the
/// goals (not worse than `none` beyond noise; 2x better where records cover >= 10%).
pub fn markdown(cells: &[CellRuns], methods: &[Method], default: Method) -> String {
    let mut s = String::from("| trace | depth | interval | cycles | coverage |");
    for m in methods {
        s += &format!(" {m} |");
    }
    s += " default vs none |\n|---|---|---|---|---|";
    s += &"---|".repeat(methods.len() + 1);
    s.push('\n');
    for c in cells {
        let cov = mean_sd(&c.coverage).0;
        s += &format!(
            "| {} | {} | {} us | {} | {:.0}% |",
            c.trace,
            c.cell.depth,
            c.cell.interval_ns / 1000,
            c.cell.cycles.as_str(),
            cov * 100.0
        );
        for m in methods {
            match c.get(*m) {
                Some(r) if c.events.iter().any(|&e| e > 0) => {
                    s += &format!(" {}, {:.0}% |", pct(&r.share_error), mean_sd(&r.recall).0)
                }
                Some(r) => s += &format!(" {} |", pct(&r.share_error)),
                None => s += " – |",
            }
        }
        let verdict = match (c.worse_than_none(default), c.gain(default)) {
            (Some(true), _) => "**worse**".to_string(),
            (Some(false), Some(g)) if cov >= 0.1 => {
                format!("{g:.1}x{}", if g >= 2.0 { "" } else { " (goal 2x)" })
            }
            (Some(false), Some(g)) => format!("{g:.1}x"),
            _ => "–".to_string(),
        };
        s += &format!(" {verdict} |\n");
    }
    s
}
