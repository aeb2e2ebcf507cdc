//! `score`: how close each time-assignment method comes to the exact trace.
//!
//! Two measures, both computed against the trace the emulated result keeps:
//!
//! - **Function-share error.** The trace span (first to last traced event) is cut into
//!   buckets of `bucket_ns`. In each bucket the exact share of each function is its *self*
//!   time there (the time it was the innermost open call; time outside any traced call is
//!   one more "function", `[untraced]`), over all threads. A method's share is the weight
//!   its points put in the bucket: a point stands for the stretch `[time - weight, time]`
//!   of its function, so its weight is spread evenly over that stretch and split at
//!   bucket edges (crediting the whole weight to the bucket of its end time would blame a
//!   method for a stretch that straddles an edge). The bucket's error is the total variation distance
//!   `1/2 * sum_f |p_f - q_f|`, from 0 (same mix) to 1 (disjoint); a bucket where the
//!   method put no weight at all counts 1, as nothing was learned about it. The score is
//!   the mean over the buckets with traced time, each bucket counting once. Only the time
//!   a thread's samples stand for is compared (from its first sample minus that sample's
//!   weight to its last sample): what ran after the last sample (a program's exit, its
//!   output) is seen by no sampler, and counting it would add the same error to every
//!   method. Threads without samples are compared over their whole trace.
//! - **Recall of short events.** Every call of `event_function` lasting at least
//!   `event_min_ns` is an event. It is found when the method put weight on that function,
//!   on the same thread, in a fine bucket (`event_bucket_ns`, 100 us by default, on the
//!   same grid origin) that the call overlaps: the method saw the event *and* placed it
//!   in time to within one fine bucket. As for the share error, a point's weight lies on
//!   the whole stretch `[time - weight, time]`, so a point counts when its stretch
//!   overlaps one of those fine buckets (by more than an instant).
//!
//! Functions are compared by name, so two frames of one function count as one. The
//! methods only see the emulated samples and branch records: the calls are removed from
//! the profile handed to them, so no method can peek at the truth.

use std::collections::{BTreeMap, HashMap};

use kairos_model::{FrameIdx, Profile, ThreadIdx};
use kairos_time_assignment::{assign, Method, Point};

use crate::error::{Error, Result};
use crate::timeline::thread_events;

/// The delay function of the `spikes` sample.
pub const DEFAULT_EVENT_FUNCTION: &str = "rare_delay";
/// Events shorter than this are not counted (the "100 us delays").
pub const DEFAULT_EVENT_MIN_NS: u64 = 100_000;
/// Grid of the recall check.
pub const DEFAULT_EVENT_BUCKET_NS: u64 = 100_000;

/// What to score and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreOptions {
    pub bucket_ns: u64,
    pub event_function: String,
    pub event_min_ns: u64,
    pub event_bucket_ns: u64,
    pub methods: Vec<Method>,
}

impl ScoreOptions {
    /// Every method, `rare_delay` events of 100 us or more on a 100 us grid.
    pub fn new(bucket_ns: u64) -> Self {
        ScoreOptions {
            bucket_ns,
            event_function: DEFAULT_EVENT_FUNCTION.to_string(),
            event_min_ns: DEFAULT_EVENT_MIN_NS,
            event_bucket_ns: DEFAULT_EVENT_BUCKET_NS,
            methods: Method::ALL.to_vec(),
        }
    }
}

/// The score of one method.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodScore {
    pub method: Method,
    /// None when the method could not run on this profile; `note` says why.
    pub result: Option<Measured>,
    pub note: Option<String>,
}

/// The measures of a method that ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub points_per_sample: f64,
    /// Mean total variation distance per bucket, 0..=1.
    pub share_error: f64,
    pub events_found: usize,
}

/// Scores of all methods on one emulated profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreTable {
    pub options: ScoreOptions,
    pub rows: Vec<MethodScore>,
    /// Events of `event_function` lasting `event_min_ns` or more in the trace.
    pub events_total: usize,
    /// Buckets with traced time, over which the share error is a mean.
    pub buckets: usize,
    pub samples: usize,
}

impl ScoreTable {
    /// The score of `method`, if it ran.
    pub fn get(&self, method: Method) -> Option<Measured> {
        self.rows
            .iter()
            .find(|r| r.method == method)
            .and_then(|r| r.result)
    }
    /// Recall of `method` in percent (100 when there are no events to find).
    pub fn recall(&self, method: Method) -> Option<f64> {
        self.get(method)
            .map(|m| recall_pct(m.events_found, self.events_total))
    }
}

pub(crate) fn recall_pct(found: usize, total: usize) -> f64 {
    if total == 0 {
        100.0
    } else {
        found as f64 * 100.0 / total as f64
    }
}

