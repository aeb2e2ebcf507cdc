//! Parser for `perf-PID.map` files, written by JITs for perf: one `START SIZE name` line
//! per function, hex numbers, absolute addresses. Bad lines are skipped and counted,
//! because JITs append while running and a file may end in a torn line.

use crate::addr_table::AddrTable;
use crate::demangle::demangle;

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfMapEntry {
    pub start: u64,
    pub size: u64,
    /// Name as written (may contain spaces, e.g. Java signatures).
    pub name: String,
}

/// Parse a perf map; returns the good entries and the number of bad lines (blank lines
/// are not counted as bad).
pub fn parse(text: &str) -> (Vec<PerfMapEntry>, usize) {
    let mut entries = Vec::new();
    let mut bad = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Some(e) => entries.push(e),
            None => bad += 1,
        }
    }
    (entries, bad)
}

fn parse_line(line: &str) -> Option<PerfMapEntry> {
    let line = line.trim_end_matches('\r');
    let (start, rest) = line.trim_start().split_once(char::is_whitespace)?;
    let (size, name) = rest.trim_start().split_once(char::is_whitespace)?;
    let name = name.trim();
    if name.is_empty() {
        return None;
    }
    Some(PerfMapEntry {
        start: hex(start)?,
        size: hex(size)?,
        name: name.to_string(),
    })
}

fn hex(s: &str) -> Option<u64> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u64::from_str_radix(s, 16).ok()
}

/// A perf map ready for lookups by absolute address.
#[derive(Debug, Clone, Default)]
pub struct PerfMap {
    table: AddrTable,
}

impl PerfMap {
    /// Build from parsed entries; names are demangled once here.
    pub fn new(entries: Vec<PerfMapEntry>) -> Self {
        let ranges = entries
            .into_iter()
            .filter(|e| e.size > 0)
            .map(|e| (e.start, e.start.saturating_add(e.size), demangle(&e.name)))
            .collect();
        Self {
            table: AddrTable::new(ranges),
        }
    }

    /// Function holding the absolute address `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        self.table.lookup(addr)
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_good_and_skips_bad_lines() {
        let text = "7f00 10 jit::foo\n\
                    0x7f10 0x20 LFoo;bar(I)V interpreted\n\
                    \n\
                    zz 10 bad\n\
                    7f40 10\n\
                    7f50\n\
                    7f60 20 _ZN3foo3barEv\r\n\
                    7f80 8 torn-line-witho";
        let (entries, bad) = parse(text);
        assert_eq!(bad, 3);
        assert_eq!(entries.len(), 4);
        assert_eq!(
            entries[1],
            PerfMapEntry {
                start: 0x7f10,
                size: 0x20,
                name: "LFoo;bar(I)V interpreted".into()
            }
        );
        let map = PerfMap::new(entries);
        assert_eq!(map.lookup(0x7f05), Some("jit::foo"));
        assert_eq!(map.lookup(0x7f2f), Some("LFoo;bar(I)V interpreted"));
        assert_eq!(map.lookup(0x7f30), None);
        assert_eq!(map.lookup(0x7f61), Some("foo::bar()"));
    }
}
