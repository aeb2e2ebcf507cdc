//! Query-string parameters, parsed strictly: an unknown value is a 400 with a sentence,
//! never a silent default.

use crate::error::Error;

pub struct Query {
    pairs: Vec<(String, String)>,
}

/// The samples a request selects: absolute time range and optional TIDs.
#[derive(Debug, Clone, PartialEq)]
pub struct Sel {
    pub from: u64,
    pub to: u64,
    pub tids: Option<Vec<i32>>,
}

impl Sel {
    /// A cache key.
    pub fn key(&self) -> String {
        format!("{}-{}-{:?}", self.from, self.to, self.tids)
    }
}

impl Query {
    pub fn parse(q: &str) -> Result<Query, Error> {
        let pairs: Vec<(String, String)> =
            form_urlencoded::parse(q.as_bytes()).into_owned().collect();
        if pairs.len() > 32 {
            return Err(Error::BadParam("too many query parameters".into()));
        }
        Ok(Query { pairs })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// A non-negative number (fractions allowed, then floored), or None when absent.
    pub fn num(&self, name: &str) -> Result<Option<u64>, Error> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Some(x.max(0.0).min(u64::MAX as f64) as u64)),
            _ => Err(Error::BadParam(format!("{name}={v} is not a number"))),
        }
    }

    /// One of `choices`, or `default` when absent.
    pub fn choice<'a>(
        &self,
        name: &str,
        choices: &[&'a str],
        default: &'a str,
    ) -> Result<&'a str, Error> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => choices.iter().find(|c| **c == v).copied().ok_or_else(|| {
                Error::BadParam(format!("{name}={v} is not one of {}", choices.join(", ")))
            }),
        }
    }

    /// A comma-separated list of integers.
    pub fn list<T: std::str::FromStr>(&self, name: &str) -> Result<Option<Vec<T>>, Error> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        if v.len() > 4096 {
            return Err(Error::BadParam(format!("{name} is too long")));
        }
        v.split(',')
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.trim()
                    .parse::<T>()
                    .map_err(|_| Error::BadParam(format!("{name}: {s} is not an integer")))
            })
            .collect::<Result<Vec<T>, Error>>()
            .map(Some)
    }

    /// The selection of a result: `from`/`to` relative to its first sample, and `tids`.
    pub fn sel(&self, d: &impl Timed) -> Result<Sel, Error> {
        let (start_ns, duration_ns) = d.span();
        let from = self.num("from")?.unwrap_or(0);
        let to = self.num("to")?.unwrap_or(duration_ns.saturating_add(1));
        if to < from {
            return Err(Error::BadParam(format!("to={to} is before from={from}")));
        }
        Ok(Sel {
            from: start_ns.saturating_add(from),
            to: start_ns.saturating_add(to),
            tids: self.list("tids")?,
        })
    }
}

/// What a selection's `from` and `to` are relative to: a result's first sample time and
/// its duration (ns).
pub trait Timed {
    fn span(&self) -> (u64, u64);
}
