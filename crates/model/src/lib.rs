//! The profile model every stage after decoding speaks.
//!
//! The converter builds a [`Profile`] from decoded perf records (live or imported, the
//! same code), the symboliser fills in [`Frame`]s, the result store persists it as
//! Parquet tables and reads it back, and the analyses only ever see this type.
//!
//! Stacks are a prefix tree (each node = parent + frame), so a sample points at one leaf
//! node and equal call paths share storage, as in the Firefox Profiler's format.

use serde::{Deserialize, Serialize};

pub mod columns;
pub use columns::{Narrow, SampleColumns};
mod events;
pub use events::{DefaultEvent, EventChoice};

/// Index into [`Profile::threads`].
pub type ThreadIdx = u32;
/// Index into [`Profile::stacks`].
pub type StackIdx = u32;
/// Index into [`Profile::frames`].
pub type FrameIdx = u32;
/// Index into [`Profile::modules`].
pub type ModuleIdx = u32;

/// Which privilege level an address executed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    User,
    Kernel,
    Hypervisor,
    Unknown,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::User => "user",
            Mode::Kernel => "kernel",
            Mode::Hypervisor => "hypervisor",
            Mode::Unknown => "unknown",
        }
    }
    pub fn parse(s: &str) -> Mode {
        match s {
            "user" => Mode::User,
            "kernel" => Mode::Kernel,
            "hypervisor" => Mode::Hypervisor,
            _ => Mode::Unknown,
        }
    }
}

/// One thread seen in the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    pub pid: i32,
    pub tid: i32,
    /// Last command name of the thread (PERF_RECORD_COMM).
    pub name: String,
    /// Command name of the process (its main thread).
    pub process_name: String,
}

/// An executable or library (or the kernel, or a JIT map) that code ran from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// Path as mapped (e.g. `/usr/lib/x86_64-linux-gnu/libc.so.6`, `[kernel.kallsyms]`).
    pub path: String,
    /// Hex GNU build id, empty when unknown.
    pub build_id: String,
}

/// One symbolised code location. Inlined calls give several frames for one address:
/// the outermost (the real function) has `inline_depth` 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// Virtual address in the process (or kernel) at sample time.
    pub address: u64,
    /// Module the address belongs to, when known.
    pub module: Option<ModuleIdx>,
    /// Address relative to the module's file (ELF virtual address), for re-symbolising.
    pub module_offset: u64,
    /// Demangled function name, or `[unknown]`-style placeholder built from the module.
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub inline_depth: u16,
    pub mode: Mode,
}

/// A node of the stack prefix tree: `frame` called from `parent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    pub parent: Option<StackIdx>,
    pub frame: FrameIdx,
}

/// One sample: at `time_ns` (CLOCK_MONOTONIC), thread `thread` on `cpu` was executing the
/// leaf frame of `stack`; `weight` is what it stands for (ns of CPU time for timer events,
/// the event period for counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub time_ns: u64,
    pub thread: ThreadIdx,
    pub cpu: u32,
    pub stack: Option<StackIdx>,
    pub weight: u64,
}

/// Counts of what was lost during recording, reported in every result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossCounts {
    /// Records the kernel dropped because a ring buffer was full (PERF_RECORD_LOST).
    pub lost_records: u64,
    /// Samples lost (PERF_RECORD_LOST_SAMPLES).
    pub lost_samples: u64,
    /// Throttle events (PERF_RECORD_THROTTLE).
    pub throttled: u64,
    /// Records the reader could not decode and skipped.
    pub undecodable_records: u64,
}

/// What a branch record was, as far as the recording or the decoded instruction says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BranchKind {
    Call,
    Return,
    /// Any other taken branch (jumps, conditional branches, syscalls...).
    Other,
    /// The recording did not save the type and the instruction at FROM could not be read.
    Unknown,
}

impl BranchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BranchKind::Call => "call",
            BranchKind::Return => "return",
            BranchKind::Other => "other",
            BranchKind::Unknown => "unknown",
        }
    }
    pub fn parse(s: &str) -> BranchKind {
        match s {
            "call" => BranchKind::Call,
            "return" => BranchKind::Return,
            "other" => BranchKind::Other,
            _ => BranchKind::Unknown,
        }
    }
}

/// One last-branch record (LBR entry) taken with a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchRecord {
    /// Index into [`Profile::samples`] of the sample the record came with.
    pub sample: u32,
    /// 0 is the newest record (FROM0 in the paper), as the kernel orders them.
    pub position: u16,
    pub from_address: u64,
    pub to_address: u64,
    /// Innermost symbolised frame at FROM: the function that was executing when it
    /// branched. None when the address is in no known module.
    pub from_frame: Option<FrameIdx>,
    pub to_frame: Option<FrameIdx>,
    pub kind: BranchKind,
    /// Core cycles since the previous record, where the CPU measures them (LBR_INFO).
    pub cycles: Option<u32>,
    pub mispredicted: bool,
    /// False when the same record was already part of the previous snapshot of this
    /// thread: the ring is read whole at every sample, so consecutive snapshots overlap.
    pub is_new: bool,
}

