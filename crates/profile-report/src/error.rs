//! Errors of the analyses: all caused by the caller's options, never by the profile.

/// Why an analysis could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(
        "unknown grouping `{0}`; valid values: process, module, function, callstack, thread, cpu"
    )]
    UnknownGroupBy(String),
    #[error("time range start {start} ns is after its end {end} ns")]
    InvalidTimeRange { start: u64, end: u64 },
    #[error("bucket width must be greater than 0 ns")]
    ZeroBucket,
    #[error("{buckets} buckets of {bucket_ns} ns are too many (at most {max}); choose a wider bucket or a shorter time range")]
    TooManyBuckets {
        buckets: u64,
        bucket_ns: u64,
        max: u64,
    },
}
