//! What every endpoint shares: the result a request names, the profile of its method, and
//! numbers, durations and table cells as the page shows them.

use std::sync::Arc;

use kairos_report::Cell;
use kairos_time_assignment::Method;

use crate::error::Error;
use crate::query::Query;
use crate::results::{Data, Derived};
use crate::site::State;

/// The loaded result named by parameter `param` (default index 0).
pub fn data<'a>(state: &'a State, q: &Query, param: &str) -> Result<&'a Data, Error> {
    let i = q.num(param)?.unwrap_or(0) as usize;
    let l = state.results.get(i).ok_or_else(|| {
        Error::NotFound(format!(
            "{param}={i}: there are only {} results",
            state.results.len()
        ))
    })?;
    l.data.as_ref().map_err(|e| Error::NotFound(e.clone()))
}

/// The profile of the `method` parameter (default `none`).
pub(crate) fn derived(d: &Data, q: &Query) -> Result<Arc<Derived>, Error> {
    d.derived(method(q.get("method").unwrap_or("none"))?)
}

pub(crate) fn method(name: &str) -> Result<Method, Error> {
    name.parse::<Method>()
        .map_err(|e| Error::BadParam(e.to_string()))
}

pub use kairos_report::thousands;

/// A duration in the unit that reads best.
pub fn duration(ns: u64) -> String {
    let x = ns as f64;
    if ns >= 1_000_000_000 {
        format!("{:.3} s", x / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", x / 1e6)
    } else if ns >= 1_000 {
        format!("{:.3} µs", x / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// A table cell as the page shows it.
pub fn cell(c: &Cell) -> String {
    match c {
        Cell::Text(s) => s.clone(),
        Cell::Int(i) if *i < 0 => format!("-{}", thousands(i.unsigned_abs())),
        Cell::Int(i) => thousands(*i as u64),
        Cell::UInt(u) => thousands(*u),
        Cell::Float { value, decimals } => format!("{value:.*}", *decimals as usize),
        Cell::Percent(p) => format!("{p:.1} %"),
        Cell::Duration { ns } => duration(*ns),
        Cell::Empty => String::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_well() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(1234567), "1,234,567");
        assert_eq!(super::thousands(123), "123");
        assert_eq!(super::duration(1_500_000_000), "1.500 s");
        assert_eq!(super::duration(2_000), "2.000 µs");
        assert_eq!(super::duration(12), "12 ns");
    }
}
