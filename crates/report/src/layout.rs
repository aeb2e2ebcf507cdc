//! How wide text output may be: the line width sentences wrap to, and whether table cells
//! are shown whole (`--wide`) or cut with `…`; and the word wrapping itself.
//!
//! The binary sets the layout once ([`set_text_layout`], from the terminal's width and
//! `--wide`); every `to_text()` of the process reads it, so the many places that print a
//! report need not pass it along. Tests call `to_text_with` with an explicit layout and
//! never touch the process-wide one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Line width when the output is not a terminal (a file, a pipe, a test).
pub const DEFAULT_LINE_WIDTH: usize = 100;

/// Default maximum width of a table cell before it is cut with `…`: wide enough for
/// most C++/Rust function names, narrow enough that numbers stay on a 160-column screen.
pub const DEFAULT_MAX_WIDTH: usize = 60;

/// A sentence is never wrapped narrower than this, however wide the rest of its line.
pub const MIN_SENTENCE_WIDTH: usize = 24;

/// The text layout of one rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextLayout {
    /// Sentences (notes, findings, fixes, section values) wrap to this many columns.
    pub width: usize,
    /// Table cells of value columns longer than this are cut with `…`; 0: never cut.
    pub max_cell: usize,
}

impl Default for TextLayout {
    fn default() -> TextLayout {
        TextLayout {
            width: DEFAULT_LINE_WIDTH,
            max_cell: DEFAULT_MAX_WIDTH,
        }
    }
}

impl TextLayout {
    /// The layout of `width` columns, cells cut at [`DEFAULT_MAX_WIDTH`] unless `wide`.
    pub fn new(width: usize, wide: bool) -> TextLayout {
        TextLayout {
            width: width.max(MIN_SENTENCE_WIDTH),
            max_cell: if wide { 0 } else { DEFAULT_MAX_WIDTH },
        }
    }

    /// Whether table cells are shown whole.
    pub fn is_wide(&self) -> bool {
        self.max_cell == 0
    }
}

static WIDTH: AtomicUsize = AtomicUsize::new(DEFAULT_LINE_WIDTH);
static WIDE: AtomicBool = AtomicBool::new(false);

/// Sets the layout every later `to_text()` of this process uses (the binary does, once).
pub fn set_text_layout(width: usize, wide: bool) {
    WIDTH.store(width.max(MIN_SENTENCE_WIDTH), Ordering::Relaxed);
    WIDE.store(wide, Ordering::Relaxed);
}

/// The process's layout: [`TextLayout::default`] unless [`set_text_layout`] was called.
pub fn text_layout() -> TextLayout {
    TextLayout::new(WIDTH.load(Ordering::Relaxed), WIDE.load(Ordering::Relaxed))
}

/// Width in characters (not display columns: East Asian wide characters count as one).
pub(crate) fn width(s: &str) -> usize {
    s.chars().count()
}

/// `text` in lines of at most `width` characters, broken between words; a word longer
/// than a line is split across lines, so nothing is ever lost. Line breaks in `text` are
/// kept; runs of blanks between words become one. An empty text is one empty line.
pub fn wrap_lines(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split([' ', '\t']).filter(|w| !w.is_empty()) {
            let (lw, ww) = (crate::layout::width(&line), crate::layout::width(word));
            if lw > 0 && lw + 1 + ww <= width {
                line.push(' ');
                line.push_str(word);
                continue;
            }
            if lw > 0 {
                out.push(std::mem::take(&mut line));
            }
            let mut chars: Vec<char> = word.chars().collect();
            while chars.len() > width {
                let rest = chars.split_off(width);
                out.push(chars.into_iter().collect());
                chars = rest;
            }
            line = chars.into_iter().collect();
        }
        out.push(line);
    }
    out
}

/// `text` wrapped to `width` columns, the first line after `first` and the others after
/// `rest` (a hanging indent: `wrap("...", 100, "  - ", "    ")`), each line ending in `\n`.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let indent = crate::layout::width(first).max(crate::layout::width(rest));
    let room = width.saturating_sub(indent).max(MIN_SENTENCE_WIDTH);
    let mut out = String::new();
    for (i, l) in wrap_lines(text, room).iter().enumerate() {
        let line = format!("{}{l}", if i == 0 { first } else { rest });
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_between_words_and_keeps_every_character() {
        let s = "False sharing on line 0x7f00 of counters: threads 1 and 2 write bytes 0..7 and 8..15; pad each to 64 bytes.";
        let lines = wrap_lines(s, 30);
        assert!(lines.iter().all(|l| width(l) <= 30), "{lines:?}");
        assert_eq!(lines.join(" "), s);
        assert_eq!(lines[0], "False sharing on line 0x7f00");
        assert_eq!(wrap_lines("short", 30), ["short"]);
        assert_eq!(wrap_lines("", 30), [""]);
    }

    #[test]
    fn long_words_are_split_not_cut() {
        let word = "a".repeat(25);
        assert_eq!(
            wrap_lines(&format!("x {word} y"), 10),
            ["x", "aaaaaaaaaa", "aaaaaaaaaa", "aaaaa y"]
        );
    }

    #[test]
    fn line_breaks_are_kept() {
        assert_eq!(wrap_lines("one two\nthree", 80), ["one two", "three"]);
    }

    #[test]
    fn hanging_indent() {
        let w = wrap(
            "the devices are unknown: this result kept no platform snapshot",
            34,
            "  - ",
            "    ",
        );
        assert_eq!(
            w,
            "  - the devices are unknown: this\n    result kept no platform\n    snapshot\n"
        );
        assert!(w.lines().all(|l| width(l) <= 34));
    }

    #[test]
    fn layouts() {
        assert_eq!(TextLayout::default(), TextLayout::new(100, false));
        assert!(TextLayout::new(80, true).is_wide());
        assert_eq!(TextLayout::new(3, false).width, MIN_SENTENCE_WIDTH);
    }
}
