//! Capacity bitmasks (CBMs) and CPU lists, the two bit-set notations of resctrl.

use crate::Error;

/// A capacity bitmask: bit i set = the group may fill cache way i. Hardware CBMs are at
/// most 32 bits wide; u64 leaves room.
pub type Cbm = u64;

/// Parses a hex CBM as resctrl prints it (`fffff`, `00fff`, ` 7ff`).
pub fn parse_cbm(s: &str) -> Result<Cbm, Error> {
    let t = s.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    if t.is_empty() || t.len() > 16 {
        return Err(Error::Parse(format!(
            "'{s}' is not a cache bitmask (hex digits, at most 64 bits)"
        )));
    }
    u64::from_str_radix(t, 16)
        .map_err(|_| Error::Parse(format!("'{s}' is not a cache bitmask (hex digits)")))
}

/// Number of ways in a mask.
pub fn ways(m: Cbm) -> u32 {
    m.count_ones()
}

/// True when the set bits form one run (the hardware's rule unless `sparse_masks` is 1).
pub fn is_contiguous(m: Cbm) -> bool {
    if m == 0 {
        return true;
    }
    let shifted = m >> m.trailing_zeros();
    shifted & (shifted + 1) == 0
}

/// `n` contiguous ways starting at way `low`.
pub fn run(low: u32, n: u32) -> Cbm {
    if n == 0 || low >= 64 {
        return 0;
    }
    let bits = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    bits << low
}

/// The mask as the kernel prints it: lower-case hex, zero-padded to the width of `full`.
pub fn format_cbm(m: Cbm, full: Cbm) -> String {
    let digits = ((64 - full.leading_zeros()) as usize).div_ceil(4).max(1);
    format!("{m:0digits$x}")
}

/// Ways as a picture, highest way first (as bit_usage prints them): `#` set, `.` clear.
pub fn picture(m: Cbm, width: u32) -> String {
    (0..width)
        .rev()
        .map(|i| if m >> i & 1 == 1 { '#' } else { '.' })
        .collect()
}

/// Way numbers as a compact list: `0-3,8`.
pub fn way_list(m: Cbm) -> String {
    let bits: Vec<u32> = (0..64).filter(|i| m >> i & 1 == 1).collect();
    format_list(&bits)
}

/// Parses a CPU list (`0-3,8,10-11`; empty = none), sorted and without repeats: the
/// kernel's cpulist syntax as kairos-platform reads it.
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, Error> {
    let mut out = kairos_platform::numa::parse_cpulist(s).ok_or_else(|| {
        Error::Parse(format!(
            "CPU list '{}' is not CPU numbers and ranges like 0-3,8",
            s.trim()
        ))
    })?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats sorted numbers as a list with ranges: `[0,1,2,5]` -> `0-2,5`.
pub fn format_list(v: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbm_parse_and_shape() {
        assert_eq!(parse_cbm(" 00fff\n").ok(), Some(0xfff));
        assert!(parse_cbm("").is_err());
        assert!(parse_cbm("xyz").is_err());
        assert!(parse_cbm("11112222333344445").is_err());
        assert!(is_contiguous(0xf0));
        assert!(!is_contiguous(0xf0f));
        assert!(is_contiguous(0));
        assert_eq!(run(4, 3), 0x70);
        assert_eq!(format_cbm(0xf, 0xfffff), "0000f");
        assert_eq!(picture(0b0110, 4), ".##.");
        assert_eq!(way_list(0b1011_0111), "0-2,4-5,7");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8, 10-11\n").ok(),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("").ok(), Some(vec![]));
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert_eq!(format_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }
}
