//! What a backend said to one window, whatever the protocol (HTTP or gRPC): the one
//! vocabulary the send loop acts on.

use std::time::Duration;

/// What the backend said.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted {
        status: u16,
        note: Option<String>,
    },
    /// Not to be sent again: why.
    Refused(String),
    /// To be sent again later: why, and how long the backend asked to wait.
    Retry(String, Option<Duration>),
}
