//! The time-assignment methods: names, parsing and one-line descriptions.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// How branch records get a time inside the interval before their sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Plain sampling: branch records are ignored.
    None,
    /// Paper method 1: the interval is split equally among the records and the sample.
    Equal,
    /// Paper method 2: each record gets interval x r_f; the rest goes to the sample.
    Ratio,
    /// Paper method 3: the interval is split in proportion to r_f, normalised per interval.
    Proportional,
    /// Measured LBR cycles between records; proportional where cycles are missing.
    Cycles,
    /// Ours: each segment between two branches is sized by its function's expected
    /// duration per visit (sampled time / number of visits) instead of its run share.
    Segments,
    /// Ours: like `segments`, but durations are learned per call/return context
    /// (caller, function, callee/return target) by regression on complete intervals.
    Nesting,
    /// Ours: full visits keep their function's expected duration; the interval's slack
    /// goes mostly to the partial head and tail, whose length is least known.
    Visits,
    /// Ours, the default: records explain the part of the interval they cover (measured
    /// cycles or expected durations); the part no record covers is weighed like plain
    /// sampling.
    Covered,
}

impl Method {
    /// Every method, in the order reports list them.
    pub const ALL: [Method; 9] = [
        Method::None,
        Method::Equal,
        Method::Ratio,
        Method::Proportional,
        Method::Cycles,
        Method::Segments,
        Method::Nesting,
        Method::Visits,
        Method::Covered,
    ];

    /// The branch method used where none is chosen (the page's record times): never
    /// worse than plain sampling, see crates/lab/README.md.
    pub const DEFAULT: Method = Method::Covered;

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::None => "none",
            Method::Equal => "equal",
            Method::Ratio => "ratio",
            Method::Proportional => "proportional",
            Method::Cycles => "cycles",
            Method::Segments => "segments",
            Method::Nesting => "nesting",
            Method::Visits => "visits",
            Method::Covered => "covered",
        }
    }

    /// One line saying what the method does.
    pub fn description(self) -> &'static str {
        match self {
            Method::None => "plain sampling: one point per sample standing for the whole interval; branch records ignored",
            Method::Equal => "paper method 1: the interval is divided equally among the new branch records and the sample",
            Method::Ratio => "paper method 2: each record gets interval x its function's run share; the rest goes to the sampled function",
            Method::Proportional => "paper method 3: the interval is divided in proportion to the run shares of the records' functions",
            Method::Cycles => "measured LBR cycles between branches give each record's duration; paper method 3 where cycles are missing",
            Method::Segments => "ours: each segment between branches sized by its function's mean duration per visit (sampled time / visits, or measured cycles), not by its run share",
            Method::Nesting => "ours: segment durations learned per call/return context (opening branch, function, closing branch) by regression over complete intervals",
            Method::Visits => "ours: each full visit between branches keeps its function's expected duration per visit; the interval's slack goes to the partial head and tail stretches, by how uncertain they are",
            Method::Covered => "ours (default): records explain the part of the interval they cover (measured cycles or expected durations per visit); the part no record covers goes to the sampled function, as plain sampling weighs it",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Method, Error> {
        let l = s.trim().to_ascii_lowercase();
        Method::ALL
            .into_iter()
            .find(|m| m.as_str() == l)
            .ok_or_else(|| Error::UnknownMethod(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Method::ALL {
            assert_eq!(m.to_string().parse::<Method>(), Ok(m));
            assert!(!m.description().is_empty());
        }
        assert_eq!("Equal".parse::<Method>(), Ok(Method::Equal));
        assert!(matches!(
            "tracer".parse::<Method>(),
            Err(Error::UnknownMethod(_))
        ));
    }
}
