//! A sorted table of `[start, end) -> name` ranges, shared by perf maps and kallsyms.

/// Address ranges sorted by start; lookups by binary search.
#[derive(Debug, Clone, Default)]
pub(crate) struct AddrTable {
    entries: Vec<(u64, u64, String)>,
}

impl AddrTable {
    /// Build from unsorted `(start, end, name)` ranges. When two ranges start at the same
    /// address the later one wins: JIT code rewritten in place is appended to the map.
    pub(crate) fn new(mut entries: Vec<(u64, u64, String)>) -> Self {
        // Stable sort keeps file order among equal starts, so "last" means "newest".
        entries.sort_by_key(|e| e.0);
        let mut out: Vec<(u64, u64, String)> = Vec::with_capacity(entries.len());
        for e in entries {
            match out.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => out.push(e),
            }
        }
        Self { entries: out }
    }

    /// Name of the range holding `addr`.
    pub(crate) fn lookup(&self, addr: u64) -> Option<&str> {
        let idx = self
            .entries
            .partition_point(|e| e.0 <= addr)
            .checked_sub(1)?;
        // A short range may sit inside a longer one that started earlier (nested JIT
        // stubs); look back a little for a range that really contains the address.
        self.entries[..=idx]
            .iter()
            .rev()
            .take(4)
            .find(|e| addr < e.1)
            .map(|e| e.2.as_str())
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::AddrTable;

    #[test]
    fn lookup_bounds_and_duplicates() {
        let t = AddrTable::new(vec![
            (0x200, 0x210, "b".into()),
            (0x100, 0x180, "a".into()),
            (0x200, 0x220, "b2".into()),
            (0x120, 0x130, "inner".into()),
        ]);
        assert_eq!(t.len(), 3);
        assert_eq!(t.lookup(0x100), Some("a"));
        assert_eq!(t.lookup(0x125), Some("inner"));
        assert_eq!(t.lookup(0x140), Some("a"));
        assert_eq!(t.lookup(0x180), None);
        assert_eq!(t.lookup(0x215), Some("b2"));
        assert_eq!(t.lookup(0xff), None);
        assert_eq!(t.lookup(u64::MAX), None);
        assert_eq!(AddrTable::default().lookup(0), None);
    }
}
