//! Strict readers of the machine formats, for tests: JSON that a lenient parser would
//! accept while losing data (a repeated key keeps only its last value) and CSV whose
//! records disagree on their number of fields are refused with the place and the reason.
//!
//! CSV output is one or more tables separated by an empty line, each an optional title
//! line (one field), a header and rows with as many fields as the header (see
//! `Document::to_csv`); headers name their columns once.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::Format;

/// Why an output is not valid in its format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrictError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("CSV table {table}: {message}")]
    Csv { table: usize, message: String },
}

/// Checks `text` as output in `format` (text output is anything).
pub fn check(format: Format, text: &str) -> Result<(), StrictError> {
    match format {
        Format::Text => Ok(()),
        Format::Json => check_json(text),
        Format::Csv => check_csv(text),
    }
}

/// `text` is one JSON value, no object of which repeats a key.
pub fn check_json(text: &str) -> Result<(), StrictError> {
    serde_json::from_str::<Strict>(text)
        .map(|_| ())
        .map_err(|e| StrictError::Json(e.to_string()))
}

/// A JSON value read only to be checked.
struct Strict;

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            map.next_value::<Strict>()?;
        }
        Ok(Strict)
    }
}

/// `text` is CSV tables as described in the module's head, read by the `csv` crate with
/// equal field counts required.
pub fn check_csv(text: &str) -> Result<(), StrictError> {
    for (i, block) in blocks(text).into_iter().enumerate() {
        let table = i + 1;
        let err = |message: String| StrictError::Csv { table, message };
        let records = read(block, true).map_err(|e| err(e.to_string()))?;
        // A leading line of one field before a wider header is the table's title.
        let body = match records.as_slice() {
            [first, second, ..] if first.len() == 1 && second.len() > 1 => {
                let at = records_start(block, 1).ok_or_else(|| err("no header".into()))?;
                &block[at..]
            }
            _ => block,
        };
        let records = read(body, false).map_err(|e| err(e.to_string()))?;
        let Some(header) = records.first() else {
            return Err(err("no header".into()));
        };
        let mut names = HashSet::new();
        for name in header.iter() {
            if !names.insert(name) {
                return Err(err(format!("column {name:?} named twice in the header")));
            }
        }
    }
    Ok(())
}

/// Every record of `text`; `flexible`: field counts may differ.
fn read(text: &str, flexible: bool) -> Result<Vec<csv::StringRecord>, csv::Error> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(flexible)
        .from_reader(text.as_bytes())
        .records()
        .collect()
}

/// Byte offset of record `n` (0-based) of `text`.
fn records_start(text: &str, n: usize) -> Option<usize> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut rec = csv::StringRecord::new();
    for _ in 0..n {
        if !r.read_record(&mut rec).ok()? {
            return None;
        }
    }
    usize::try_from(r.position().byte()).ok()
}

/// The tables of `text`: split at empty lines outside quoted fields.
fn blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut line_start) = (0, false, 0);
    for (i, ch) in text.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            '\n' if !quoted => {
                if i == line_start {
                    if line_start > start {
                        out.push(&text[start..line_start]);
                    }
                    start = i + 1;
                }
                line_start = i + 1;
            }
            _ => {}
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_with_a_repeated_key_is_refused() {
        let e = check_json(r#"{"a": 1, "b": {"c": 2, "c": 3}}"#).expect_err("refused");
        assert!(e.to_string().contains("duplicate key \"c\""), "{e}");
        assert!(check_json(r#"[{"a": 1}, {"a": 2}]"#).is_ok());
        assert!(check_json(r#"{"a": [1, {"b": null}], "c": "x"}"#).is_ok());
        assert!(check_json("{\"a\": 1} x").is_err());
        assert!(check_json("").is_err());
    }

    #[test]
    fn csv_tables_need_equal_field_counts_and_unique_headers() {
        assert!(check_csv("A,B\n1,2\n").is_ok());
        assert!(check_csv("Title\nA,B\n1,2\n\nOther\nKey,Value\nx,\"two\n\nlines\"\n").is_ok());
        assert!(check_csv("Command\nls -l\n").is_ok());
        assert!(check_csv("").is_ok());
        let e = check_csv("A,B\n1,2\n\nA,B\n1,2,3\n").expect_err("refused");
        assert!(matches!(e, StrictError::Csv { table: 2, .. }), "{e}");
        let e = check_csv("Title\nA,A\n1,2\n").expect_err("refused");
        assert!(e.to_string().contains("named twice"), "{e}");
        assert!(check_csv("A,B\n\"open,1\n").is_err());
    }

    #[test]
    fn text_is_anything() {
        assert!(check(Format::Text, "{{{").is_ok());
        assert!(check(Format::Json, "{\"a\":1,\"a\":2}").is_err());
        assert!(check(Format::Csv, "A,B\n1\n").is_err());
    }
}
