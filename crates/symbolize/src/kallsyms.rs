//! Parser for `/proc/kallsyms` (or a copy of it): `ADDR TYPE NAME [MODULE]` lines.
//!
//! Only text symbols (types t, T, w, W) are kept for lookup: data and per-CPU symbols
//! (small offsets, type A/D/d) would otherwise swallow code addresses. When
//! `kernel.kptr_restrict` hides addresses from the reader, every address reads 0; that is
//! reported through [`Kallsyms::addresses_hidden`] instead of yielding wrong names.

use crate::addr_table::AddrTable;
use crate::demangle::demangle;

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KallsymsEntry {
    pub addr: u64,
    /// Symbol type letter as `nm` prints it.
    pub kind: char,
    pub name: String,
    /// Loadable module name, without brackets, for module symbols.
    pub module: Option<String>,
}

/// Parse kallsyms text; returns the good entries and the number of bad lines.
pub fn parse(text: &str) -> (Vec<KallsymsEntry>, usize) {
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

fn parse_line(line: &str) -> Option<KallsymsEntry> {
    let mut fields = line.split_whitespace();
    let addr = u64::from_str_radix(fields.next()?, 16).ok()?;
    let mut kind_chars = fields.next()?.chars();
    let kind = kind_chars.next()?;
    if kind_chars.next().is_some() {
        return None;
    }
    let name = fields.next()?.to_string();
    let module = fields
        .next()
        .map(|m| m.trim_start_matches('[').trim_end_matches(']').to_string());
    Some(KallsymsEntry {
        addr,
        kind,
        name,
        module,
    })
}

/// Largest span given to the last text symbol, which has no successor to bound it.
const LAST_SYMBOL_SPAN: u64 = 4096;

/// Kernel symbols ready for lookups by absolute address.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    table: AddrTable,
    hidden: bool,
}

impl Kallsyms {
    /// Build from parsed entries. A text symbol ends where the next text symbol starts,
    /// since kallsyms gives no sizes.
    pub fn new(entries: &[KallsymsEntry]) -> Self {
        let hidden = !entries.is_empty() && entries.iter().all(|e| e.addr == 0);
        let mut text: Vec<&KallsymsEntry> = entries
            .iter()
            .filter(|e| matches!(e.kind, 't' | 'T' | 'w' | 'W') && e.addr != 0)
            .collect();
        text.sort_by_key(|e| e.addr);
        let mut ranges = Vec::with_capacity(text.len());
        for (i, e) in text.iter().enumerate() {
            // Aliases share an address; the range must reach the next *distinct* start.
            let end = text[i + 1..]
                .iter()
                .map(|n| n.addr)
                .find(|&a| a > e.addr)
                .unwrap_or_else(|| e.addr.saturating_add(LAST_SYMBOL_SPAN));
            ranges.push((e.addr, end, demangle(&e.name)));
        }
        // AddrTable keeps the last of equal starts: reverse aliases so the first listed
        // name (the one perf shows) wins.
        ranges.reverse();
        Self {
            table: AddrTable::new(ranges),
            hidden,
        }
    }

    /// Function holding the absolute kernel address `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        self.table.lookup(addr)
    }

    /// True when every address was 0: `kptr_restrict` hid them from the reader.
    pub fn addresses_hidden(&self) -> bool {
        self.hidden
    }

    /// Number of text symbols usable for lookups.
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

    const SAMPLE: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
0000000000000000 A fixed_percpu_data
ffffffff81001000 t helper
ffffffff81002000 D some_data
ffffffff81003000 T last_fn
ffffffffc0a00000 t ext4_fill_super\t[ext4]
garbage line
ffffffff81004000 TT bad
";

    #[test]
    fn parses_lines_and_modules() {
        let (entries, bad) = parse(SAMPLE);
        assert_eq!(bad, 2);
        assert_eq!(entries.len(), 7);
        assert_eq!(entries[6].module.as_deref(), Some("ext4"));
        assert_eq!(entries[6].kind, 't');
    }

    #[test]
    fn looks_up_text_symbols_only() {
        let (entries, _) = parse(SAMPLE);
        let k = Kallsyms::new(&entries);
        assert!(!k.addresses_hidden());
        assert_eq!(k.lookup(0xffffffff81000010), Some("_stext"));
        assert_eq!(k.lookup(0xffffffff81001fff), Some("helper"));
        // The data symbol does not cut `helper` short.
        assert_eq!(k.lookup(0xffffffff81002010), Some("helper"));
        assert_eq!(k.lookup(0xffffffff81003010), Some("last_fn"));
        assert_eq!(k.lookup(0xffffffffc0a00040), Some("ext4_fill_super"));
        assert_eq!(k.lookup(0x10), None);
    }

    #[test]
    fn detects_kptr_restrict() {
        let text = "0000000000000000 T _stext\n0000000000000000 t helper\n";
        let (entries, _) = parse(text);
        let k = Kallsyms::new(&entries);
        assert!(k.addresses_hidden());
        assert!(k.is_empty());
        assert_eq!(k.lookup(0), None);
    }
}
