//! The `spikes` sample's delay file (`# header`, then `start_ns end_ns` per delay): the
//! truth its time series is scored against, and a trace built from it where no tracer
//! ran.

use crate::error::{Error, Result};

/// Reads the delay intervals of a `spikes` OUTFILE. Lines starting with `#` and blank
/// lines are skipped; every other line must be two integers with end >= start.
pub fn parse_delays(text: &str) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |detail: &str| Error::BadDelayLine {
            line: i + 1,
            detail: format!("{detail}: `{line}`"),
        };
        let mut it = line.split_whitespace();
        let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
            return Err(bad("expected two numbers, start_ns end_ns"));
        };
        let a: u64 = a
            .parse()
            .map_err(|_| bad("start is not a whole number of ns"))?;
        let b: u64 = b
            .parse()
            .map_err(|_| bad("end is not a whole number of ns"))?;
        if b < a {
            return Err(bad("the delay ends before it starts"));
        }
        out.push((a, b));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spikes_format() {
        let d = parse_delays("# kairos spikes: ...\n100 250\n\n300 300\n").expect("parses");
        assert_eq!(d, [(100, 250), (300, 300)]);
        assert!(matches!(
            parse_delays("1 2 3"),
            Err(Error::BadDelayLine { line: 1, .. })
        ));
        assert!(matches!(
            parse_delays("#\n5 4"),
            Err(Error::BadDelayLine { line: 2, .. })
        ));
        assert!(matches!(
            parse_delays("x 4"),
            Err(Error::BadDelayLine { .. })
        ));
    }
}
