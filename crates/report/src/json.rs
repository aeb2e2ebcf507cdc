//! JSON rendering: an array of objects keyed by column name, one object per line.
//!
//! Written by hand rather than through `serde_json::Value` so that keys keep column
//! order (serde_json's map sorts them unless a workspace-wide feature is switched on).
//! Keys are unique in every object written (see [`keys`]): JSON readers keep only one of
//! a repeated key, so a repeated key would lose data without a word.

use crate::csv::{machine_text, rounded, PERCENT_DECIMALS};
use crate::table::{Cell, Column, Table};

impl Table {
    /// JSON array of row objects keyed by column name (without unit, see [`keys`]);
    /// numbers are JSON numbers (durations integer ns, percentages percentage points),
    /// `Empty` is `null`.
    pub fn to_json(&self) -> String {
        let keys = keys(&self.columns);
        let names: Vec<&str> = keys.iter().map(String::as_str).collect();
        let mut out = String::from("[");
        for (i, r) in self.rows.iter().enumerate() {
            out.push_str(if i == 0 { "\n  " } else { ",\n  " });
            out.push_str(&row_object(&names, r));
        }
        out.push_str(if self.rows.is_empty() { "]\n" } else { "\n]\n" });
        out
    }
}

/// The JSON key of each column: its name; columns sharing a name are told apart by their
/// header (`Time (ms)`, `Time (%)`), and any still alike by their position (`Time #2`).
pub(crate) fn keys(columns: &[Column]) -> Vec<String> {
    let count = |keys: &[String], k: &str| keys.iter().filter(|x| x.as_str() == k).count();
    let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    let headers: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if count(&names, &c.name) > 1 {
                c.header()
            } else {
                names[i].clone()
            }
        })
        .collect();
    let mut out: Vec<String> = Vec::with_capacity(columns.len());
    for h in &headers {
        let mut k = h.clone();
        let mut n = 1;
        while out.contains(&k) || (n > 1 && headers.contains(&k)) {
            n += 1;
            k = format!("{h} #{n}");
        }
        out.push(k);
    }
    out
}

/// `{"k": v, ...}` for one row.
pub(crate) fn row_object(names: &[&str], row: &[Cell]) -> String {
    let mut out = String::from("{");
    for (c, name) in names.iter().enumerate() {
        if c > 0 {
            out.push_str(", ");
        }
        out.push_str(&string(name));
        out.push_str(": ");
        out.push_str(&value(Table::cell(row, c)));
    }
    out.push('}');
    out
}

/// JSON text of one cell.
pub(crate) fn value(cell: &Cell) -> String {
    match cell {
        Cell::Text(s) => string(s),
        Cell::Int(_) | Cell::UInt(_) | Cell::Duration { .. } => machine_text(cell),
        Cell::Float { value, decimals } => number(*value, *decimals as usize),
        Cell::Percent(p) => number(*p, PERCENT_DECIMALS),
        Cell::Empty => "null".to_string(),
    }
}

/// A float rounded to `decimals`, in serde_json's shortest form; NaN and infinities,
/// which JSON cannot express, become `null`.
fn number(v: f64, decimals: usize) -> String {
    let r: f64 = rounded(v, decimals).parse().unwrap_or(f64::NAN);
    serde_json::Number::from_f64(r).map_or_else(|| "null".to_string(), |n| n.to_string())
}

/// A JSON string literal.
pub(crate) fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Column;

    #[test]
    fn rows_become_objects_in_column_order() {
        let mut t = Table::new(vec![
            Column::left("Zeta"),
            Column::right("Alpha").with_unit("ms"),
            Column::right("P"),
            Column::right("F"),
        ]);
        t.push_row(vec![
            Cell::text("a\"b\\c\n\u{1}"),
            Cell::ns(42),
            Cell::Percent(33.333333333),
            Cell::float(f64::INFINITY, 2),
        ]);
        t.push_row(vec![Cell::Int(-1), Cell::UInt(u64::MAX), Cell::Empty]);
        let json = t.to_json();
        assert_eq!(
            json,
            "[\n  {\"Zeta\": \"a\\\"b\\\\c\\n\\u0001\", \"Alpha\": 42, \"P\": 33.3333, \"F\": null},\n  {\"Zeta\": -1, \"Alpha\": 18446744073709551615, \"P\": null, \"F\": null}\n]\n"
        );
        // And it is valid JSON that round-trips through a real parser.
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid json");
        assert_eq!(v[0]["Zeta"], "a\"b\\c\n\u{1}");
        assert_eq!(v[0]["P"], 33.3333);
    }

    #[test]
    fn repeated_column_names_become_distinct_keys() {
        let cols = vec![
            Column::right("Time").with_unit("ms"),
            Column::right("Time").with_unit("%"),
            Column::left("A"),
            Column::left("A"),
            Column::left("A #2"),
            Column::left("B"),
        ];
        assert_eq!(
            keys(&cols),
            ["Time (ms)", "Time (%)", "A", "A #3", "A #2", "B"]
        );
        let mut t = Table::new(cols);
        t.push_row(vec![Cell::UInt(1), Cell::UInt(2), Cell::text("x")]);
        crate::strict::check_json(&t.to_json()).expect("unique keys");
    }

    #[test]
    fn empty_table_is_empty_array() {
        assert_eq!(Table::new(vec![Column::left("A")]).to_json(), "[]\n");
        let v: serde_json::Value =
            serde_json::from_str(&Table::default().to_json()).expect("valid json");
        assert!(v.as_array().is_some_and(|a| a.is_empty()));
    }
}
