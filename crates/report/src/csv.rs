//! CSV rendering (RFC 4180 quoting, `\n` line ends).

use crate::table::{Cell, Table};

impl Table {
    /// CSV: one header line (column headers with units), one line per row. Title and
    /// notes are left out so the output loads straight into a spreadsheet or DataFrame.
    /// Durations are integer ns, percentages percentage points.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|c| quote(&c.header())).collect();
        push_record(&mut out, &header);
        for r in &self.rows {
            let fields: Vec<String> = (0..self.columns.len())
                .map(|c| quote(&machine_text(Table::cell(r, c))))
                .collect();
            push_record(&mut out, &fields);
        }
        out
    }
}

fn push_record(out: &mut String, fields: &[String]) {
    if fields.is_empty() {
        return;
    }
    out.push_str(&fields.join(","));
    out.push('\n');
}

/// RFC 4180: a field containing a comma, quote, CR or LF is enclosed in quotes and its
/// quotes doubled. Leading/trailing blanks are quoted too, since some readers trim them.
pub(crate) fn quote(s: &str) -> String {
    let needs = s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ');
    if needs {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The exact machine value of a cell, shared by CSV and (for numbers) JSON.
pub(crate) fn machine_text(cell: &Cell) -> String {
    match cell {
        Cell::Text(s) => s.clone(),
        Cell::Int(v) => v.to_string(),
        Cell::UInt(v) => v.to_string(),
        Cell::Duration { ns } => ns.to_string(),
        Cell::Float { value, decimals } => rounded(*value, *decimals as usize),
        Cell::Percent(p) => rounded(*p, PERCENT_DECIMALS),
        Cell::Empty => String::new(),
    }
}

/// Machine formats keep 4 decimals of a percentage: tiny shares (an intermittent function
/// in a long run) must not round to zero, and fixed rounding keeps golden files stable.
pub(crate) const PERCENT_DECIMALS: usize = 4;

pub(crate) fn rounded(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Column;

    #[test]
    fn quotes_per_rfc4180() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
        assert_eq!(quote(" pad"), "\" pad\"");
        assert_eq!(quote(""), "");
    }

    #[test]
    fn renders_machine_values() {
        let mut t = Table::new(vec![
            Column::left("Function"),
            Column::right("Time"),
            Column::right("Share"),
            Column::right("Start").with_unit("ms"),
            Column::right("N"),
        ]);
        t.push_row(vec![
            Cell::text("operator<<(a, b)"),
            Cell::ns(1_500_000),
            Cell::Percent(12.345678),
            Cell::float(1.0, 3),
            Cell::Int(-2),
        ]);
        t.push_row(vec![Cell::Empty]);
        t.push_note("notes are not part of CSV");
        assert_eq!(t.to_csv(), "Function,Time,Share,Start (ms),N\n\"operator<<(a, b)\",1500000,12.3457,1.000,-2\n,,,,\n");
    }

    #[test]
    fn no_columns_no_output() {
        assert_eq!(Table::default().to_csv(), "");
    }
}
