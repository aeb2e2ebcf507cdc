//! Tables and their text, CSV and JSON renderings.
//!
//! Analyses build a [`Table`] (or a [`Document`] of several tables and key/value
//! [`Section`]s) out of typed [`Cell`]s and never format numbers themselves: that way
//! the text view can scale and align, while CSV and JSON keep exact machine values
//! (durations in ns, percentages in percentage points) for scripts and spreadsheets.
//!
//! Text wraps sentences to the line width of the process's [`TextLayout`] and never cuts
//! them; only value cells of tables are cut with `…`, unless the layout is wide.
//!
//! [`assert_golden`] is the golden-file helper the analyses' tests use; [`strict`] reads
//! the machine formats strictly (no repeated JSON key, equal CSV field counts), and
//! golden files named `*.json` or `*.csv` are read through it.

mod csv;
mod document;
mod format;
mod golden;
mod json;
mod layout;
pub mod strict;
mod table;
mod text;

pub use document::{Block, Document, Section};
pub use format::{Format, ParseFormatError};
pub use golden::{assert_golden, format_of, line_diff};
pub use layout::{
    set_text_layout, text_layout, wrap, wrap_lines, TextLayout, DEFAULT_LINE_WIDTH,
    DEFAULT_MAX_WIDTH, MIN_SENTENCE_WIDTH,
};
pub use table::{Align, Cell, Column, ColumnKind, Table};

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
