//! One file per time-assignment method. Each appends the points of every interval.

pub(crate) mod covered;
pub(crate) mod cycles;
pub(crate) mod durations;
pub(crate) mod equal;
pub(crate) mod nesting;
pub(crate) mod none;
pub(crate) mod proportional;
pub(crate) mod rate;
pub(crate) mod ratio;
pub(crate) mod segments;
pub(crate) mod visits;
