//! Typed errors of the lab. The CLI turns each into one sentence with the fix.

/// Errors of emulation and scoring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The profile has no traced calls: it is not an exact trace.
    #[error("the profile has no traced calls; emulation and scoring need an exact trace from `kairos collect trace`")]
    NoCalls,
    /// The sampling interval is zero.
    #[error("the sampling interval must be at least 1 ns")]
    BadInterval,
    /// An LBR depth no CPU has.
    #[error("LBR depth {0} is not one a CPU has; use 8, 16, 32 or 64")]
    BadDepth(usize),
    /// The CPU frequency used to turn ns into cycles is not a positive finite number.
    #[error("CPU frequency {0} GHz must be a positive number")]
    BadCpuGhz(f64),
    /// A score bucket of zero width.
    #[error("the score bucket width must be at least 1 ns")]
    BadBucket,
    /// A traced call names a thread or frame the profile does not have.
    #[error("traced call {index} refers to {what} {value}, which the profile does not have")]
    BadCall {
        index: usize,
        what: &'static str,
        value: u32,
    },
    /// A traced call ends before it starts.
    #[error("traced call {index} ends ({end_ns} ns) before it starts ({start_ns} ns)")]
    CallEndsBeforeStart {
        index: usize,
        start_ns: u64,
        end_ns: u64,
    },
    /// Too many samples or branch records for the model's 32-bit indices.
    #[error("the emulation would make more than 2^32 samples; use a longer interval")]
    TooManySamples,
    /// A line of a `spikes` delay file is not `start_ns end_ns`.
    #[error("delay file line {line}: {detail}")]
    BadDelayLine { line: usize, detail: String },
    /// Options of a synthetic profile that cannot be met.
    #[error("{0}")]
    InvalidOptions(String),
    /// Time assignment refused the profile.
    #[error(transparent)]
    Assign(#[from] kairos_time_assignment::Error),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
