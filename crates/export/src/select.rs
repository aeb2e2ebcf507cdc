//! The samples an export covers, and the lookups every writer needs, done so that a
//! damaged profile (an index pointing nowhere, a cycle in the stack tree) gives
//! `[unknown]` frames instead of a panic or an endless walk.

use kairos_model::{FrameIdx, Profile, Sample, StackIdx, Thread};

/// Name shown for a frame index that points nowhere.
pub(crate) const UNKNOWN: &str = "[unknown]";

/// The samples of a profile within a time range.
pub struct Selection<'a> {
    pub profile: &'a Profile,
    /// The selected samples, in time order.
    pub samples: &'a [Sample],
    /// Time origin of the exported timestamps: the first sample of the whole profile,
    /// the origin `--time-range` and the reports use, so times agree between them.
    pub origin_ns: u64,
    /// Wall-clock time of the origin in ns since the Unix epoch, when known (sample
    /// times are CLOCK_MONOTONIC, which formats with absolute times cannot use).
    pub wall_start_ns: Option<u64>,
}

impl<'a> Selection<'a> {
    /// The median sample weight: the sampling period the formats with one declare.
    pub fn median_weight(&self) -> u64 {
        let mut w: Vec<u64> = self.samples.iter().map(|s| s.weight).collect();
        w.sort_unstable();
        w.get(w.len() / 2).copied().unwrap_or(0)
    }

    /// `time_range` is half-open `[start, end)` in ns after the profile's first sample,
    /// as `kairos report --time-range` takes it; `None` selects every sample.
    pub fn new(profile: &'a Profile, time_range: Option<(u64, u64)>) -> Selection<'a> {
        let origin_ns = profile.samples.first().map_or(0, |s| s.time_ns);
        let samples = match time_range {
            None => &profile.samples[..],
            Some((start, end)) => {
                // Samples are sorted by time, so the range is one contiguous slice.
                let (a, b) = (
                    origin_ns.saturating_add(start),
                    origin_ns.saturating_add(end),
                );
                let lo = profile.samples.partition_point(|s| s.time_ns < a);
                let hi = profile.samples.partition_point(|s| s.time_ns < b).max(lo);
                profile.samples.get(lo..hi).unwrap_or(&[])
            }
        };
        Selection {
            profile,
            samples,
            origin_ns,
            wall_start_ns: None,
        }
    }

    /// The frames of `stack`, root first. Stops after as many steps as there are stack
    /// nodes, so a cycle in a damaged tree cannot loop forever.
    pub fn root_first(&self, stack: Option<StackIdx>) -> Vec<FrameIdx> {
        let mut frames = Vec::new();
        let mut next = stack;
        while let Some(i) = next {
            let Some(node) = self.profile.stacks.get(i as usize) else {
                break;
            };
            if frames.len() > self.profile.stacks.len() {
                break;
            }
            frames.push(node.frame);
            next = node.parent;
        }
        frames.reverse();
        frames
    }

    pub fn function(&self, frame: FrameIdx) -> &'a str {
        self.profile
            .frames
            .get(frame as usize)
            .map_or(UNKNOWN, |f| f.function.as_str())
    }