/// Scores every method in `methods` on `emulated` (an output of
/// [`crate::emulate_lbr`]) with the default event settings; see [`score_with`].
pub fn score(emulated: &Profile, bucket_ns: u64, methods: &[Method]) -> Result<ScoreTable> {
    score_with(
        emulated,
        &ScoreOptions {
            methods: methods.to_vec(),
            ..ScoreOptions::new(bucket_ns)
        },
    )
}

/// Scores each method of `opts.methods`; a method that cannot run on this profile (e.g.
/// `cycles` without cycles) gets a row with the reason instead of numbers.
pub fn score_with(emulated: &Profile, opts: &ScoreOptions) -> Result<ScoreTable> {
    if opts.bucket_ns == 0 || opts.event_bucket_ns == 0 {
        return Err(Error::BadBucket);
    }
    let names = FunctionNames::new(emulated);
    let truth = Truth::new(emulated, opts, &names)?;
    // The methods see samples and branch records only.
    let blind = Profile {
        calls: Vec::new(),
        ..emulated.clone()
    };
    let event_fn = names.id_of(&opts.event_function);
    let mut rows = Vec::new();
    for &method in &opts.methods {
        let row = match assign(&blind, method) {
            Ok(a) => {
                let share_error = truth.share_error(&a.points, &names);
                let events_found = event_fn.map_or(0, |f| truth.events_found(&a.points, &names, f));
                let note = (!a.notes.is_empty()).then(|| a.notes.join("; "));
                MethodScore {
                    method,
                    result: Some(Measured {
                        points_per_sample: a.points_per_sample,
                        share_error,
                        events_found,
                    }),
                    note,
                }
            }
            Err(e) => MethodScore {
                method,
                result: None,
                note: Some(e.to_string()),
            },
        };
        rows.push(row);
    }
    Ok(ScoreTable {
        options: opts.clone(),
        rows,
        events_total: truth.events.len(),
        buckets: truth.buckets.len(),
        samples: emulated.samples.len(),
    })
}

/// Scores points made by anything (an oracle of [`crate::decompose`], an experimental
/// estimator) against the trace `emulated` keeps: (share error, events found, events in the trace).
pub fn score_points(
    emulated: &Profile,
    opts: &ScoreOptions,
    points: &[Point],
) -> Result<(f64, usize, usize)> {
    if opts.bucket_ns == 0 || opts.event_bucket_ns == 0 {
        return Err(Error::BadBucket);
    }
    let names = FunctionNames::new(emulated);
    let truth = Truth::new(emulated, opts, &names)?;
    let found = names
        .id_of(&opts.event_function)
        .map_or(0, |f| truth.events_found(points, &names, f));
    Ok((truth.share_error(points, &names), found, truth.events.len()))
}

/// Function identity by name; `None` frames and unknown indices map to `[untraced]`.
struct FunctionNames {
    of_frame: Vec<u32>,
    by_name: HashMap<String, u32>,
}

impl FunctionNames {
    const UNTRACED: u32 = 0;

    fn new(p: &Profile) -> Self {
        let mut by_name: HashMap<String, u32> = HashMap::new();
        by_name.insert("[untraced]".to_string(), Self::UNTRACED);
        let of_frame = p
            .frames
            .iter()
            .map(|f| {
                let n = by_name.len() as u32;
                *by_name.entry(f.function.clone()).or_insert(n)
            })
            .collect();
        FunctionNames { of_frame, by_name }
    }
    fn id(&self, f: Option<FrameIdx>) -> u32 {
        f.and_then(|f| self.of_frame.get(f as usize).copied())
            .unwrap_or(Self::UNTRACED)
    }
    fn id_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }
}

/// The exact answer: self time per bucket and function, and the events to find.
struct Truth {
    origin: u64,
    end: u64,
    bucket_ns: u64,
    event_bucket_ns: u64,
    /// Bucket index -> function id -> ns.
    buckets: BTreeMap<u64, HashMap<u32, u64>>,
    /// (thread, start, end) of each event.
    events: Vec<(ThreadIdx, u64, u64)>,
}

