//! Errors of the page's server and its API, below everything that answers.

/// Errors of the server and its API. API errors become `{"error": ...}` answers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    BadParam(String),
    #[error("{0}")]
    NotFound(String),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("port {port} on 127.0.0.1 is in use; choose another with --port, or leave --port out to take a free one")]
    PortInUse { port: u16 },
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("cannot make a random token: {0}")]
    Token(std::io::Error),
}

impl Error {
    pub(crate) fn status(&self) -> u16 {
        match self {
            Error::BadParam(_) => 400,
            Error::NotFound(_) => 404,
            _ => 500,
        }
    }
}
