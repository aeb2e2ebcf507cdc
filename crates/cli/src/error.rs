//! The one place where errors become sentences a user can act on.

use std::fmt;

/// An error as the user sees it: one sentence saying what went wrong and how to fix it.
#[derive(Debug)]
pub struct UserError {
    message: String,
    /// 2 for bad usage (unknown analysis, knob, report), 1 for everything else.
    code: i32,
}

impl UserError {
    pub fn usage(message: impl Into<String>) -> Self {
        UserError {
            message: message.into(),
            code: 2,
        }
    }
    pub fn failed(message: impl Into<String>) -> Self {
        UserError {
            message: message.into(),
            code: 1,
        }
    }
    pub fn exit_code(&self) -> i32 {
        self.code
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// An analysis's failure keeps its sentence; its kind gives the exit status.
impl From<kairos_analysis_registry::Failure> for UserError {
    fn from(f: kairos_analysis_registry::Failure) -> Self {
        match f {
            kairos_analysis_registry::Failure::Usage(s) => UserError::usage(s),
            kairos_analysis_registry::Failure::Failed(s) => UserError::failed(s),
        }
    }
}

/// A run's error keeps its sentence; whether the request itself was wrong gives the exit
/// status.
impl From<kairos_run::Error> for UserError {
    fn from(e: kairos_run::Error) -> Self {
        if e.is_usage() {
            UserError::usage(e.to_string())
        } else {
            UserError::failed(e.to_string())
        }
    }
}

pub type CliResult<T = ()> = Result<T, UserError>;
