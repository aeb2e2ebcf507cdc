//! What can go wrong with a fleet root, a publication or a query, each with what the
//! binary needs to say it in one sentence.

use std::path::PathBuf;

/// An error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The root is neither a local path nor an `s3://` URL.
    #[error("{root} is not a fleet root: {why}")]
    BadRoot { root: String, why: String },
    /// The object store refused or could not be reached.
    #[error("object storage {root}: {source}")]
    Store {
        root: String,
        #[source]
        source: object_store::Error,
    },
    /// A result directory could not be read or published.
    #[error(transparent)]
    Result(#[from] kairos_result::Error),
    /// The result is already at that place of the layout; results are never overwritten.
    #[error("{what} is already published at {place}")]
    AlreadyPublished { what: String, place: String },
    /// Nothing to query: no table folder with Parquet files under the root.
    #[error("{root} holds no published table (no TABLE/host=.../*.parquet)")]
    Empty { root: String },
    /// The SQL was refused or failed.
    #[error("{0}")]
    Query(#[from] datafusion::error::DataFusionError),
    /// A view was asked for whose tables no result here has.
    #[error("the view {view} needs the table {table}, which none of these results has")]
    ViewUnavailable { view: String, table: String },
    /// A local file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The engine's threads could not be started.
    #[error("cannot start the query threads: {0}")]
    Runtime(std::io::Error),
}

pub type Result<T, E = FleetError> = std::result::Result<T, E>;

/// Maps an I/O error on `path`.
pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> FleetError + '_ {
    move |source| FleetError::Io {
        path: path.to_path_buf(),
        source,
    }
}
