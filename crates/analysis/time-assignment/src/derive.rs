//! The profile a method makes, with each branch record's time: what the page's method
//! switch shows, in one call. The points go straight from the method, in time order
//! (see [`crate::out`]), into the derived profile's sample columns: no list of points,
//! no sort, no 32-byte [`Sample`] per point (tens of millions at scale, and writing fresh
//! memory is what costs there). The result is the same as [`crate::to_profile`] of
//! [`crate::assign`].

use kairos_model::{FrameIdx, Profile, Sample, SampleColumns, Stack, StackIdx};

use crate::out::Sink;
use crate::snapshots::Snapshots;
use crate::to_profile::{root_stacks, with_samples};
use crate::{per_sample, prepare, run_sorted, Error, Method, Owners, Point, RecordTimes};

/// A profile as one method makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// The derived profile without its samples (see [`crate::to_profile`]): they are
    /// in `samples`.
    pub profile: Profile,
    /// The method's points as samples, in time order.
    pub samples: SampleColumns,
    /// Where each branch record's point is among `samples` (its time is theirs); none
    /// for records that got no point (already in the previous snapshot); empty for `none`.
    pub record_time: RecordTimes,
    pub points_per_sample: f64,
    pub notes: Vec<String>,
}

/// Turns points into samples as `to_profile` does.
struct ToSamples<'a, S: ?Sized> {
    /// The samples the points belong to (the profile's, or given beside it).
    owners: &'a S,
    stacks: Vec<Stack>,
    roots: Vec<Option<StackIdx>>,
    samples: SampleColumns,
    record_time: RecordTimes,
}

impl Derived {
    /// Time (ns) branch record `i` was given; None without a point.
    pub fn record_time(&self, i: usize) -> Option<u64> {
        self.record_time.time(i, &self.samples.time)
    }

    /// The derived profile with its samples in the model's vector (what
    /// [`crate::to_profile`] gives), for callers that want one value.
    pub fn to_profile(&self) -> Profile {
        Profile {
            samples: self.samples.to_vec(),
            ..self.profile.clone()
        }
    }
}

impl<S: Owners + ?Sized> Sink for ToSamples<'_, S> {
    fn put(&mut self, pt: Point) {
        if let Some(r) = pt.record {
            self.record_time.set(r as usize, self.samples.len());
        }
        let owner = self.owners.get(pt.sample as usize);
        let owner = owner.as_ref();
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
    derive_over(profile, profile.samples.as_slice(), method)
}

/// [`derive`] with the samples given beside the profile (whose own samples are then
/// ignored), as a vector or as columns: a caller that keeps samples in another form
/// needs no copy of the profile or of its samples.
pub fn derive_over<S: Owners + ?Sized>(
    profile: &Profile,
    owners: &S,
    method: Method,
) -> Result<Derived, Error> {
    let n = owners.len();
    // The one pass over all records (hundreds of millions at scale), made first so that
    // the record times below are made from its `is_new` bits rather than another pass.
    let mut scanned = Snapshots::of(profile, n);
    let bits = std::mem::take(&mut scanned.1.is_new);
    let (records, is_new): (usize, &[u64]) = if method == Method::None {
        (0, &[])
    } else {
        (profile.branches.len(), &bits)
    };
    // Writing fresh memory the first time (page faults and zeroing) is most of the cost
    // at scale on a VM, so the big outputs (the record times, the derived samples) are
    // allocated and written once on a second core while the first prepares the
    // intervals, which write memory of their own.
    // Column widths: every thread and CPU of a point is a sample's; a point's weight is
    // at most its interval, about a sample's weight when weights are ns (a larger one
    // widens its column).
    let thread_max = profile.threads.len().saturating_sub(1) as u64;
    let (cpu_max, weight_max) = (0..n)
        .filter_map(|i| owners.get(i))
        .fold((0, 0), |(c, w), s| (s.cpu.max(c), s.weight.max(w)));
    let outputs = move || {
        let times = RecordTimes::from_bits(records, is_new);
        // Every method makes a point per sample and per new record (records of samples
        // that exist: at most all new ones); `covered` may add one more per sample
        // (reserved, not written ahead).
        let new_records = times.new_records();
        let mut v = SampleColumns::with_capacity(
            2 * n + new_records,
            thread_max,
            u64::from(cpu_max),
            weight_max,
        );
        v.reserve_touched(n + new_records);
        (times, v)
    };
    std::thread::scope(|sc| {
        // Without a second thread the outputs are written here, after `prepare`.
        let pending = std::thread::Builder::new().spawn_scoped(sc, outputs).ok();
        let p = prepare::prepare_scanned(profile, owners, method, scanned);
        let (record_time, samples) = pending.and_then(|h| h.join().ok()).unwrap_or_else(outputs);
        let mut sink = ToSamples {
            owners,
            stacks: profile.stacks.clone(),
            roots: root_stacks(profile),
            samples,
            record_time,
        };
        let (notes, records) = run_sorted(&p, profile, method, &mut sink)?;
        let points_per_sample = per_sample(&p, records);
        // Freeing gigabytes (unmapping) takes a while; nobody waits for it. Should no
        // thread start, the intervals are freed here when the closure is dropped.
        let _ = std::thread::Builder::new().spawn(move || drop(p));
        let ToSamples {
            stacks,
            samples,
            record_time,
            ..
        } = sink;
        Ok(Derived {
            profile: with_samples(profile, stacks, Vec::new()),
            samples,
            record_time,
            points_per_sample,
            notes,
        })
    })
}
