//! Errors of time assignment: a method the profile cannot support, or an unknown name.

use crate::Method;

/// Why time assignment could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("unknown time-assignment method `{0}`; valid values: none, equal, ratio, proportional, cycles, segments, nesting, visits, covered")]
    UnknownMethod(String),
    #[error("time assignment `{method}` is unavailable: {reason}")]
    MethodUnavailable { method: Method, reason: String },
    #[error("internal error: {0}; please report it with the result")]
    Internal(String),
}
