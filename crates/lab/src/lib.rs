//! The validation lab: emulate LBR sampling from exact function traces, and score the
//! time-assignment methods against the trace the emulation came from.
//!
//! Our machines cannot record LBR, but any machine can record an exact trace
//! (`kairos collect trace`). [`emulate_lbr`] turns the trace into what a sampler with a
//! user call+return LBR would have recorded; [`score`] runs every time-assignment method
//! on that emulated result and measures, against the trace, how well each rebuilds the
//! per-bucket function mix and how many short events (the `spikes` delays) it finds.
//!
//! ```no_run
//! # fn main() -> Result<(), kairos_lab::Error> {
//! # let trace = kairos_model::Profile::default();
//! use kairos_time_assignment::Method;
//! let emulated = kairos_lab::emulate_lbr(&trace, 1_000_000, 16, false, 3.0)?;
//! let table = kairos_lab::score(&emulated, 10_000_000, &Method::ALL)?;
//! print!("{}", table.to_table().to_text());
//! # Ok(()) }
//! ```
//!
//! Nothing here panics on any input: bad options and inconsistent traces give a typed
//! [`Error`].

pub mod accuracy;
pub mod decompose;
mod delays;
mod derive;
mod emulate;
mod error;
mod render;
mod scale;
mod scale_branches;
mod score;
pub mod synth;
mod timeline;

#[cfg(test)]
mod testutil;

pub use delays::parse_delays;
pub use derive::{measure_derive, DeriveMeasure};
pub use emulate::{emulate_lbr, emulate_lbr_with, EmulateOptions, DEPTHS, FILTER, MAX_CYCLES};
pub use error::{Error, Result};
pub use scale::{synthesize, ScaleOptions, SYNTHETIC_FILTER};
pub use score::{
    score, score_points, score_with, Measured, MethodScore, ScoreOptions, ScoreTable,
    DEFAULT_EVENT_BUCKET_NS, DEFAULT_EVENT_FUNCTION, DEFAULT_EVENT_MIN_NS,
};
pub use timeline::{thread_events, Event, ThreadEvents};
