//! A document: several tables and key/value sections, e.g. the summary report.

use crate::csv::quote;
use crate::json;
use crate::table::{Cell, Column, Table};
use crate::text::{cell_text, truncate, DurUnit, DEFAULT_MAX_WIDTH};

/// Key/value pairs under a title ("Elapsed: 1.2 s"). Values are cells so that JSON keeps
/// numbers as numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    pub title: Option<String>,
    pub entries: Vec<(String, Cell)>,
}

impl Section {
    pub fn new(title: impl Into<String>) -> Section {
        Section {
            title: Some(title.into()),
            entries: Vec::new(),
        }
    }
    /// Appends an entry.
    pub fn push(&mut self, key: impl Into<String>, value: Cell) {
        self.entries.push((key.into(), value));
    }
    /// The section as a two-column Key/Value table (used for CSV).
    fn as_table(&self) -> Table {
        let mut t = Table::new(vec![Column::left("Key"), Column::left("Value")]);
        t.title = self.title.clone();
        t.rows = self
            .entries
            .iter()
            .map(|(k, v)| vec![Cell::text(k.clone()), v.clone()])
            .collect();
        t
    }
}

/// One part of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Section(Section),
    Table(Table),
}

/// Several blocks under an optional title.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    pub title: Option<String>,
    pub blocks: Vec<Block>,
}

impl Document {
    pub fn new(title: impl Into<String>) -> Document {
        Document {
            title: Some(title.into()),
            blocks: Vec::new(),
        }
    }
    pub fn push_table(&mut self, t: Table) {
        self.blocks.push(Block::Table(t));
    }
    pub fn push_section(&mut self, s: Section) {
        self.blocks.push(Block::Section(s));
    }

    /// Renders in `format`.
    pub fn render(&self, format: crate::Format) -> String {
        match format {
            crate::Format::Text => self.to_text(),
            crate::Format::Csv => self.to_csv(),
            crate::Format::Json => self.to_json(),
        }
    }

    /// Text with [`DEFAULT_MAX_WIDTH`].
    pub fn to_text(&self) -> String {
        self.to_text_width(DEFAULT_MAX_WIDTH)
    }

    /// Text: the title, then each block separated by a blank line; section entries as
    /// aligned `key: value` lines.
    pub fn to_text_width(&self, max_width: usize) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.title {
            parts.push(format!("{t}\n{}\n", "=".repeat(t.chars().count())));
        }
        for b in &self.blocks {
            parts.push(match b {
                Block::Table(t) => t.to_text_width(max_width),
                Block::Section(s) => section_text(s, max_width),
            });
        }
        parts.join("\n")
    }

    /// CSV: each block as its own CSV table (sections as Key,Value), preceded by a line
    /// holding its title, blocks separated by a blank line.
    pub fn to_csv(&self) -> String {
        let mut parts = Vec::new();
        for b in &self.blocks {
            let t = match b {
                Block::Table(t) => t.clone(),
                Block::Section(s) => s.as_table(),
            };
            let mut p = String::new();
            if let Some(title) = &t.title {
                p.push_str(&quote(title));
                p.push('\n');
            }
            p.push_str(&t.to_csv());
            parts.push(p);
        }
        parts.join("\n")
    }

    /// JSON: `{"title": ..., "blocks": [{"kind": "section", "title": ..., "values": {k: v}},
    /// {"kind": "table", "title": ..., "rows": [...], "notes": [...]}]}`.
    pub fn to_json(&self) -> String {
        let opt = |s: &Option<String>| {
            s.as_deref()
                .map_or_else(|| "null".to_string(), json::string)
        };
        let mut out = format!("{{\n\"title\": {},\n\"blocks\": [", opt(&self.title));
        for (i, b) in self.blocks.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            match b {
                Block::Section(s) => {
                    let keys: Vec<&str> = s.entries.iter().map(|(k, _)| k.as_str()).collect();
                    let vals: Vec<Cell> = s.entries.iter().map(|(_, v)| v.clone()).collect();
                    out.push_str(&format!(
                        "{{\"kind\": \"section\", \"title\": {}, \"values\": {}}}",
                        opt(&s.title),
                        json::row_object(&keys, &vals)
                    ));
                }
                Block::Table(t) => {
                    let notes: Vec<String> = t.notes.iter().map(|n| json::string(n)).collect();
                    let rows = t.to_json();
                    out.push_str(&format!(
                        "{{\"kind\": \"table\", \"title\": {}, \"notes\": [{}], \"rows\": {}}}",
                        opt(&t.title),
                        notes.join(", "),
                        rows.trim_end()
                    ));
                }
            }
        }
        out.push_str(if self.blocks.is_empty() {
            "]\n}\n"
        } else {
            "\n]\n}\n"
        });
        out
    }
}

fn section_text(s: &Section, max_width: usize) -> String {
    let mut out = String::new();
    if let Some(t) = &s.title {
        out.push_str(t);
        out.push('\n');
    }
    let key_w = s
        .entries
        .iter()
        .map(|(k, _)| k.chars().count() + 1)
        .max()
        .unwrap_or(0);
    for (k, v) in &s.entries {
        // Each value picks its own duration unit: section values are not compared.
        let unit = DurUnit::for_values(std::iter::once(v));
        let key = format!("{k}:");
        let line = format!(
            "  {key:<key_w$}  {}",
            truncate(&cell_text(v, unit), max_width)
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Document {
        let mut d = Document::new("Summary");
        let mut s = Section::new("Run");
        s.push("Event", Cell::text("cpu-clock"));
        s.push("Elapsed", Cell::ns(1_500_000_000));
        s.push("Samples", Cell::UInt(3));
        s.push("Note", Cell::Empty);
        d.push_section(s);
        let mut t =
            Table::new(vec![Column::left("Function"), Column::right("Share")]).with_title("Top");
        t.push_row(vec![Cell::text("main"), Cell::Percent(100.0)]);
        t.push_note("1 function");
        d.push_table(t);
        d
    }

    #[test]
    fn text_has_sections_and_tables() {
        let expected = "\
Summary
=======

Run
  Event:    cpu-clock
  Elapsed:  1.500 s
  Samples:  3
  Note:

Top
Function    Share
--------  -------
main      100.00%
1 function
";
        assert_eq!(doc().to_text(), expected);
    }

    #[test]
    fn csv_blocks() {
        let expected = "Run\nKey,Value\nEvent,cpu-clock\nElapsed,1500000000\nSamples,3\nNote,\n\nTop\nFunction,Share\nmain,100.0000\n";
        assert_eq!(doc().to_csv(), expected);
    }

    #[test]
    fn json_is_valid_and_typed() {
        let json = doc().to_json();
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid json");
        assert_eq!(v["title"], "Summary");
        assert_eq!(v["blocks"][0]["kind"], "section");
        assert_eq!(v["blocks"][0]["values"]["Elapsed"], 1_500_000_000u64);
        assert!(v["blocks"][0]["values"]["Note"].is_null());
        assert_eq!(v["blocks"][1]["rows"][0]["Share"], 100.0);
        assert_eq!(v["blocks"][1]["notes"][0], "1 function");
        let empty: serde_json::Value =
            serde_json::from_str(&Document::default().to_json()).expect("valid json");
        assert!(empty["title"].is_null());
        assert_eq!(Document::default().to_text(), "");
        assert_eq!(Document::default().to_csv(), "");
    }
}
