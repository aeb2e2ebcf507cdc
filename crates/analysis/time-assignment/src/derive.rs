//! The profile a method makes, with each branch record's time: what the page's method
//! switch shows, in one call. The points go straight from the method, in time order
//! (see [`crate::out`]), into the derived profile's samples: no list of points, no sort.
//! The result is the same as [`crate::to_profile`] of [`crate::assign`].

use std::thread::ScopedJoinHandle;

use kairos_model::{FrameIdx, Profile, Sample, Stack, StackIdx};

use crate::out::Sink;
use crate::to_profile::{root_stacks, with_samples};
use crate::{per_sample, prepare, run_sorted, Error, Method, Point};

/// A profile as one method makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// Samples are the method's points (see [`crate::to_profile`]).
    pub profile: Profile,
    /// Time (ns) each branch record was given, `u64::MAX` for records that got no point
    /// (already in the previous snapshot); empty for `none`.
    pub record_time: Vec<u64>,
    pub points_per_sample: f64,
    pub notes: Vec<String>,
}

/// Turns points into samples as `to_profile` does.
struct ToSamples<'a, 's> {
    /// The samples the points belong to (the profile's, or given beside it).
    owners: &'a [Sample],
    stacks: Vec<Stack>,
    roots: Vec<Option<StackIdx>>,
    samples: Vec<Sample>,
    /// The samples' vector, being allocated on another thread.
    pending: Option<ScopedJoinHandle<'s, Vec<Sample>>>,
    record_time: Vec<u64>,
}

impl ToSamples<'_, '_> {
    /// Takes the samples' vector once it is ready.
    fn ready(&mut self) {
        if let Some(h) = self.pending.take() {
            if let Ok(v) = h.join() {
                self.samples = v;
            }
        }
    }
}

impl Sink for ToSamples<'_, '_> {
    fn put(&mut self, pt: Point) {
        if self.pending.is_some() {
            self.ready();
        }
        if let Some(slot) = pt.record.and_then(|r| self.record_time.get_mut(r as usize)) {
            *slot = pt.time_ns;
        }
        let owner = self.owners.get(pt.sample as usize);
        let stack = if pt.from_branch {
            pt.frame.and_then(|f: FrameIdx| {
                let root = self.roots.get_mut(f as usize)?;
                Some(*root.get_or_insert_with(|| {
                    self.stacks.push(Stack {
                        parent: None,
                        frame: f,
                    });
                    (self.stacks.len() - 1) as StackIdx
                }))
            })
        } else {
            owner.and_then(|s| s.stack)
        };
        self.samples.push(Sample {
            time_ns: pt.time_ns,
            thread: pt.thread,
            cpu: owner.map_or(0, |s| s.cpu),
            stack,
            weight: pt.weight_ns,
        });
    }
}

/// Derives `method`'s profile of `profile` and the time of every branch record.
pub fn derive(profile: &Profile, method: Method) -> Result<Derived, Error> {
    derive_over(profile, &profile.samples, method)
}

/// [`derive`] with the samples given beside the profile (whose own samples are then
/// ignored): a caller that keeps samples in another form needs no copy of the profile.
pub fn derive_over(profile: &Profile, owners: &[Sample], method: Method) -> Result<Derived, Error> {
    let records = if method == Method::None {
        0
    } else {
        profile.branches.len()
    };
    // Writing fresh memory the first time (page faults and zeroing) is a large part of
    // the cost at scale, so the big outputs are allocated and written once on a second
    // core while the first works: the record times while the intervals are prepared, the
    // derived samples while the method learns its model.
    std::thread::scope(|sc| {
        let times = sc.spawn(move || vec![u64::MAX; records]);
        let p = prepare::prepare(profile, owners);
        let record_time = times.join().unwrap_or_else(|_| vec![u64::MAX; records]);
        let new_records = if method == Method::None {
            0
        } else {
            p.intervals.iter().map(|iv| iv.recs.len()).sum::<usize>()
        };
        // Every method makes a point per sample and per new record; `covered` may add one
        // more per sample (reserved, not written ahead).
        let (touch, reserve) = (
            p.intervals.len() + new_records,
            2 * p.intervals.len() + new_records,
        );
        let samples = sc.spawn(move || {
            let mut v: Vec<Sample> = Vec::with_capacity(reserve);
            v.resize(
                touch,
                Sample {
                    time_ns: 0,
                    thread: 0,
                    cpu: 0,
                    stack: None,
                    weight: 0,
                },
            );
            v.clear();
            v
        });
        let mut sink = ToSamples {
            owners,
            stacks: profile.stacks.clone(),
            roots: root_stacks(profile),
            samples: Vec::new(),
            pending: Some(samples),
            record_time,
        };
        let (notes, records) = run_sorted(&p, profile, method, &mut sink)?;
        let points_per_sample = per_sample(&p, records);
        drop(p);
        sink.ready();
        let ToSamples {
            stacks,
            samples,
            record_time,
            ..
        } = sink;
        Ok(Derived {
            profile: with_samples(profile, stacks, samples),
            record_time,
            points_per_sample,
            notes,
        })
    })
}
