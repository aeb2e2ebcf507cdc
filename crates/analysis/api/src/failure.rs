//! Why an analysis's entry point failed, as the user reads it: one sentence with the fix.
//! The CLI maps the kind to its exit status, so analysis crates need not know the CLI.

use std::fmt;

/// A failed collection or report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The command line asks for something impossible (exit status 2).
    Usage(String),
    /// The work itself failed: missing program, permission, damaged result (exit status 1).
    Failed(String),
}

impl Failure {
    pub fn usage(sentence: impl Into<String>) -> Self {
        Failure::Usage(sentence.into())
    }

    pub fn failed(sentence: impl Into<String>) -> Self {
        Failure::Failed(sentence.into())
    }

    pub fn is_usage(&self) -> bool {
        matches!(self, Failure::Usage(_))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(s) | Failure::Failed(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Failure {}
