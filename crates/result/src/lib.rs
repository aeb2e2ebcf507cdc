//! Result directories: manifest and Parquet tables, written and read back.
//!
//! A Kairos result is a directory like VTune's (`r000hs/`): a `manifest.json` saying what
//! was run, where, and what was lost, and the profile as Parquet tables under `tables/`
//! (schema in `docs/SCHEMA.md`), so results can be queried with DuckDB or pandas without
//! Kairos, and stay readable when the profiled binaries are gone.
//!
//! ```no_run
//! # fn main() -> Result<(), kairos_result::Error> {
//! use kairos_result::{next_result_dir, read_profile, write_profile, Manifest, ResultDir};
//! # let profile = kairos_model::Profile::default();
//! let mut dir = ResultDir::create(next_result_dir(std::path::Path::new("."), "hs"))?;
//! *dir.manifest_mut() = Manifest::new("hotspots");
//! write_profile(&mut dir, &profile)?; // also saves the manifest
//! let back = read_profile(&ResultDir::open(dir.path())?)?;
//! assert_eq!(back, profile);
//! # Ok(()) }
//! ```
//!
//! Nothing here panics on any input: damaged directories, manifests and tables give a
//! typed [`Error`] naming the file at fault.

mod branch_table;
mod call_table;
mod derived;
mod dir;
mod error;
pub mod fleet;
mod manifest;
mod sample_table;
mod table_io;
mod tables;

pub use derived::DERIVED_DIR;
pub use dir::{next_result_dir, ResultDir, MANIFEST_FILE, TABLES_DIR};
pub use error::{Error, Result};
pub use manifest::{
    rfc3339_utc, Capability, Counts, Event, EventSummary, Host, Manifest, Source, TableInfo,
    Target, TargetExit, FORMAT_VERSION,
};
pub use table_io::{created_by, table_error, table_metadata};
pub use tables::{
    read_profile, read_profile_except_samples, read_profile_of_event, write_profile, TABLES,
};
