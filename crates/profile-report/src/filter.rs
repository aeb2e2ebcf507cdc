//! Sample selection: the time range and thread/process filter every analysis honours,
//! so that a time-range selection in one view filters all the others.

use kairos_model::{Profile, Sample};

use crate::Error;

/// Which samples an analysis looks at. The default selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Half-open `[start, end)` in ns relative to the profile's first sample (the same
    /// origin the timeline shows, so a range read off the timeline can be pasted back).
    pub time_range: Option<(u64, u64)>,
    /// Only these thread ids (TIDs); `None` = all.
    pub threads: Option<Vec<i32>>,
    /// The names `--comm` gave, for the notes only: `threads` holds the TIDs they matched.
    pub comms: Option<Vec<String>>,
    /// Only these process ids; `None` = all.
    pub pids: Option<Vec<i32>>,
    /// Only samples taken on these CPUs; `None` = all.
    pub cpus: Option<Vec<u32>>,
}

impl Filter {
    /// Human-readable description for table notes, `None` for the match-all filter.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some((s, e)) = self.time_range {
            parts.push(format!(
                "time {:.3}-{:.3} ms",
                s as f64 / 1e6,
                e as f64 / 1e6
            ));
        }
        let ids = |v: &[i32]| {
            v.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        match (&self.comms, &self.threads) {
            (Some(c), Some(t)) => parts.push(format!("comm {} (tids {})", c.join(","), ids(t))),
            (Some(c), None) => parts.push(format!("comm {}", c.join(","))),
            (None, Some(t)) => parts.push(format!("tids {}", ids(t))),
            (None, None) => {}
        }
        if let Some(p) = &self.pids {
            parts.push(format!("pids {}", ids(p)));
        }
        if let Some(c) = &self.cpus {
            let c: Vec<i32> = c.iter().map(|&c| c as i32).collect();
            parts.push(format!("cpus {}", ids(&c)));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Sample count and summed weight of a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Acc {
    pub samples: u64,
    pub weight: u64,
}

impl Acc {
    pub fn add(&mut self, s: &Sample) {
        self.samples += 1;
        self.weight = self.weight.saturating_add(s.weight);
    }

    pub fn merge(&mut self, other: Acc) {
        self.samples += other.samples;
        self.weight = self.weight.saturating_add(other.weight);
    }
}

/// Share of `part` in `total` in percent: by weight, or by count when no sample has a
/// weight (some importers leave it 0), 0 for an empty total.
pub(crate) fn share(part: Acc, total: Acc) -> f64 {
    if total.weight > 0 {
        100.0 * part.weight as f64 / total.weight as f64
    } else if total.samples > 0 {
        100.0 * part.samples as f64 / total.samples as f64
    } else {
        0.0
    }
}

/// The samples a filter selected, with the profile's time origin.
pub(crate) struct Selection<'p> {
    pub profile: &'p Profile,
    /// Time of the profile's first sample (the origin of relative times), 0 if empty.
    pub t0: u64,
    /// Absolute `[start, end)` of the time filter, if any.
    pub range: Option<(u64, u64)>,
    pub samples: Vec<&'p Sample>,
    pub total: Acc,
}

impl<'p> Selection<'p> {
    pub fn new(profile: &'p Profile, filter: &Filter) -> Result<Selection<'p>, Error> {
        if let Some((start, end)) = filter.time_range {
            if start > end {
                return Err(Error::InvalidTimeRange { start, end });
            }
        }
        // min() rather than samples[0]: the model promises sorted samples, but a
        // mis-sorted import must still give correct (not just non-panicking) results.
        let t0 = profile.samples.iter().map(|s| s.time_ns).min().unwrap_or(0);
        let range = filter
            .time_range
            .map(|(s, e)| (t0.saturating_add(s), t0.saturating_add(e)));
        let thread_ok = |s: &Sample| {
            let t = profile.threads.get(s.thread as usize);
            let tid_ok = filter
                .threads
                .as_ref()
                .is_none_or(|ids| t.is_some_and(|t| ids.contains(&t.tid)));
            let pid_ok = filter
                .pids
                .as_ref()
                .is_none_or(|ids| t.is_some_and(|t| ids.contains(&t.pid)));
            let cpu_ok = filter.cpus.as_ref().is_none_or(|c| c.contains(&s.cpu));
            tid_ok && pid_ok && cpu_ok
        };
        let everything = range.is_none()
            && filter.threads.is_none()
            && filter.pids.is_none()
            && filter.cpus.is_none();
        let samples: Vec<&Sample> = if everything {
            profile.samples.iter().collect()
        } else {
            profile
                .samples
                .iter()
                .filter(|s| range.is_none_or(|(a, b)| s.time_ns >= a && s.time_ns < b))
                .filter(|s| thread_ok(s))
                .collect()
        };
        let mut total = Acc::default();
        samples.iter().for_each(|s| total.add(s));
        Ok(Selection {
            profile,
            t0,
            range,
            samples,
            total,
        })
    }

    /// Standard notes: how many samples were selected, and by which filter.
    pub fn notes(&self, filter: &Filter) -> Vec<String> {
        let mut n = vec![format!(
            "{} of {} samples selected.",
            self.samples.len(),
            self.profile.samples.len()
        )];
        if let Some(d) = filter.describe() {
            n.push(format!("Filter: {d}."));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Builder;

    #[test]
    fn filters_by_cpu_and_says_so() {
        let mut b = Builder::new();
        let t = b.thread(10, 10, "app");
        for time in [1_000, 2_000, 3_000] {
            b.sample(time, t, &["main"]);
        }
        let mut p = b.build();
        for (s, cpu) in p.samples.iter_mut().zip([0, 1, 3]) {
            s.cpu = cpu;
        }
        let f = Filter {
            cpus: Some(vec![1, 3]),
            ..Filter::default()
        };
        let sel = Selection::new(&p, &f).unwrap();
        assert_eq!(
            sel.samples.iter().map(|s| s.time_ns).collect::<Vec<_>>(),
            [2_000, 3_000]
        );
        assert_eq!(f.describe().as_deref(), Some("cpus 1,3"));
    }

    #[test]
    fn filters_by_time_thread_and_pid() {
        let mut b = Builder::new();
        let t1 = b.thread(10, 10, "app");
        let t2 = b.thread(10, 11, "worker");
        let t3 = b.thread(20, 20, "other");
        b.sample(1_000, t1, &["main"]);
        b.sample(2_000, t2, &["main"]);
        b.sample(3_000, t3, &["main"]);
        b.sample(4_000, 99, &["main"]); // thread index out of range
        let p = b.build();
        let n = |f: Filter| Selection::new(&p, &f).map(|s| s.samples.len());
        assert_eq!(n(Filter::default()), Ok(4));
        assert_eq!(
            n(Filter {
                time_range: Some((1_000, 2_000)),
                ..Filter::default()
            }),
            Ok(1)
        );
        assert_eq!(
            n(Filter {
                time_range: Some((0, 0)),
                ..Filter::default()
            }),
            Ok(0)
        );
        assert_eq!(
            n(Filter {
                threads: Some(vec![11, 20]),
                ..Filter::default()
            }),
            Ok(2)
        );
        assert_eq!(
            n(Filter {
                pids: Some(vec![10]),
                ..Filter::default()
            }),
            Ok(2)
        );
        assert_eq!(
            n(Filter {
                time_range: Some((5, 1)),
                ..Filter::default()
            }),
            Err(Error::InvalidTimeRange { start: 5, end: 1 })
        );
        assert_eq!(
            n(Filter {
                time_range: Some((u64::MAX, u64::MAX)),
                ..Filter::default()
            }),
            Ok(0)
        );
    }

    #[test]
    fn share_falls_back_to_counts() {
        let a = Acc {
            samples: 1,
            weight: 0,
        };
        let t = Acc {
            samples: 4,
            weight: 0,
        };
        assert_eq!(share(a, t), 25.0);
        assert_eq!(share(a, Acc::default()), 0.0);
        assert_eq!(
            share(
                Acc {
                    samples: 1,
                    weight: 3
                },
                Acc {
                    samples: 2,
                    weight: 4
                }
            ),
            75.0
        );
    }

    #[test]
    fn describes_filter() {
        assert_eq!(Filter::default().describe(), None);
        let mut f = Filter {
            time_range: Some((1_000_000, 2_500_000)),
            threads: Some(vec![1, 2]),
            comms: None,
            pids: Some(vec![3]),
            cpus: None,
        };
        assert_eq!(
            f.describe().as_deref(),
            Some("time 1.000-2.500 ms; tids 1,2; pids 3")
        );
        // --comm: the names given, and the threads they matched.
        f.comms = Some(vec!["app".into(), "worker".into()]);
        assert_eq!(
            f.describe().as_deref(),
            Some("time 1.000-2.500 ms; comm app,worker (tids 1,2); pids 3")
        );
    }
}
