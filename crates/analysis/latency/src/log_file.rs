//! Request boundaries from the application's own log (`-k requests-from=FILE`): one line
//! per request with its start and end time. Lines starting with `#` are comments; one of
//! them may say the clock (`clock=CLOCK_REALTIME`, `clock=monotonic`) and name the
//! columns (`columns: id tid start_ns end_ns ...`). Without column names a line is
//! `START END [ID [TID]]`. A whole number is nanoseconds, a number with a decimal point
//! seconds.

use std::path::Path;

/// Which clock a log's times are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    Monotonic,
    Realtime,
}

/// One request as the log gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logged {
    pub id: u64,
    /// 0 when the log does not say.
    pub tid: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A parsed log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLog {
    pub requests: Vec<Logged>,
    /// The clock the file says, if it says one.
    pub clock: Option<Clock>,
    /// Lines that are not requests (line numbers, first few).
    pub bad_lines: Vec<usize>,
    pub bad_count: usize,
}

#[derive(Debug, Clone, Copy)]
struct Columns {
    start: usize,
    end: usize,
    id: Option<usize>,
    tid: Option<usize>,
}

fn columns_from(header: &str) -> Option<Columns> {
    let names: Vec<&str> = header.split_whitespace().collect();
    let find = |want: &[&str]| names.iter().position(|n| want.contains(n));
    Some(Columns {
        start: find(&["start_ns", "start", "start_s", "begin_ns", "begin"])?,
        end: find(&["end_ns", "end", "end_s", "stop_ns"])?,
        id: find(&["id", "request"]),
        tid: find(&["tid", "thread"]),
    })
}

fn time_ns(s: &str) -> Option<u64> {
    if s.contains('.') {
        let v: f64 = s.parse().ok()?;
        (v.is_finite() && v >= 0.0).then(|| (v * 1e9).round() as u64)
    } else {
        s.parse().ok()
    }
}

pub fn parse(text: &str) -> RequestLog {
    let mut cols = Columns {
        start: 0,
        end: 1,
        id: Some(2),
        tid: Some(3),
    };
    let mut log = RequestLog {
        requests: Vec::new(),
        clock: None,
        bad_lines: Vec::new(),
        bad_count: 0,
    };
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let lower = comment.to_lowercase();
            if let Some(c) = lower
                .split_whitespace()
                .find_map(|w| w.strip_prefix("clock="))
            {
                log.clock = if c.contains("realtime") {
                    Some(Clock::Realtime)
                } else if c.contains("monotonic") {
                    Some(Clock::Monotonic)
                } else {
                    log.clock
                };
            }
            if let Some((_, names)) = comment.split_once("columns:") {
                if let Some(c) = columns_from(names) {
                    cols = c;
                }
            }
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let get = |i: Option<usize>| i.and_then(|i| f.get(i)).and_then(|s| s.parse::<u64>().ok());
        match (
            f.get(cols.start).and_then(|s| time_ns(s)),
            f.get(cols.end).and_then(|s| time_ns(s)),
        ) {
            (Some(start_ns), Some(end_ns)) if end_ns >= start_ns => log.requests.push(Logged {
                id: get(cols.id).unwrap_or(log.requests.len() as u64),
                tid: get(cols.tid)
                    .and_then(|t| u32::try_from(t).ok())
                    .unwrap_or(0),
                start_ns,
                end_ns,
            }),
            _ => {
                log.bad_count += 1;
                if log.bad_lines.len() < 5 {
                    log.bad_lines.push(i + 1);
                }
            }
        }
    }
    log
}

pub fn read(path: &Path) -> Result<RequestLog, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "the request log {} cannot be read ({e}); give -k requests-from=FILE with a readable file",
            path.display()
        )
    })?;
    Ok(parse(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_columns_and_clock_are_read_from_the_header() {
        let l = parse("# orders: clock=CLOCK_MONOTONIC columns: id tid start_ns end_ns cause\n7 100 1000 5000 lock\n8 100 6000 7000 normal\nnot a line\n");
        assert_eq!(l.clock, Some(Clock::Monotonic));
        assert_eq!(
            l.requests,
            vec![
                Logged {
                    id: 7,
                    tid: 100,
                    start_ns: 1000,
                    end_ns: 5000
                },
                Logged {
                    id: 8,
                    tid: 100,
                    start_ns: 6000,
                    end_ns: 7000
                },
            ]
        );
        assert_eq!((l.bad_count, l.bad_lines.clone()), (1, vec![4]));
    }

    #[test]
    fn bare_lines_are_start_end_and_seconds_have_a_point() {
        let l = parse("# clock=realtime\n1.5 1.75\n10 20 3\n");
        assert_eq!(l.clock, Some(Clock::Realtime));
        assert_eq!(l.requests[0].start_ns, 1_500_000_000);
        assert_eq!(l.requests[0].end_ns, 1_750_000_000);
        assert_eq!((l.requests[1].id, l.requests[1].tid), (3, 0));
    }
}
