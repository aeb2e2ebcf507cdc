//! Typed errors. Each variant names the file (and table) concerned so the CLI can say
//! what is wrong and what to do in one sentence without guessing.

use std::io;
use std::path::PathBuf;

/// Errors of the result store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `ResultDir::create` found something already at the path; results are never
    /// overwritten.
    #[error("{}: already exists and is not an empty directory; results are never overwritten", path.display())]
    AlreadyExists { path: PathBuf },

    /// The result directory does not exist.
    #[error("{}: no such result directory", path.display())]
    NotFound { path: PathBuf },

    /// The directory exists but has no `manifest.json`.
    #[error("{}: not a Kairos result directory (no manifest.json)", path.display())]
    NotAResult { path: PathBuf },

    /// `manifest.json` is not valid JSON or does not match the manifest structure.
    #[error("{}: damaged manifest at line {line}, column {column}: {source}", path.display())]
    DamagedManifest {
        path: PathBuf,
        line: usize,
        column: usize,
        source: serde_json::Error,
    },

    /// The result was written by a newer, incompatible Kairos.
    #[error("{}: result format version {found} is newer than this Kairos reads ({supported}); use a newer Kairos", path.display())]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    /// `--event NAME` names no event of the result.
    #[error("the result has no event {name:?}; its events are: {}", if known.is_empty() { "none recorded".to_string() } else { known.join(", ") })]
    UnknownEvent { name: String, known: Vec<String> },

    /// A table file is missing.
    #[error("table {table}: {} is missing", path.display())]
    MissingTable { table: String, path: PathBuf },

    /// A table file is unreadable, truncated, or has the wrong columns or values.
    #[error("table {table}: {} is damaged: {detail}", path.display())]
    DamagedTable {
        table: String,
        path: PathBuf,
        detail: String,
    },

    /// `write_profile` was given a profile whose indices point nowhere; writing it would
    /// make a result that cannot be read back.
    #[error("invalid profile: {0}")]
    InvalidProfile(String),

    /// Any other file-system error.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
