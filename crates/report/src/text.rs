//! Aligned plain-text rendering for terminals: value cells may be cut with `…`,
//! sentences (sentence columns, notes) never are: they wrap to the layout's line width.

use crate::layout::{text_layout, width, wrap, wrap_lines, TextLayout, MIN_SENTENCE_WIDTH};
use crate::table::{Align, Cell, ColumnKind, Table};

/// Separator between columns.
const GAP: &str = "  ";

/// A note's continuation lines are indented this much, so that notes stay apart.
pub(crate) const NOTE_INDENT: &str = "  ";

impl Table {
    /// Text rendering in the process's layout ([`crate::text_layout`]).
    pub fn to_text(&self) -> String {
        self.to_text_with(&text_layout())
    }

    /// Text rendering with value cells cut at `max_width` characters (0: never), unless
    /// the process's layout is wide; sentences wrap to its line width.
    pub fn to_text_width(&self, max_width: usize) -> String {
        self.to_text_with(&with_max_cell(max_width))
    }

    /// Text rendering: title, header, a rule line, rows, then the notes. Cells of value
    /// columns (and their headers) longer than `layout.max_cell` are cut with `…`;
    /// sentence columns and notes are never cut but wrapped to `layout.width`.
    pub fn to_text_with(&self, layout: &TextLayout) -> String {
        let mut out = String::new();
        if let Some(t) = &self.title {
            out.push_str(t);
            out.push('\n');
        }
        if !self.columns.is_empty() {
            let n = self.columns.len();
            let sentence: Vec<bool> = self
                .columns
                .iter()
                .map(|c| c.kind == ColumnKind::Sentence)
                .collect();
            let cut = |s: String, c: usize| {
                if sentence[c] {
                    s
                } else {
                    truncate(&s, layout.max_cell)
                }
            };
            let units: Vec<DurUnit> = (0..n)
                .map(|c| DurUnit::for_values(self.rows.iter().map(|r| Table::cell(r, c))))
                .collect();
            let header: Vec<String> = (0..n).map(|c| cut(self.columns[c].header(), c)).collect();
            let body: Vec<Vec<String>> = self
                .rows
                .iter()
                .map(|r| {
                    (0..n)
                        .map(|c| cut(cell_text(Table::cell(r, c), units[c]), c))
                        .collect()
                })
                .collect();
            let natural: Vec<usize> = (0..n)
                .map(|c| {
                    body.iter()
                        .map(|r| width(&r[c]))
                        .chain([width(&header[c])])
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            let mut widths = fit_sentences(&natural, &header, &sentence, layout.width);
            // Each row's cells as lines: a sentence longer than its column wraps, and the
            // row takes as many lines as its longest; its values stay on the first.
            let rows: Vec<Vec<Vec<String>>> = body
                .iter()
                .map(|r| {
                    (0..n)
                        .map(|c| {
                            if sentence[c] && width(&r[c]) > widths[c] {
                                wrap_lines(&r[c], widths[c])
                            } else {
                                vec![r[c].clone()]
                            }
                        })
                        .collect()
                })
                .collect();
            // A wrapped column is as wide as its longest line, not the room it was given.
            for c in (0..n).filter(|&c| sentence[c]) {
                widths[c] = rows
                    .iter()
                    .flat_map(|r| r[c].iter().map(|l| width(l)))
                    .chain([width(&header[c])])
                    .max()
                    .unwrap_or(0);
            }
            let aligns: Vec<Align> = self.columns.iter().map(|c| c.align).collect();
            push_line(&mut out, &header, &widths, &aligns);
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            push_line(&mut out, &rule, &widths, &aligns);
            for cells in &rows {
                let height = cells.iter().map(Vec::len).max().unwrap_or(1);
                for k in 0..height {
                    let line: Vec<String> = cells
                        .iter()
                        .map(|c| c.get(k).cloned().unwrap_or_default())
                        .collect();
                    push_line(&mut out, &line, &widths, &aligns);
                }
            }
            if self.rows.is_empty() {
                out.push_str("(no data)\n");
            }
        }
        for note in &self.notes {
            out.push_str(&wrap(note, layout.width, "", NOTE_INDENT));
        }
        out
    }
}

/// The process's layout with value cells cut at `max_cell` (0: never), unless it is wide.
pub(crate) fn with_max_cell(max_cell: usize) -> TextLayout {
    let l = text_layout();
    TextLayout {
        max_cell: if l.is_wide() { 0 } else { max_cell },
        ..l
    }
}

/// Column widths: value columns as wide as their widest cell; sentence columns share
/// what is left of `line` (each at least [`MIN_SENTENCE_WIDTH`] and its header, at most
/// its widest sentence), the narrower ones first so that none takes more than it needs.
fn fit_sentences(
    natural: &[usize],
    header: &[String],
    sentence: &[bool],
    line: usize,
) -> Vec<usize> {
    let mut widths = natural.to_vec();
    let values: usize = (0..natural.len())
        .filter(|&c| !sentence[c])
        .map(|c| natural[c])
        .sum();
    let gaps = GAP.len() * natural.len().saturating_sub(1);
    let mut left = line.saturating_sub(values + gaps);
    let mut order: Vec<usize> = (0..natural.len()).filter(|&c| sentence[c]).collect();
    order.sort_by_key(|&c| natural[c]);
    let mut count = order.len();
    for c in order {
        let fair = left / count.max(1);
        let w = natural[c].min(fair.max(MIN_SENTENCE_WIDTH).max(width(&header[c])));
        widths[c] = w;
        left = left.saturating_sub(w);
        count -= 1;
    }
    widths
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

    /// A table of lines with their fix, as the memory-access reports have.
    fn fixes() -> Table {
        let mut t = Table::new(vec![
            Column::left("Line"),
            Column::left("Object"),
            Column::right("Threads"),
            Column::sentence("Fix"),
        ])
        .with_title("Cache lines");
        t.push_row(vec![
            Cell::text("0x7f00"),
            Cell::text("counters_of_every_worker_thread_in_the_program (512 B)"),
            Cell::UInt(2),
            Cell::text("pad each thread's counter to its own 64-byte line: thread 101 writes bytes 0..7, thread 102 bytes 8..15"),
        ]);
        t.push_row(vec![
            Cell::text("0x7f40"),
            Cell::text("queue"),
            Cell::UInt(3),
            Cell::text("none"),
        ]);
        t.push_note("One line with false sharing. False sharing: two or more threads at the same time on disjoint bytes of a line, at least one writing.");
        t
    }

    #[test]
    fn sentences_wrap_within_the_width_and_are_never_cut() {
        let layout = TextLayout {
            width: 80,
            max_cell: 20,
        };
        let text = fixes().to_text_with(&layout);
        let expected = "\
Cache lines
Line    Object                Threads  Fix
------  --------------------  -------  -------------------------------------
0x7f00  counters_of_every_w…        2  pad each thread's counter to its own
                                       64-byte line: thread 101 writes bytes
                                       0..7, thread 102 bytes 8..15
0x7f40  queue                       3  none
One line with false sharing. False sharing: two or more threads at the same
  time on disjoint bytes of a line, at least one writing.
";
        assert_eq!(text, expected);
        // Every word of every sentence is there, none cut.
        let words: Vec<&str> = text.split_whitespace().collect();
        for sentence in [&fixes().rows[0][3], &Cell::text(fixes().notes[0].clone())] {
            let Cell::Text(s) = sentence else {
                unreachable!()
            };
            for w in s.split_whitespace() {
                assert!(words.contains(&w), "{w} missing:\n{text}");
            }
        }
        assert!(!text.contains("bytes…") && !text.contains("writ…"));
    }

    #[test]
    fn wide_shows_cells_whole() {
        let wide = TextLayout::new(80, true);
        let text = fixes().to_text_with(&wide);
        assert!(
            text.contains("counters_of_every_worker_thread_in_the_program (512 B)"),
            "{text}"
        );
        assert!(!text.contains('…'), "{text}");
        // Still wrapped: the value columns took the width, the sentence its minimum.
        assert!(text.contains("2  pad each thread's\n"), "{text}");
        assert!(text.contains("   thread 102 bytes 8..15\n"), "{text}");
        // And in a wide enough line the sentence stays on its row.
        let text = fixes().to_text_with(&TextLayout::new(200, true));
        assert!(text.contains("pad each thread's counter to its own 64-byte line: thread 101 writes bytes 0..7, thread 102 bytes 8..15"), "{text}");
        assert_eq!(text.lines().count(), 6);
    }

    #[test]
    fn a_sentence_column_is_never_narrower_than_its_minimum() {
        let mut t = Table::new(vec![Column::left("Name"), Column::sentence("Why")]);
        t.push_row(vec![
            Cell::text("x".repeat(90)),
            Cell::text("because the name took the whole line and more"),
        ]);
        let text = t.to_text_with(&TextLayout::new(80, true));
        let rows: Vec<&str> = text.lines().skip(2).collect();
        assert_eq!(
            rows[0],
            format!("{}  because the name took", "x".repeat(90))
        );
        assert_eq!(
            rows[1],
            format!("{}the whole line and more", " ".repeat(92))
        );
    }

    #[test]
    fn unit_in_header() {
        let t = Table::new(vec![Column::right("Start").with_unit("ms")]);
        assert!(t.to_text().starts_with("Start (ms)\n"));
    }
}
