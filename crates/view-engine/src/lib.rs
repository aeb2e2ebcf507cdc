//! The engine of `kairos view`: serves the result page (given by the crate above, with the
//! analyses' page modules: [`site::Site`]) and a JSON API on 127.0.0.1 under a random
//! token. The server aggregates per pixel bucket and per tree level, so the page only ever
//! receives what it draws: a 10-million-sample result costs the browser no more than a
//! small one. The API is described in `docs/VIEW_API.md`. It sits below the analyses, so
//! that their page modules use it; it knows none of them.

mod agg;
pub mod api;
mod blocks;
#[cfg(test)]
mod blocks_tests;
mod buckets;
#[cfg(test)]
mod buckets_tests;
mod cpu_buckets;
mod error;
#[cfg(test)]
mod fast_path_tests;
mod http;
mod ids;
mod index;
mod lanes;
mod load;
mod par;
mod query;
mod results;
#[cfg(test)]
mod results_tests;
mod samples;
mod server;
pub mod site;
mod sums;
mod token;
mod totals;
mod whole;
#[cfg(test)]
mod whole_tests;

pub use error::Error;
pub use http::{MAX_HEAD, MAX_TARGET};
pub use query::{Query, Sel, Timed};
pub use results::{Data, Derived, Loaded};
pub use server::{Server, DEFAULT_PORT};
pub use site::State;
