//! Aligned plain-text rendering for terminals.

use crate::table::{Align, Cell, Table};

/// Default maximum width of a text cell before it is truncated with `…`: wide enough for
/// most C++/Rust function names, narrow enough that numbers stay on an 160-column screen.
pub const DEFAULT_MAX_WIDTH: usize = 60;

/// Separator between columns.
const GAP: &str = "  ";

impl Table {
    /// Text rendering with [`DEFAULT_MAX_WIDTH`].
    pub fn to_text(&self) -> String {
        self.to_text_width(DEFAULT_MAX_WIDTH)
    }

    /// Text rendering: title, header, a rule line, rows (text cells and headers longer
    /// than `max_width` characters are cut with `…`; 0 means no limit), then the notes.
    pub fn to_text_width(&self, max_width: usize) -> String {
        let mut out = String::new();
        if let Some(t) = &self.title {
            out.push_str(t);
            out.push('\n');
        }
        if !self.columns.is_empty() {
            let units: Vec<DurUnit> = (0..self.columns.len())
                .map(|c| DurUnit::for_values(self.rows.iter().map(|r| Table::cell(r, c))))
                .collect();
            let header: Vec<String> = self
                .columns
                .iter()
                .map(|c| truncate(&c.header(), max_width))
                .collect();
            let body: Vec<Vec<String>> = self
                .rows
                .iter()
                .map(|r| {
                    (0..self.columns.len())
                        .map(|c| truncate(&cell_text(Table::cell(r, c), units[c]), max_width))
                        .collect()
                })
                .collect();
            let widths: Vec<usize> = (0..self.columns.len())
                .map(|c| {
                    body.iter()
                        .map(|r| width(&r[c]))
                        .chain([width(&header[c])])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let aligns: Vec<Align> = self.columns.iter().map(|c| c.align).collect();
            push_line(&mut out, &header, &widths, &aligns);
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            push_line(&mut out, &rule, &widths, &aligns);
            for r in &body {
                push_line(&mut out, r, &widths, &aligns);
            }
            if self.rows.is_empty() {
                out.push_str("(no data)\n");
            }
        }
        for n in &self.notes {
            out.push_str(n);
            out.push('\n');
        }
        out
    }
}

fn push_line(out: &mut String, cells: &[String], widths: &[usize], aligns: &[Align]) {
    let mut line = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            line.push_str(GAP);
        }
        let pad = widths[i].saturating_sub(width(c));
        match aligns[i] {
            Align::Left => {
                line.push_str(c);
                line.extend(std::iter::repeat_n(' ', pad));
            }
            Align::Right => {
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(c);
            }
        }
    }
    // Trailing blanks would make golden files and `diff` output noisy.
    out.push_str(line.trim_end());
    out.push('\n');
}

/// Width in characters (not display columns: East Asian wide characters count as one).
fn width(s: &str) -> usize {
    s.chars().count()
}

/// Cuts `s` to `max` characters, the last being `…`. `max == 0` means unlimited.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if max == 0 || width(s) <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

/// The unit a column of durations is shown in: one unit per column so values compare
/// at a glance, chosen from the largest value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DurUnit {
    Ns,
    Us,
    Ms,
    S,
}

impl DurUnit {
    pub(crate) fn for_values<'a>(cells: impl Iterator<Item = &'a Cell>) -> DurUnit {
        let max = cells
            .filter_map(|c| {
                if let Cell::Duration { ns } = c {
                    Some(*ns)
                } else {
                    None
                }
            })
            .max()
            .unwrap_or(0);
        match max {
            m if m >= 1_000_000_000 => DurUnit::S,
            m if m >= 1_000_000 => DurUnit::Ms,
            m if m >= 1_000 => DurUnit::Us,
            _ => DurUnit::Ns,
        }
    }
}

