//! Results of many hosts: published to the fleet layout (kairos-result's `fleet`) on a
//! local disk or S3-compatible object storage, and queried there with SQL by DataFusion,
//! with views for the common questions (`views.sql`). The one crate of Kairos that runs
//! an async runtime: its callers stay synchronous.

mod error;
mod publish;
mod query;
mod render;
mod root;
mod views;

pub use error::{FleetError, Result};
pub use publish::publish;
pub use query::{Fleet, ViewState, PARTITIONS};
pub use render::table;
pub use root::{Root, S3_SETTINGS};
pub use views::{views, View, VIEWS_SQL};

/// The engine's threads (two: queries scan in parallel; object storage waits on the network).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(FleetError::Runtime)
}

/// The line of `kairos info`.
pub fn info() -> String {
    format!(
        "fleet: kairos publish to a local root or s3://; kairos query runs SQL (DataFusion) with {} views",
        views().len()
    )
}