/// How branch records were obtained, for every report to state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchInfo {
    /// Entries per snapshot the CPU (or emulation) provides: 16, 32...
    pub depth: u32,
    /// Whether records carry measured cycles.
    pub has_cycles: bool,
    /// The hardware filter, e.g. "any" or "user call+return".
    pub filter: String,
    /// True when records were emulated from an exact trace (`kairos lab emulate-lbr`).
    pub emulated: bool,
    /// Snapshots with no overlap with the previous one of the same thread although the
    /// ring was full: more branches happened between the two samples than the LBR holds,
    /// so some records were lost (a lower bound on the intervals affected).
    pub overflowed_snapshots: u64,
    /// Records whose kind could not be determined.
    pub unclassified: u64,
}

/// One exactly traced function call (from `kairos collect trace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    pub thread: ThreadIdx,
    /// The called function.
    pub frame: FrameIdx,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Nesting depth in the thread's call stack, 0 for the outermost traced call.
    pub depth: u16,
}

/// A whole profile: what every analysis works on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub threads: Vec<Thread>,
    pub modules: Vec<Module>,
    pub frames: Vec<Frame>,
    pub stacks: Vec<Stack>,
    /// Sorted by time.
    pub samples: Vec<Sample>,
    pub losses: LossCounts,
    /// Branch records of the samples, sorted by (sample, position); empty without LBR.
    pub branches: Vec<BranchRecord>,
    pub branch_info: Option<BranchInfo>,
    /// Exactly traced calls, sorted by start time; empty for sampled results.
    pub calls: Vec<Call>,
    /// What sample weights count: None for nanoseconds of CPU time (timer events such as
    /// cpu-clock), else the event whose periods they are, e.g. "cycles".
    pub weight_event: Option<String>,
    /// The sampling events of the recording, in the file's attr order.
    #[serde(default)]
    pub events: Vec<EventDef>,
    /// Event of each sample (index into `events`), parallel to `samples`; empty when
    /// every sample belongs to event 0. Analyses see one event at a time: see
    /// [`Profile::select_event`].
    #[serde(default)]
    pub sample_events: Vec<u16>,
}

/// An event name without perf's modifiers; see [`Profile::find_events`].
pub fn event_base_name(name: &str) -> &str {
    let mut parts = name.split('/');
    let (first, inner) = (parts.next().unwrap_or(name), parts.next());
    match inner {
        // pmu/term,term/: the first term that is not key=value names the event.
        Some(terms) => match terms.split(',').find(|t| !t.contains('=') && !t.is_empty()) {
            Some(ev) => ev,
            None => first,
        },
        None => first.split(':').next().unwrap_or(first),
    }
}

/// One sampling event of a recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventDef {
    /// As perf names it, e.g. "cycles", "cpu-clock", "mem-loads".
    pub name: String,
    /// True for timer events (cpu-clock, task-clock): weights are nanoseconds.
    pub time: bool,
}

/// Samples and summed weight of one event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventTotals {
    pub samples: u64,
    pub weight: u64,
}

impl Profile {
    /// Frames of `stack` from leaf to root.
    pub fn stack_frames(&self, stack: Option<StackIdx>) -> StackWalk<'_> {
        StackWalk {
            profile: self,
            next: stack,
        }
    }

    /// Leaf frame of a sample, if it has a stack.
    pub fn leaf_frame(&self, sample: &Sample) -> Option<&Frame> {
        let s = self.stacks.get(sample.stack? as usize)?;
        self.frames.get(s.frame as usize)
    }

    /// True when sample weights are nanoseconds of CPU time.
    pub fn weight_is_time(&self) -> bool {
        self.weight_event.is_none()
    }

    /// The event of sample `i`.
    pub fn event_of(&self, i: usize) -> u16 {
        self.sample_events.get(i).copied().unwrap_or(0)
    }

    /// Samples and weight of every event, by event index.
    pub fn event_totals(&self) -> Vec<EventTotals> {
        let mut t = vec![EventTotals::default(); self.events.len().max(1)];
        for (i, s) in self.samples.iter().enumerate() {
            if let Some(e) = t.get_mut(self.event_of(i) as usize) {
                e.samples += 1;
                e.weight = e.weight.saturating_add(s.weight);
            }
        }
        t
    }

    /// First and last sample time, or None when there are no samples.
    pub fn time_span(&self) -> Option<(u64, u64)> {
        Some((self.samples.first()?.time_ns, self.samples.last()?.time_ns))
    }
}

/// Iterator over the frames of a stack, leaf first.
pub struct StackWalk<'a> {
    profile: &'a Profile,
    next: Option<StackIdx>,
}