/// Text of one cell.
pub(crate) fn cell_text(cell: &Cell, unit: DurUnit) -> String {
    match cell {
        Cell::Text(s) => s.clone(),
        Cell::Int(v) => v.to_string(),
        Cell::UInt(v) => v.to_string(),
        Cell::Float { value, decimals } => fmt_float(*value, *decimals as usize),
        Cell::Percent(p) => format!("{}%", fmt_float(*p, 2)),
        Cell::Duration { ns } => {
            let v = *ns as f64;
            match unit {
                DurUnit::Ns => format!("{ns} ns"),
                DurUnit::Us => format!("{:.3} us", v / 1e3),
                DurUnit::Ms => format!("{:.3} ms", v / 1e6),
                DurUnit::S => format!("{:.3} s", v / 1e9),
            }
        }
        Cell::Empty => String::new(),
    }
}

fn fmt_float(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        v.to_string() // "NaN", "inf", "-inf"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Column, Table};

    fn sample() -> Table {
        let mut t = Table::new(vec![
            Column::left("Function"),
            Column::right("Samples"),
            Column::right("Time"),
            Column::right("Share"),
        ])
        .with_title("Hot");
        t.push_row(vec![
            Cell::text("main"),
            Cell::UInt(12),
            Cell::ns(12_000_000),
            Cell::Percent(60.0),
        ]);
        t.push_row(vec![
            Cell::text("a_really_long_function_name"),
            Cell::UInt(8),
            Cell::ns(500_000),
            Cell::Percent(40.0),
        ]);
        t.push_note("2 groups");
        t
    }

    #[test]
    fn aligns_columns_with_rule_and_notes() {
        let expected = "\
Hot
Function                     Samples       Time   Share
---------------------------  -------  ---------  ------
main                              12  12.000 ms  60.00%
a_really_long_function_name        8   0.500 ms  40.00%
2 groups
";
        assert_eq!(sample().to_text_width(0), expected);
    }

    #[test]
    fn truncates_long_text_with_ellipsis() {
        let text = sample().to_text_width(10);
        assert!(text.contains("a_really_…  "), "{text}");
        assert!(text.lines().all(|l| !l.ends_with(' ')));
        assert_eq!(truncate("abc", 1), "…");
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("äöüß", 3), "äö…");
    }

    #[test]
    fn empty_and_short_rows_do_not_panic() {
        let mut t = Table::new(vec![Column::left("A"), Column::right("B")]);
        assert_eq!(t.to_text(), "A  B\n-  -\n(no data)\n");
        t.push_row(vec![Cell::text("x")]);
        t.push_row(vec![Cell::text("y"), Cell::Int(-3), Cell::Int(99)]);
        assert_eq!(t.to_text(), "A   B\n-  --\nx\ny  -3\n");
        assert_eq!(Table::default().to_text(), "");
    }

    #[test]
    fn formats_every_cell_kind() {
        let u = DurUnit::Ns;
        assert_eq!(cell_text(&Cell::float(1.23456, 2), u), "1.23");
        assert_eq!(cell_text(&Cell::float(f64::NAN, 2), u), "NaN");
        assert_eq!(cell_text(&Cell::Percent(0.004), u), "0.00%");
        assert_eq!(cell_text(&Cell::Empty, u), "");
        assert_eq!(cell_text(&Cell::ns(999), u), "999 ns");
        assert_eq!(cell_text(&Cell::ns(1500), DurUnit::Us), "1.500 us");
        assert_eq!(cell_text(&Cell::ns(2_500_000_000), DurUnit::S), "2.500 s");
        let cells = [Cell::ns(5), Cell::ns(2_000_000), Cell::Empty];
        assert_eq!(DurUnit::for_values(cells.iter()), DurUnit::Ms);
    }

    #[test]
    fn unit_in_header() {
        let t = Table::new(vec![Column::right("Start").with_unit("ms")]);
        assert!(t.to_text().starts_with("Start (ms)\n"));
    }
}
