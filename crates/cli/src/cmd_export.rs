//! `kairos export -r DIR --format FORMAT -o FILE`: a result in the file formats of other
//! viewers (Firefox Profiler, Chrome tracing/Perfetto, pprof, flame graphs, speedscope).
//! The writers live in `kairos-export`; this turns their errors into one sentence each.

use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use kairos_export::{Format, FORMATS};

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub result_dir: PathBuf,
    /// firefox, chrome, pprof, collapsed or speedscope.
    #[arg(long)]
    pub format: String,
    /// File to write; a name ending in .gz is gzipped (pprof always is).
    #[arg(short = 'o', long = "output", required = true)]
    pub output: PathBuf,
    /// START:END in seconds from the first sample (either side may be empty).
    #[arg(long = "time-range")]
    pub time_range: Option<String>,
}

pub fn run(args: ExportArgs) -> CliResult {
    // Check the format before reading a possibly large result.
    let format = Format::from_str(&args.format).map_err(|_| {
        UserError::usage(format!(
            "unknown export format '{}'; the formats are: {}",
            args.format,
            FORMATS.join(", ")
        ))
    })?;
    let (dir, profile) = kairos_session::open(&args.result_dir)?;
    let range = args
        .time_range
        .as_deref()
        .map(|r| kairos_profile_report::parse_time_range(r, &profile))
        .transpose()?;
    let wall = dir
        .manifest()
        .start_time
        .as_deref()
        .and_then(unix_ns_from_rfc3339);
    kairos_export::export_file(&profile, range, wall, format, &args.output).map_err(
        |e| match e {
            kairos_export::Error::Write { path, source } => UserError::failed(format!(
                "cannot write {}: {source}; choose an -o path in a directory you can write to",
                path.display()
            )),
            other => UserError::failed(other.to_string()),
        },
    )?;
    eprintln!(
        "Wrote {} ({} format, {} samples)",
        args.output.display(),
        args.format,
        selected(&profile, range)
    );
    Ok(())
}

fn selected(profile: &kairos_model::Profile, range: Option<(u64, u64)>) -> usize {
    kairos_export::Selection::new(profile, range).samples.len()
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z` (what manifests hold) to ns since the Unix epoch.
fn unix_ns_from_rfc3339(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|x| x.parse::<u64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|x| x.parse::<u64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    if !(1970..10000).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || frac.len() > 9
    {
        return None;
    }
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().ok()?
    };
    // Days from civil date (proleptic Gregorian), with March as the first month so the
    // leap day falls at the end of the year.
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2 / 400;
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339() {
        assert_eq!(
            super::unix_ns_from_rfc3339("1970-01-01T00:00:00.000Z"),
            Some(0)
        );
        assert_eq!(
            super::unix_ns_from_rfc3339("2024-03-01T00:00:01.5Z"),
            Some(1_709_251_201_500_000_000)
        );
        assert_eq!(super::unix_ns_from_rfc3339("nonsense"), None);
    }
}