impl<'a> Iterator for StackWalk<'a> {
    type Item = (StackIdx, &'a Frame);
    fn next(&mut self) -> Option<Self::Item> {
        let idx = self.next?;
        let node = self.profile.stacks.get(idx as usize)?;
        self.next = node.parent;
        Some((idx, self.profile.frames.get(node.frame as usize)?))
    }
}

/// Builds the stack prefix tree and frame table without duplicates.
#[derive(Debug, Default)]
pub struct StackInterner {
    /// Key: (parent + 1, or 0 for a root) << 32 | frame. One word hashes in one multiply;
    /// interning is the hot loop of converting a large recording.
    stacks: rustc_hash::FxHashMap<u64, StackIdx>,
}

impl StackInterner {
    /// Returns the node for `frame` called from `parent`, adding it to `stacks` if new.
    pub fn intern(
        &mut self,
        stacks: &mut Vec<Stack>,
        parent: Option<StackIdx>,
        frame: FrameIdx,
    ) -> StackIdx {
        let key = (parent.map_or(0, |p| u64::from(p) + 1) << 32) | u64::from(frame);
        *self.stacks.entry(key).or_insert_with(|| {
            stacks.push(Stack { parent, frame });
            (stacks.len() - 1) as StackIdx
        })
    }

    /// Interns a whole path given root first.
    pub fn intern_path(
        &mut self,
        stacks: &mut Vec<Stack>,
        root_first: impl IntoIterator<Item = FrameIdx>,
    ) -> Option<StackIdx> {
        let mut parent = None;
        for f in root_first {
            parent = Some(self.intern(stacks, parent, f));
        }
        parent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> Frame {
        Frame {
            address: 0,
            module: None,
            module_offset: 0,
            function: name.into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode: Mode::User,
        }
    }

    #[test]
    fn event_names_match_without_modifiers() {
        assert_eq!(event_base_name("cycles:u"), "cycles");
        assert_eq!(event_base_name("page-faults/period=5/"), "page-faults");
        assert_eq!(event_base_name("cpu/mem-loads,ldlat=30/P"), "mem-loads");
        assert_eq!(event_base_name("cpu/event=0xc4,umask=0x1/"), "cpu");
        let ev = |n: &str| EventDef {
            name: n.into(),
            time: false,
        };
        let p = Profile {
            events: vec![ev("cycles:u"), ev("cycles"), ev("page-faults/period=5/")],
            ..Default::default()
        };
        let found = |n: &str| p.find_events(n).map(|c| c.events);
        assert_eq!(found("cycles"), Some(vec![1]), "an exact name wins");
        assert_eq!(found("page-faults"), Some(vec![2]));
        assert_eq!(found("instructions"), None);
    }

    #[test]
    fn selecting_an_event_keeps_its_samples_and_their_branch_records() {
        let sample = |t: u64, w: u64| Sample {
            time_ns: t,
            thread: 0,
            cpu: 0,
            stack: None,
            weight: w,
        };
        let rec = |sample: u32| BranchRecord {
            sample,
            position: 0,
            from_address: 0,
            to_address: 0,
            from_frame: None,
            to_frame: None,
            kind: BranchKind::Call,
            cycles: None,
            mispredicted: false,
            is_new: true,
        };
        let mut p = Profile {
            samples: vec![sample(1, 10), sample(2, 3), sample(3, 20), sample(4, 4)],
            sample_events: vec![0, 1, 0, 1],
            branches: vec![rec(1), rec(2), rec(3)],
            events: vec![
                EventDef {
                    name: "cpu-clock".into(),
                    time: true,
                },
                EventDef {
                    name: "instructions".into(),
                    time: false,
                },
            ],
            ..Default::default()
        };
        let totals = p.event_totals();
        assert_eq!(
            (totals[0].samples, totals[0].weight, totals[1].weight),
            (2, 30, 7)
        );
        p.select_event(1);
        assert_eq!(
            p.samples.iter().map(|s| s.time_ns).collect::<Vec<_>>(),
            [2, 4]
        );
        assert_eq!(
            p.branches.iter().map(|b| b.sample).collect::<Vec<_>>(),
            [0, 1],
            "records follow their samples' new indices"
        );
        assert_eq!(p.weight_event.as_deref(), Some("instructions"));
        assert!(p.sample_events.is_empty());
    }

    #[test]
    fn interner_shares_prefixes_and_walks_leaf_first() {
        let mut p = Profile {
            frames: vec![frame("main"), frame("a"), frame("b")],
            ..Default::default()
        };
        let mut i = StackInterner::default();
        let s1 = i.intern_path(&mut p.stacks, [0, 1]);
        let s2 = i.intern_path(&mut p.stacks, [0, 1, 2]);
        let s3 = i.intern_path(&mut p.stacks, [0, 1]);
        assert_eq!(s1, s3);
        assert_eq!(p.stacks.len(), 3);
        let names: Vec<_> = p
            .stack_frames(s2)
            .map(|(_, f)| f.function.as_str())
            .collect();
        assert_eq!(names, ["b", "a", "main"]);
    }
}