impl Truth {
    fn new(p: &Profile, opts: &ScoreOptions, names: &FunctionNames) -> Result<Self> {
        let threads = thread_events(p)?;
        let origin = threads
            .iter()
            .filter_map(|t| t.span())
            .map(|s| s.0)
            .min()
            .unwrap_or(0);
        let end = threads
            .iter()
            .filter_map(|t| t.span())
            .map(|s| s.1)
            .max()
            .unwrap_or(0);
        let sampled = sampled_spans(p);
        let mut buckets: BTreeMap<u64, HashMap<u32, u64>> = BTreeMap::new();
        for te in &threads {
            let (lo, hi) = sampled.get(&te.thread).copied().unwrap_or((0, u64::MAX));
            for (a, b, f) in te.segments() {
                let (mut a, b) = (a.max(lo), b.min(hi));
                let id = names.id(f);
                // Split the segment at bucket boundaries.
                while a < b {
                    let k = (a - origin) / opts.bucket_ns;
                    let edge = (origin + (k + 1) * opts.bucket_ns).min(b);
                    *buckets.entry(k).or_default().entry(id).or_default() += edge - a;
                    a = edge;
                }
            }
        }
        let event_fn = names.id_of(&opts.event_function);
        let events = p
            .calls
            .iter()
            .filter(|c| event_fn.is_some() && Some(names.id(Some(c.frame))) == event_fn)
            .filter(|c| c.end_ns.saturating_sub(c.start_ns) >= opts.event_min_ns)
            .map(|c| (c.thread, c.start_ns, c.end_ns))
            .collect();
        Ok(Truth {
            origin,
            end,
            bucket_ns: opts.bucket_ns,
            event_bucket_ns: opts.event_bucket_ns,
            buckets,
            events,
        })
    }

    fn share_error(&self, points: &[Point], names: &FunctionNames) -> f64 {
        let mut est: HashMap<u64, HashMap<u32, f64>> = HashMap::new();
        for pt in points {
            // The stretch the point stands for, clipped to the traced span.
            let (a, b) = (
                pt.time_ns.saturating_sub(pt.weight_ns).max(self.origin),
                pt.time_ns.min(self.end),
            );
            if b <= a {
                continue;
            }
            let id = names.id(pt.frame);
            let mut x = a;
            while x < b {
                let k = (x - self.origin) / self.bucket_ns;
                let edge = (self.origin + (k + 1) * self.bucket_ns).min(b);
                *est.entry(k).or_default().entry(id).or_default() += (edge - x) as f64;
                x = edge;
            }
        }
        let mut sum = 0.0;
        for (k, exact) in &self.buckets {
            sum += est.get(k).map_or(1.0, |q| tvd(exact, q));
        }
        if self.buckets.is_empty() {
            0.0
        } else {
            sum / self.buckets.len() as f64
        }
    }

    fn events_found(&self, points: &[Point], names: &FunctionNames, f: u32) -> usize {
        // The stretches `[time - weight, time]` of the points on `f`, per thread, by end.
        let mut at: HashMap<ThreadIdx, Vec<(u64, u64)>> = HashMap::new();
        for pt in points
            .iter()
            .filter(|p| p.weight_ns > 0 && names.id(p.frame) == f)
        {
            at.entry(pt.thread)
                .or_default()
                .push((pt.time_ns.saturating_sub(pt.weight_ns), pt.time_ns));
        }
        for v in at.values_mut() {
            v.sort_unstable_by_key(|s| s.1);
        }
        let g = self.event_bucket_ns;
        self.events
            .iter()
            .filter(|&&(thread, start, end)| {
                // The fine buckets the call overlaps, as a time window.
                let lo = self.origin + (start.saturating_sub(self.origin)) / g * g;
                let last = end.saturating_sub(1).max(start);
                let hi = self.origin + (last.saturating_sub(self.origin) / g + 1) * g;
                // A thread's stretches do not overlap (its intervals are disjoint), so the
                // first one ending after `lo` is the only candidate that can start before `hi`.
                at.get(&thread).is_some_and(|v| {
                    let i = v.partition_point(|s| s.1 <= lo);
                    v.get(i).is_some_and(|s| s.0 < hi)
                })
            })
            .count()
    }
}

/// Per thread, the span its samples stand for: first sample minus its weight (ns, as
/// emulated samples carry the interval) to the last sample.
fn sampled_spans(p: &Profile) -> HashMap<ThreadIdx, (u64, u64)> {
    let mut m: HashMap<ThreadIdx, (u64, u64)> = HashMap::new();
    for s in &p.samples {
        let a = s.time_ns.saturating_sub(s.weight);
        let e = m.entry(s.thread).or_insert((a, s.time_ns));
        *e = (e.0.min(a), e.1.max(s.time_ns));
    }
    m
}

/// Total variation distance between two weight maps, each normalised to 1.
fn tvd(p: &HashMap<u32, u64>, q: &HashMap<u32, f64>) -> f64 {
    let (sp, sq) = (p.values().sum::<u64>() as f64, q.values().sum::<f64>());
    if sp == 0.0 || sq == 0.0 {
        return 1.0;
    }
    let mut d = 0.0;
    for (k, &v) in p {
        d += (v as f64 / sp - q.get(k).map_or(0.0, |&w| w / sq)).abs();
    }
    for (k, &w) in q {
        if !p.contains_key(k) {
            d += w / sq;
        }
    }
    d / 2.0
}

#[cfg(test)]
mod tests;
