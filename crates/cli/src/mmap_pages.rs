//! `-m PAGES|SIZE`, read as perf record reads it: a number of data pages that is a power of
//! two, or a size with a unit (B, K, M, G) rounded up to a power of two of pages.

/// Largest ring accepted per CPU: beyond it the kernel's locked-memory limit refuses it
/// anyway, and a typo (`-m 4G`) would otherwise pin gigabytes per CPU.
const MAX_BYTES: u64 = 1 << 30;

pub fn parse(s: &str) -> Result<usize, String> {
    parse_with_page(s, kairos_collector::ring::page_size().max(1) as u64)
}

fn parse_with_page(s: &str, page: u64) -> Result<usize, String> {
    let t = s.trim();
    if t.contains(',') {
        return Err(format!("'{s}': the AUX area size (after the comma) is for Intel PT and similar traces, which kairos does not record; give the data pages only"));
    }
    let unit = t.chars().last().map(|c| c.to_ascii_uppercase());
    let (digits, scale) = match unit {
        Some('B') => (&t[..t.len() - 1], Some(1u64)),
        Some('K') => (&t[..t.len() - 1], Some(1 << 10)),
        Some('M') => (&t[..t.len() - 1], Some(1 << 20)),
        Some('G') => (&t[..t.len() - 1], Some(1 << 30)),
        _ => (t, None),
    };
    let n: u64 = digits.trim().parse().map_err(|_| {
        format!("'{s}' is neither a number of pages (e.g. 256) nor a size (e.g. 512K or 4M)")
    })?;
    if n == 0 {
        return Err(format!("'{s}': the ring buffer needs at least one page"));
    }
    let pages = match scale {
        // A size: rounded up to whole pages, then to a power of two, as perf does.
        Some(scale) => n
            .checked_mul(scale)
            .and_then(|bytes| bytes.div_ceil(page).checked_next_power_of_two()),
        None if n.is_power_of_two() => Some(n),
        None => {
            let up = n.checked_next_power_of_two().unwrap_or(1 << 63);
            return Err(format!(
                "{n} pages: the number of pages must be a power of two (e.g. {} or {up}), or give a size such as 4M",
                up / 2
            ));
        }
    };
    match pages {
        Some(p) if p.saturating_mul(page) <= MAX_BYTES => {
            usize::try_from(p).map_err(|_| format!("'{s}' is too large"))
        }
        _ => Err(format!(
            "'{s}' is more than {} MiB per CPU; the kernel locks this memory, so a smaller ring (e.g. 4M) is usual",
            MAX_BYTES >> 20
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_with_page;

    #[test]
    fn pages_and_sizes_as_perf_reads_them() {
        let p = |s| parse_with_page(s, 4096);
        assert_eq!(p("256"), Ok(256));
        assert_eq!(p("1"), Ok(1));
        assert_eq!(p("4M"), Ok(1024));
        assert_eq!(p("512k"), Ok(128));
        // Rounded up to a power of two of pages.
        assert_eq!(p("5M"), Ok(2048));
        assert_eq!(p("100B"), Ok(1));
        assert_eq!(p("1G"), Ok(262_144));
    }

    #[test]
    fn what_perf_refuses_is_refused_with_the_fix() {
        let p = |s| parse_with_page(s, 4096);
        assert!(p("300")
            .unwrap_err()
            .contains("power of two (e.g. 256 or 512)"));
        assert!(p("0").unwrap_err().contains("at least one page"));
        assert!(p("4X").unwrap_err().contains("neither a number"));
        assert!(p("").is_err());
        assert!(p("2G").unwrap_err().contains("per CPU"));
        assert!(p("16,64").unwrap_err().contains("AUX"));
        assert!(p("99999999999999999999M").is_err());
        assert!(p("18446744073709551615M").is_err());
        assert!(p("9223372036854775809").is_err());
    }
}
