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

/// Address ranges of text symbols sorted by address (stable: aliases in file order). A
/// symbol ends where the next text symbol starts, since kallsyms gives no sizes.
fn ranges_of(text: &[(u64, &str)]) -> Vec<(u64, u64, String)> {
    let mut ranges = Vec::with_capacity(text.len());
    // Aliases share an address; a range must reach the next *distinct* start, found by
    // walking back from the end.
    let mut next_start: Option<u64> = None;
    for (i, &(addr, name)) in text.iter().enumerate().rev() {
        if let Some(&(later, _)) = text.get(i + 1) {
            if later > addr {
                next_start = Some(later);
            }
        }
        let end = next_start.unwrap_or_else(|| addr.saturating_add(LAST_SYMBOL_SPAN));
        // Kernel names are plain C; only the rare mangled one (Rust in the kernel) pays.
        let name = if name.starts_with("_R") || name.starts_with("_Z") {
            demangle(name)
        } else {
            name.to_owned()
        };
        ranges.push((addr, end, name));
    }
    // Built from the end, so aliases come last-listed first; AddrTable keeps the last of
    // equal starts, which is then the first listed name (the one perf shows).
    ranges
}

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
        let mut text: Vec<(u64, &str)> = entries
            .iter()
            .filter(|e| matches!(e.kind, 't' | 'T' | 'w' | 'W') && e.addr != 0)
            .map(|e| (e.addr, e.name.as_str()))
            .collect();
        text.sort_by_key(|e| e.0);
        Self {
            table: AddrTable::new(ranges_of(&text)),
            hidden,
        }
    }

    /// Straight from kallsyms text, as `Kallsyms::new(&parse(text).0)` but in one pass that
    /// keeps only the text symbols: 120k lines in all, most of them kept, so every
    /// allocation per line counts (this runs on every import and collection).
    pub fn from_text(text: &str) -> Self {
        let (mut any, mut nonzero) = (false, false);
        let mut text_syms: Vec<(u64, &str)> = Vec::new();
        for line in text.lines() {
            let mut fields = line.split_ascii_whitespace();
            let (Some(addr), Some(kind), Some(name)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if kind.len() != 1 {
                continue;
            }
            any = true;
            nonzero |= addr != 0;
            if matches!(kind, "t" | "T" | "w" | "W") && addr != 0 {
                text_syms.push((addr, name));
            }
        }
        text_syms.sort_by_key(|e| e.0);
        Self {
            table: AddrTable::new(ranges_of(&text_syms)),
            hidden: any && !nonzero,
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
    fn from_text_is_the_same_as_parse_then_new() {
        let text = format!("{SAMPLE}ffffffff81003000 T alias_of_last\nffffffff81005000 t _ZN4core3fmt5write17h0123456789abcdefE\n");
        let (a, b) = (Kallsyms::new(&parse(&text).0), Kallsyms::from_text(&text));
        assert_eq!(a.len(), b.len());
        for addr in [
            0x10,
            0xffffffff81000010,
            0xffffffff81002010,
            0xffffffff81003010,
            0xffffffff81005001,
            0xffffffffc0a00040,
        ] {
            assert_eq!(a.lookup(addr), b.lookup(addr), "{addr:x}");
        }
        assert_eq!(b.lookup(0xffffffff81003010), Some("last_fn"));
        assert_eq!(b.lookup(0xffffffff81005001), Some("core::fmt::write"));
        let hidden = "0000000000000000 T _stext\n0000000000000000 t helper\n";
        assert!(Kallsyms::from_text(hidden).addresses_hidden());
        assert!(!Kallsyms::from_text("").addresses_hidden());
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
