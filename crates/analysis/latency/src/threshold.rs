//! What a slow request is (`-k slower-than`): above a percentile of the durations, or
//! above a duration; parsed once, stated in every report.

/// `-k slower-than`, parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlowerThan {
    /// Above this percentile (0 < p < 100) of the request durations.
    Percentile(f64),
    Duration(u64),
}

/// The knob's check.
pub fn check(v: &str) -> Result<(), String> {
    parse(v).map(|_| ())
}

/// `-k slowest=0.1%`: the slowest share of requests, as the percentile above which they lie.
pub fn check_slowest(v: &str) -> Result<(), String> {
    slowest(v).map(|_| ())
}

fn slowest(v: &str) -> Result<Option<SlowerThan>, String> {
    if v.is_empty() {
        return Ok(None);
    }
    match v.strip_suffix('%').and_then(|n| n.parse::<f64>().ok()) {
        Some(share) if share > 0.0 && share < 100.0 => {
            Ok(Some(SlowerThan::Percentile(100.0 - share)))
        }
        _ => Err("a share of the requests above 0% and below 100%, e.g. 0.1%".into()),
    }
}

/// What slow is, from the knobs: `slowest` when given, else `slower-than`.
pub fn slower(knobs: &kairos_analysis_api::Knobs) -> Result<SlowerThan, String> {
    match slowest(knobs.get("slowest"))? {
        Some(s) => Ok(s),
        None => parse(knobs.get("slower-than")),
    }
}

/// The `window` knob's check: a duration of a second or more.
pub fn check_window(v: &str) -> Result<(), String> {
    match duration_ns(v) {
        Ok(ns) if ns >= 1_000_000_000 => Ok(()),
        Ok(_) => Err("a window of at least 1s".into()),
        Err(e) => Err(e),
    }
}

pub fn parse(v: &str) -> Result<SlowerThan, String> {
    let v = v.trim();
    if let Some(p) = v.strip_prefix('p') {
        return match p.parse::<f64>() {
            Ok(p) if p > 0.0 && p < 100.0 => Ok(SlowerThan::Percentile(p)),
            _ => Err("a percentile above 0 and below 100, e.g. p99 or p99.9".into()),
        };
    }
    duration_ns(v).map(SlowerThan::Duration)
}

/// "150us", "1.5ms", "2s", "800ns" in nanoseconds.
pub fn duration_ns(v: &str) -> Result<u64, String> {
    let bad = || {
        format!("'{v}' is not a duration such as 200us, 1.5ms or 2s, nor a percentile such as p99")
    };
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(bad()),
    };
    let ns = n * scale;
    if !ns.is_finite() || !(1.0..=1e15).contains(&ns) {
        return Err(bad());
    }
    Ok(ns.round() as u64)
}

/// The value at percentile `p` of sorted `durations` (nearest rank), 0 when empty.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[rank(p, sorted.len() as u64) as usize - 1]
}

/// The nearest rank (1 to `n`) of percentile `p` among `n` values.
pub fn rank(p: f64, n: u64) -> u64 {
    // The epsilon keeps 99.9% of 1000 at rank 999 despite the float product.
    (((p / 100.0) * n as f64 - 1e-9).ceil() as u64).clamp(1, n.max(1))
}

impl SlowerThan {
    /// The threshold in ns for these sorted durations.
    pub fn resolve(self, sorted: &[u64]) -> u64 {
        match self {
            SlowerThan::Percentile(p) => percentile(sorted, p),
            SlowerThan::Duration(ns) => ns,
        }
    }

    /// How the threshold was chosen, for the reports.
    pub fn describe(self) -> String {
        match self {
            SlowerThan::Percentile(p) => format!("the p{p} of the request durations"),
            SlowerThan::Duration(_) => "-k slower-than".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_percentiles_parse() {
        assert_eq!(parse("150us"), Ok(SlowerThan::Duration(150_000)));
        assert_eq!(parse("1.5ms"), Ok(SlowerThan::Duration(1_500_000)));
        assert_eq!(parse("p99.9"), Ok(SlowerThan::Percentile(99.9)));
        assert!(parse("p100").is_err());
        assert!(parse("150").is_err());
        assert!(parse("fast").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn slowest_is_a_percentile_and_windows_are_seconds() {
        assert_eq!(slowest("0.1%"), Ok(Some(SlowerThan::Percentile(99.9))));
        assert_eq!(slowest(""), Ok(None));
        assert!(slowest("0.1").is_err() && slowest("100%").is_err());
        assert!(check_window("10s").is_ok() && check_window("500ms").is_err());
    }

    #[test]
    fn percentile_is_the_nearest_rank() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&v, 50.0), 500);
        assert_eq!(percentile(&v, 99.0), 990);
        assert_eq!(percentile(&v, 99.9), 999);
        assert_eq!(percentile(&[], 99.0), 0);
        assert_eq!(percentile(&[7], 1.0), 7);
    }
}
