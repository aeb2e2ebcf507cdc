//! The reports over a sampled profile that the hotspots analysis, the trace analysis,
//! memory-access and the CLI share: summary, grouping, hotspots, top-down tree and
//! timeline, `--time-assignment` for branch records, and `--time-range`.
//!
//! Each report reads a [`Profile`](kairos_model::Profile), selects samples with a
//! [`Filter`] and returns a [`kairos_report::Table`] or [`kairos_report::Document`], so the
//! CLI and the web page render the same result in text, CSV or JSON.
//!
//! Conventions shared by all of them:
//! - time is the sum of sample weights (ns of CPU time for cpu-clock/task-clock); shares
//!   are of the selected samples' total weight, or of their count when all weights are 0;
//! - a sample's *self* group comes from its leaf frame; *total* (inclusive) counts a
//!   sample once per group found anywhere in its stack, so recursion is not double-counted;
//! - functions are identified by name + module, so `main` of two programs stays apart;
//! - output order is fully determined (value descending, then name), so golden files are
//!   stable.

mod error;
mod filter;
mod group;
mod hotspots;
mod reports;
mod summary;
mod time_assign;
mod timeline;
mod top_down;
mod weight;

#[cfg(test)]
mod testutil;

pub use error::Error;
pub use filter::Filter;
pub use group::GroupBy;
pub use hotspots::{hotspots, Rows};
pub use reports::{parse_time_range, print_summary, print_summary_from, profile_report};
pub use summary::{summary, summary_rows};
pub use timeline::{timeline, MAX_BUCKETS};
pub use top_down::top_down;
