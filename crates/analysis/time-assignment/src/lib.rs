//! Time assignment for last-branch records (the paper's section 4.4, and better).
//!
//! Branch records have no time stamp. To use them as extra samples on a timeline, each
//! new record of a sample gets an estimated time inside the interval (t_{i-1}, t_i] that
//! ends at its sample, and a weight: the duration it stands for. [`assign`] turns a
//! [`Profile`] into time-sorted [`Point`]s with one [`Method`]; [`to_profile`] turns the
//! points back into a profile whose samples are the points, so the hotspots and timeline
//! analyses run on it unchanged.
//!
//! Conventions:
//! - per thread, the interval of a sample starts at the previous sample of the thread;
//!   the first sample of a thread stands for its own weight (the sampling period);
//! - only records with `is_new` are used (the rest belonged to the previous snapshot);
//! - points of an interval are in order of occurrence, oldest record first, the sample
//!   last at t_i; each point sits at the end of the stretch it stands for, so a record's
//!   point covers the execution that its branch ended, in its FROM function;
//! - the weights of an interval's points always sum to the interval length;
//! - functions are identified by name + module; run shares r_f are self shares of the
//!   samples by weight (by count when no sample has a weight);
//! - nothing panics on any profile.

mod derive;
mod error;
mod layout;
mod method;
mod methods;
mod out;
mod owners;
mod pipe;
mod prepare;
mod record_times;
mod slots;
mod snapshots;
mod to_profile;

use kairos_model::{FrameIdx, Profile, ThreadIdx};

pub use derive::{derive, derive_over, Derived};
pub use error::Error;
pub use method::Method;
pub use owners::Owners;
pub use record_times::RecordTimes;
pub use to_profile::to_profile;

/// One time-stamped point: a sample, or a branch record given a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub time_ns: u64,
    pub thread: ThreadIdx,
    /// The function executing (a record's FROM frame; the sample's leaf frame).
    pub frame: Option<FrameIdx>,
    /// The duration the point stands for, ending at `time_ns`.
    pub weight_ns: u64,
    pub from_branch: bool,
    /// Index into the profile's samples of the sample whose interval holds the point.
    pub sample: u32,
    /// Index into the profile's branches of the record a branch point stands for.
    pub record: Option<u32>,
}

/// The points of a whole profile for one method.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    /// Sorted by time (stable: within a thread, in order of occurrence).
    pub points: Vec<Point>,
    pub method: Method,
    /// Resolution gained: (samples + records given a time) / samples (1 with no branch
    /// records or `none`).
    pub points_per_sample: f64,
    /// What reports should say: losses, fallbacks, learned rates.
    pub notes: Vec<String>,
}

/// Gives every sample and every new branch record of `profile` a time and a weight.
pub fn assign(profile: &Profile, method: Method) -> Result<Assignment, Error> {
    let p = prepare::prepare(profile, profile.samples.as_slice(), method);
    let mut points = Vec::with_capacity(profile.samples.len() + profile.branches.len());
    let (notes, records) = run_sorted(&p, profile, method, &mut points)?;
    let points_per_sample = per_sample(&p, records);
    Ok(Assignment {
        points,
        method,
        points_per_sample,
        notes,
    })
}

/// Samples plus records given a time, per sample: `covered` adds points that are the
/// sample's own weight drawn where it lies, which gain no resolution.
fn per_sample(p: &prepare::Prepared, records: u64) -> f64 {
    if p.intervals.is_empty() {
        1.0
    } else {
        (p.intervals.len() as f64 + records as f64) / p.intervals.len() as f64
    }
}

/// Runs `method` and hands its points to `sink` in time order (stable: within a thread,
/// in order of occurrence); returns the notes and how many points are records.
fn run_sorted(
    p: &prepare::Prepared,
    profile: &Profile,
    method: Method,
    sink: &mut dyn out::Sink,
) -> Result<(Vec<String>, u64), Error> {
    let mut notes = p.notes.clone();
    let records = match pipe::run(p, sink, |o| run_method(p, method, o, &mut notes))? {
        pipe::Merged::Records(r) => r,
        // Never with the methods as they are; kept so a new method cannot break order.
        pipe::Merged::OutOfOrder => {
            return Err(Error::Internal(format!(
                "time assignment {method} gave a thread's points out of time order"
            )))
        }
        pipe::Merged::Lost => {
            return Err(Error::Internal(format!(
                "time assignment {method}: the thread putting the points in time order failed"
            )))
        }
    };
    if method == Method::None && !profile.branches.is_empty() {
        notes.push("branch records ignored (plain sampling)".into());
    }
    Ok((notes, records))
}

fn run_method(
    p: &prepare::Prepared,
    method: Method,
    out: &mut pipe::Out,
    notes: &mut Vec<String>,
) -> Result<(), Error> {
    match method {
        Method::None => methods::none::run(p, out),
        Method::Equal => methods::equal::run(p, out),
        Method::Ratio => methods::ratio::run(p, out),
        Method::Proportional => methods::proportional::run(p, out),
        Method::Cycles => methods::cycles::run(p, out, notes)?,
        Method::Segments => methods::segments::run(p, out),
        Method::Nesting => methods::nesting::run(p, out),
        Method::Visits => methods::visits::run(p, out),
        Method::Covered => methods::covered::run(p, out, notes),
    }
    Ok(())
}
