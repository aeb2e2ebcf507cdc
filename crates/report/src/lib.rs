//! Tables and their text, CSV and JSON renderings.
//!
//! Analyses build a [`Table`] (or a [`Document`] of several tables and key/value
//! [`Section`]s) out of typed [`Cell`]s and never format numbers themselves: that way
//! the text view can scale and align, while CSV and JSON keep exact machine values
//! (durations in ns, percentages in percentage points) for scripts and spreadsheets.
//!
//! [`assert_golden`] is the golden-file helper the analyses' tests use.

mod csv;
mod document;
mod format;
mod golden;
mod json;
mod table;
mod text;

pub use document::{Block, Document, Section};
pub use format::{Format, ParseFormatError};
pub use golden::{assert_golden, line_diff};
pub use table::{Align, Cell, Column, Table};
pub use text::DEFAULT_MAX_WIDTH;

/// `1234567` as `1,234,567`, for counts written into sentences and labels.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
