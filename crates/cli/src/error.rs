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
        UserError { message: message.into(), code: 2 }
    }
    pub fn failed(message: impl Into<String>) -> Self {
        UserError { message: message.into(), code: 1 }
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

pub type CliResult<T = ()> = Result<T, UserError>;

/// Explains perf_event_paranoid in one sentence, for permission failures.
pub fn paranoid_advice(paranoid: Option<i32>) -> String {
    let level = paranoid.map(|p| p.to_string()).unwrap_or_else(|| "unknown".into());
    format!(
        "kernel.perf_event_paranoid is {level} (it limits who may profile: 2 = own user-space code only, \
         1 = also kernel, 0 = also CPU-wide, -1 = everything); run as root, grant CAP_PERFMON, or lower it with \
         `sudo sysctl kernel.perf_event_paranoid=1`"
    )
}