    /// Path of the module of a frame, if known.
    pub fn module(&self, frame: FrameIdx) -> Option<&'a str> {
        let f = self.profile.frames.get(frame as usize)?;
        Some(self.profile.modules.get(f.module? as usize)?.path.as_str())
    }

    pub fn thread(&self, thread: u32) -> Option<&'a Thread> {
        self.profile.threads.get(thread as usize)
    }

    /// Name of the process a thread belongs to: its command name as perf reports it.
    pub fn process_name(&self, thread: u32) -> String {
        match self.thread(thread) {
            Some(t) if !t.process_name.is_empty() => t.process_name.clone(),
            Some(t) if !t.name.is_empty() => t.name.clone(),
            Some(t) => format!("pid {}", t.pid),
            None => UNKNOWN.to_string(),
        }
    }

    pub fn thread_name(&self, thread: u32) -> String {
        match self.thread(thread) {
            Some(t) if !t.name.is_empty() => t.name.clone(),
            Some(t) => format!("tid {}", t.tid),
            None => UNKNOWN.to_string(),
        }
    }

    /// (pid, tid) of a thread; unknown threads get -1, which no real thread has.
    pub fn ids(&self, thread: u32) -> (i32, i32) {
        self.thread(thread).map_or((-1, -1), |t| (t.pid, t.tid))
    }

    /// What weights count: "cpu-time" in nanoseconds, or the event whose periods they are.
    pub fn weight_is_time(&self) -> bool {
        self.profile.weight_is_time()
    }

    pub fn weight_event(&self) -> &'a str {
        self.profile.weight_event.as_deref().unwrap_or("cpu")
    }

    /// Time of a sample in ns after the origin.
    pub fn rel_ns(&self, s: &Sample) -> u64 {
        s.time_ns.saturating_sub(self.origin_ns)
    }

    /// Indices into `samples` grouped by thread, each group in time order, threads in
    /// order of first appearance in the profile's thread table.
    pub fn by_thread(&self) -> Vec<(u32, Vec<usize>)> {
        let mut groups: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
        for (i, s) in self.samples.iter().enumerate() {
            groups.entry(s.thread).or_default().push(i);
        }
        groups.into_iter().collect()
    }

    /// Typical time between consecutive samples of a thread (the median gap), used to
    /// give a sample a duration when weights are event counts, not time. 1 ms if unknown.
    pub fn typical_gap_ns(&self, indices: &[usize]) -> u64 {
        let mut gaps: Vec<u64> = indices
            .windows(2)
            .filter_map(|w| {
                Some(
                    self.samples
                        .get(w[1])?
                        .time_ns
                        .saturating_sub(self.samples.get(w[0])?.time_ns),
                )
            })
            .filter(|&g| g > 0)
            .collect();
        gaps.sort_unstable();
        gaps.get(gaps.len() / 2).copied().unwrap_or(1_000_000)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use kairos_model::{Frame, Mode, Module, Profile, Sample, StackInterner, Thread};

    fn frame(name: &str, address: u64) -> Frame {
        Frame {
            address,
            module: Some(0),
            module_offset: address - 0x1000,
            function: name.into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode: Mode::User,
        }
    }

    /// Two threads of one process: main;a;b twice, main;c, main;we;ird (a name with the
    /// collapsed format's separator), 1 ms apart, 1 ms of CPU time each.
    pub(crate) fn profile() -> Profile {
        let mut p = Profile {
            threads: vec![
                Thread {
                    pid: 10,
                    tid: 10,
                    name: "app".into(),
                    process_name: "app".into(),
                },
                Thread {
                    pid: 10,
                    tid: 11,
                    name: "worker".into(),
                    process_name: "app".into(),
                },
            ],
            modules: vec![Module {
                path: "/bin/app".into(),
                build_id: "abcd".into(),
            }],
            frames: vec![
                frame("main", 0x1100),
                frame("a", 0x1200),
                frame("b", 0x1300),
                frame("c", 0x1400),
                frame("we;ird", 0x1500),
            ],
            ..Default::default()
        };
        let mut i = StackInterner::default();
        let ab = i.intern_path(&mut p.stacks, [0, 1, 2]);
        let c = i.intern_path(&mut p.stacks, [0, 3]);
        let w = i.intern_path(&mut p.stacks, [0, 4]);
        let ms = 1_000_000;
        let s = |t: u64, thread: u32, stack| Sample {
            time_ns: 5 * ms + t * ms,
            thread,
            cpu: 0,
            stack,
            weight: ms,
        };
        p.samples = vec![s(0, 0, ab), s(1, 0, ab), s(2, 1, c), s(3, 0, w)];
        p
    }

    #[test]
    fn cyclic_stack_tree_ends() {
        let mut p = profile();
        p.stacks[0].parent = Some(1);
        p.stacks[1].parent = Some(0);
        let sel = super::Selection::new(&p, None);
        assert!(sel.root_first(Some(1)).len() <= p.stacks.len() + 1);
        assert_eq!(sel.function(99), super::UNKNOWN);
    }
}
