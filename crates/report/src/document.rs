//! A document: several tables and key/value sections, e.g. the summary report.

use crate::csv::quote;
use crate::json;
use crate::layout::{text_layout, width, wrap_lines, TextLayout, MIN_SENTENCE_WIDTH};
use crate::table::{Cell, Column, Table};
use crate::text::{cell_text, with_max_cell, DurUnit};

/// Key/value pairs under a title ("Elapsed: 1.2 s"). Values are cells so that JSON keeps
/// numbers as numbers.
///
/// A key is one member of the JSON object whatever happens: a key pushed more than once
/// (one "Events" line per event) holds the list of its values, a JSON array in push order,
/// shown once in text with each value on its own line. Keys that may hold any number of
/// values are best pushed with [`Section::push_list`], which makes them an array always.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    pub title: Option<String>,
    pub entries: Vec<(String, Cell)>,
    /// Keys declared lists by [`Section::push_list`].
    lists: Vec<String>,
}

impl Section {
    pub fn new(title: impl Into<String>) -> Section {
        Section {
            title: Some(title.into()),
            ..Section::default()
        }
    }
    /// Appends an entry; a key already there gets one more value (see [`Section`]).
    pub fn push(&mut self, key: impl Into<String>, value: Cell) {
        self.entries.push((key.into(), value));
    }
    /// Appends the values of a key that holds a list: an array in JSON even when it has
    /// one value or none.
    pub fn push_list(&mut self, key: impl Into<String>, values: impl IntoIterator<Item = Cell>) {
        let key = key.into();
        for v in values {
            self.entries.push((key.clone(), v));
        }
        if !self.lists.contains(&key) {
            self.lists.push(key);
        }
    }
    /// Each key once, in the order of its first value, with all its values; whether it is
    /// a list. Declared lists without a value come last.
    pub fn keys(&self) -> Vec<(&str, Vec<&Cell>, bool)> {
        let mut out: Vec<(&str, Vec<&Cell>, bool)> = Vec::new();
        for (k, v) in &self.entries {
            match out.iter_mut().find(|(key, _, _)| *key == k.as_str()) {
                Some((_, values, list)) => {
                    values.push(v);
                    *list = true;
                }
                None => out.push((k.as_str(), vec![v], self.lists.contains(k))),
            }
        }
        for k in &self.lists {
            if !out.iter().any(|(key, _, _)| key == k) {
                out.push((k.as_str(), Vec::new(), true));
            }
        }
        out
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

    /// Text in the process's layout ([`crate::text_layout`]).
    pub fn to_text(&self) -> String {
        self.to_text_with(&text_layout())
    }

    /// Text with table cells cut at `max_width` characters (0: never), unless the
    /// process's layout is wide.
    pub fn to_text_width(&self, max_width: usize) -> String {
        self.to_text_with(&with_max_cell(max_width))
    }

    /// Text: the title, then each block separated by a blank line; section entries as
    /// aligned `key: value` lines whose values wrap (never cut) to `layout.width`.
    pub fn to_text_with(&self, layout: &TextLayout) -> String {
        let mut parts = Vec::new();
        if let Some(t) = &self.title {
            parts.push(format!("{t}\n{}\n", "=".repeat(t.chars().count())));
        }
        for b in &self.blocks {
            parts.push(match b {
                Block::Table(t) => t.to_text_with(layout),
                Block::Section(s) => section_text(s, layout.width),
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
                    let members: Vec<String> = s
                        .keys()
                        .into_iter()
                        .map(|(k, values, list)| {
                            let v = if list {
                                let items: Vec<String> =
                                    values.into_iter().map(json::value).collect();
                                format!("[{}]", items.join(", "))
                            } else {
                                values
                                    .first()
                                    .map_or_else(|| "null".into(), |v| json::value(v))
                            };
                            format!("{}: {v}", json::string(k))
                        })
                        .collect();
                    out.push_str(&format!(
                        "{{\"kind\": \"section\", \"title\": {}, \"values\": {{{}}}}}",
                        opt(&s.title),
                        members.join(", ")
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

/// Keys longer than this (with their colon) do not widen a section's key column, which
/// would leave its values a narrow strip: they stand on a line of their own instead.
const KEY_COLUMN_MAX: usize = 32;

fn section_text(s: &Section, line_width: usize) -> String {
    let mut out = String::new();
    if let Some(t) = &s.title {
        out.push_str(t);
        out.push('\n');
    }
    let keys = s.keys();
    let key_w = keys
        .iter()
        .map(|(k, _, _)| width(k) + 1)
        .filter(|w| *w <= KEY_COLUMN_MAX)
        .max()
        .unwrap_or(0);
    // Values are sentences as often as numbers: they wrap under themselves, never cut.
    let indent = 2 + key_w + 2;
    let room = line_width.saturating_sub(indent).max(MIN_SENTENCE_WIDTH);
    for (k, values, _) in &keys {
        let key = format!("{k}:");
        let mut lines = Vec::new();
        for v in values {
            // Each value picks its own duration unit: section values are not compared.
            let unit = DurUnit::for_values(std::iter::once(*v));
            lines.extend(wrap_lines(&cell_text(v, unit), room));
        }
        if lines.is_empty() {
            lines.push(String::new());
        }
        if width(&key) > key_w {
            // A long key stands on its own line; its values go under the column.
            out.push_str(&format!("  {key}\n"));
            lines.retain(|l| !l.is_empty());
        }
        for (i, l) in lines.iter().enumerate() {
            let k = if i == 0 && width(&key) <= key_w {
                key.as_str()
            } else {
                ""
            };
            let line = format!("  {k:<key_w$}  {l}");
            out.push_str(line.trim_end());
            out.push('\n');
        }
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
    fn a_repeated_key_is_one_key_holding_its_values() {
        let mut d = Document::new("Summary");
        let mut s = Section::new("Collection");
        s.push("Events", Cell::text("cycles: 10 samples"));
        s.push("Kernel", Cell::text("6.1"));
        s.push("Events", Cell::text("instructions: 4 samples"));
        s.push_list("Notes", [Cell::text("only one")]);
        s.push_list("Empty", []);
        d.push_section(s);
        let json = d.to_json();
        crate::strict::check_json(&json).expect("no repeated key");
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid json");
        let values = &v["blocks"][0]["values"];
        assert_eq!(
            values["Events"],
            serde_json::json!(["cycles: 10 samples", "instructions: 4 samples"])
        );
        assert_eq!(values["Kernel"], "6.1");
        assert_eq!(values["Notes"], serde_json::json!(["only one"]));
        assert_eq!(values["Empty"], serde_json::json!([]));
        let keys: Vec<&String> = values.as_object().expect("object").keys().collect();
        assert_eq!(keys.len(), 4);
        let layout = TextLayout::default();
        assert_eq!(
            d.to_text_with(&layout),
            "Summary\n=======\n\nCollection\n  Events:  cycles: 10 samples\n           instructions: 4 samples\n  Kernel:  6.1\n  Notes:   only one\n  Empty:\n"
        );
        crate::strict::check_csv(&d.to_csv()).expect("valid csv");
    }

    #[test]
    fn a_long_key_does_not_narrow_the_values_of_the_others() {
        let mut s = Section::new("Collection");
        s.push("Target", Cell::text("matrix 512"));
        let long = "Left out: faults of the recording's own stack walks";
        s.push(long, Cell::text("412"));
        let mut d = Document::default();
        d.push_section(s);
        assert_eq!(
            d.to_text_with(&TextLayout::default()),
            format!("Collection\n  Target:  matrix 512\n  {long}:\n           412\n")
        );
    }

    #[test]
    fn section_values_wrap_and_are_never_cut() {
        let mut s = Section::new("Platform");
        s.push("Source", Cell::text("sysfs"));
        s.push("Note", Cell::text("no samples to place: this result holds no samples (its analysis counts, it does not sample)"));
        let mut d = Document::default();
        d.push_section(s);
        let layout = TextLayout {
            width: 60,
            max_cell: 10,
        };
        assert_eq!(
            d.to_text_with(&layout),
            "Platform\n  Source:  sysfs\n  Note:    no samples to place: this result holds no samples\n           (its analysis counts, it does not sample)\n"
        );
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
