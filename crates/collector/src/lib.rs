//! Sampling collector on perf_event_open: launch, attach or system-wide, writing perf.data
//!
//! One sampling event per online CPU (the kernel refuses to mmap an inherited per-task
//! event opened with cpu = -1), each with its ring buffer; every record the kernel writes
//! is copied verbatim into a perf.data file by [`kairos_perf_data::write::PerfDataWriter`],
//! plus the side-band records synthesised from /proc that perf would write. Every way of
//! ending (target exit, duration, SIGINT/SIGTERM, write error) drains the buffers and
//! finishes the file, so the result always opens in `perf script`.

pub mod attr;
mod build_ids;
mod bytes;
pub mod calibrate;
mod cpus;
pub mod device_io;
pub mod extra;
pub mod launch;
mod open;
pub mod pmu;
mod record;
pub mod ring;
pub mod sample_hook;
pub mod target_hook;
pub use target_hook::TargetHook;
pub mod synth;
pub mod task_counter;
pub mod uprobe;
pub mod watch;

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kairos_perf_data::write::{PerfDataWriter, StringFeature};
use perf_event_open_sys as sys;

use attr::{AttrSpec, EventKind};
use ring::Ring;
use synth::IdTrailer;

pub(crate) use bytes::u64_at;
use cpus::chosen_cpus;
pub use cpus::{monotonic_ns, online_cpus, parse_cpu_list, process_alive, realtime_ns};
pub(crate) use open::{errno_name, open_fd, Events};
use record::run;
pub(crate) use record::PERF_RECORD_SAMPLE;

/// What to profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Start this program (searched in PATH like a shell) and profile it and its children.
    Launch {
        program: PathBuf,
        args: Vec<OsString>,
    },
    /// Attach to a running process: all its threads, and the threads and children they
    /// create from now on.
    Pid(i32),
    /// Every CPU, every process.
    SystemWide,
}

/// How call stacks are recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwinding {
    /// Kernel walks frame pointers (cheap; needs -fno-omit-frame-pointer code).
    FramePointers,
    /// User registers and `stack_bytes` of user stack per sample, unwound later with DWARF.
    Dwarf { stack_bytes: u32 },
}

impl Unwinding {
    /// perf's default stack dump size.
    pub const DEFAULT_STACK_BYTES: u32 = 8192;
}

/// Which counter drives sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventChoice {
    /// Hardware cycles where the kernel allows them, else the cpu-clock timer.
    Auto,
    CpuClock,
    Cycles,
}

#[derive(Debug, Clone)]
pub struct CollectOptions {
    pub target: Target,
    /// Sampling interval in microseconds (10 or more).
    pub interval_us: u64,
    pub unwinding: Unwinding,
    /// Stop after this long (None: when the target ends, or on SIGINT/SIGTERM).
    pub duration: Option<Duration>,
    /// The perf.data file to write.
    pub output: PathBuf,
    pub event: EventChoice,
    /// Some(true) requires kernel samples, Some(false) excludes them, None includes them
    /// when permitted.
    pub include_kernel: Option<bool>,
    /// Data pages of each CPU's ring buffer (rounded up to a power of two).
    pub ring_buffer_pages: usize,
    /// Only these CPUs (`-C`, as perf record -C); None: every online CPU.
    pub cpus: Option<Vec<i32>>,
    /// Whether samples carry the CPU's branch stack (LBR).
    pub branch_records: BranchRecords,
    /// Why this machine has no usable LBR (from kairos-platform), None when it has one.
    pub lbr_missing: Option<String>,
    /// Events recorded next to the sampling event, each every occurrence (system-overview).
    pub extra_events: Vec<extra::ExtraEvent>,
    /// MMAP records of data mappings too (mmap_data), to name the memory object of a
    /// faulting address.
    pub data_mmaps: bool,
    /// PERF_RECORD_SWITCH records (context_switch): when each task was switched out and
    /// back in, which no per-task tracepoint shows (sched_switch fires for the task
    /// leaving only).
    pub context_switches: bool,
    /// User registers in every sample (`PERF_REG_*` mask, 0 for none), for address sampling.
    pub user_regs: u64,
    /// Set in a launched program's environment (a preloaded runtime and its settings).
    pub env: Vec<(OsString, OsString)>,
    /// PMU events (memory-access sampling), opened on every CPU or per task with inherit;
    /// they replace the timer unless `pmu_with_timer`. Each refusal fails the collection.
    /// Their stacks are their CALLCHAIN bit; DWARF unwinding and `user_regs` are the timer's.
    pub pmu_events: Vec<pmu::PmuGroup>,
    /// Sample with the timer (`event`) too, next to the PMU events.
    pub pmu_with_timer: bool,
    /// Receives a copy of each sample of the sampling event as it is drained (pid, tid,
    /// time, IP, user registers), for analyses that act during the collection.
    pub on_sample: Option<sample_hook::SampleSender>,
    /// Run on the target before it is measured (e.g. to put it in a resctrl group).
    pub on_target: Option<TargetHook>,
    /// Ends the recording as `duration` would when set (by another thread or a signal
    /// handler of the caller): a flight recorder's "save this window now".
    pub stop: Option<Arc<AtomicBool>>,
}

/// `-k branch-records=`: every sample with the last user calls and returns (LBR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchRecords {
    Off,
    /// Where the CPU and kernel allow; the summary says why not otherwise.
    Auto,
    /// Required: collection fails where they cannot be recorded.
    On,
}

/// Whether branch records were recorded and, if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchOutcome {
    pub recorded: bool,
    /// The branch_sample_type used, or why there are none.
    pub detail: String,
}

impl CollectOptions {
    /// Defaults: 1 ms, frame pointers, Auto event, kernel when permitted, 1 MiB per CPU.
    pub fn new(target: Target, output: PathBuf) -> Self {
        CollectOptions {
            target,
            interval_us: 1000,
            unwinding: Unwinding::FramePointers,
            duration: None,
            output,
            event: EventChoice::Auto,
            include_kernel: None,
            ring_buffer_pages: 256,
            cpus: None,
            branch_records: BranchRecords::Off,
            lbr_missing: None,
            extra_events: Vec::new(),
            data_mmaps: false,
            context_switches: false,
            user_regs: 0,
            env: Vec::new(),
            pmu_events: Vec::new(),
            pmu_with_timer: false,
            on_sample: None,
            on_target: None,
            stop: None,
        }
    }
}

/// Passed to the progress callback about every 250 ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub samples: u64,
    /// Bytes of records written to the perf.data file so far.
    pub bytes: u64,
    pub lost_records: u64,
    pub elapsed: Duration,
}

/// Why recording stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The launched program exited, or the attached process is gone.
    TargetExited,
    /// `duration` elapsed.
    Duration,
    /// kairos received this signal (SIGINT, SIGTERM).
    Signal(i32),
    /// Writing the perf.data file failed (for example disk full); the file holds what was
    /// written before the failure.
    WriteError(String),
}

/// How the launched program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetExit {
    Code(i32),
    Signal(i32),
}

#[derive(Debug, Clone, PartialEq)]
pub struct CollectSummary {
    /// perf's name of the event ("cpu-clock", "cycles:u", ...); the PMU events' names,
    /// comma-separated, when they replace the timer.
    pub event_name: String,
    /// Why this event was used, for the report.
    pub event_reason: String,
    /// Sample period in the event's unit (ns for cpu-clock, cycles for cycles); 0 when PMU
    /// events replace the timer.
    pub sample_period: u64,
    pub include_kernel: bool,
    pub samples: u64,
    /// Records the kernel dropped because a ring buffer was full (sum of PERF_RECORD_LOST
    /// and PERF_RECORD_LOST_SAMPLES counts).
    pub lost_records: u64,
    /// PERF_RECORD_THROTTLE records: the kernel slowed sampling (perf_event_max_sample_rate).
    pub throttled: u64,
    /// Bytes of each CPU's ring buffer (its data area).
    pub ring_bytes: u64,
    /// Size of the data section of the perf.data file.
    pub bytes: u64,
    pub stopped_by: StopReason,
    /// For a launched program.
    pub target_exit: Option<TargetExit>,
    /// CLOCK_MONOTONIC at start and end, in ns (the clock of the sample time stamps).
    pub start_monotonic_ns: u64,
    pub end_monotonic_ns: u64,
    pub wall_seconds: f64,
    /// Online CPUs sampled.
    pub cpus: usize,
    /// Branch records (LBR): recorded or why not.
    pub branch_records: BranchOutcome,
    /// Each extra event: recorded or why not.
    pub extra_events: Vec<extra::ExtraOutcome>,
    /// Each PMU event (group leaders included) as recorded.
    pub pmu_events: Vec<pmu::PmuOutcome>,
}

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("program not found: {0}")]
    ProgramNotFound(PathBuf),
    #[error("{path}: cannot be executed ({detail})")]
    NotExecutable { path: PathBuf, detail: String },
    #[error("no process with PID {0}")]
    NoSuchProcess(i32),
    #[error(
        "the kernel refused perf_event_open ({detail}); kernel.perf_event_paranoid is {paranoid}"
    )]
    Permission { paranoid: i32, detail: String },
    #[error("event {event} is not supported here: {detail}")]
    EventUnsupported { event: String, detail: String },
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    #[error("the target could not be prepared: {0}")]
    TargetSetup(String),
    /// Branch records were required (`On`) and cannot be recorded here; says why.
    #[error("branch records (LBR) cannot be recorded here: {0}")]
    NoBranchRecords(String),
    #[error(transparent)]
    Pmu(#[from] pmu::PmuError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> CollectError {
    let context = context.into();
    move |source| CollectError::Io { context, source }
}

/// Records a profile. Blocks until the target exits, `duration` elapses, kairos gets
/// SIGINT/SIGTERM, or writing fails; the perf.data file is complete in every case.
pub fn collect(
    opts: &CollectOptions,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<CollectSummary, CollectError> {
    if opts.interval_us < 10 {
        return Err(CollectError::InvalidOptions(format!(
            "sampling interval {} us is below the 10 us minimum",
            opts.interval_us
        )));
    }
    if let Target::Pid(pid) = opts.target {
        if pid <= 0 || !process_alive(pid) {
            return Err(CollectError::NoSuchProcess(pid));
        }
    }
    if let Target::Launch { program, .. } = &opts.target {
        // Fail before creating the output file.
        launch::resolve(program)?;
    }
    let online = online_cpus();
    if online.is_empty() {
        return Err(CollectError::InvalidOptions("no online CPU found".into()));
    }
    let cpus = match &opts.cpus {
        None => online,
        Some(want) => chosen_cpus(want, &online)?,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&opts.output)
        .map_err(io_err(format!("creating {}", opts.output.display())))?;
    open::raise_fd_limit();
    let signals = Signals::register()?;
    let result = run(opts, file, &cpus, &signals, on_progress);
    drop(signals);
    if result.is_err() {
        // Nothing usable was recorded.
        let _ = std::fs::remove_file(&opts.output);
    }
    result
}

/// SIGINT/SIGTERM set a flag that the loop checks; the handlers are removed on return.
/// The signal is not forwarded as is: a launched program gets SIGTERM once recording has
/// stopped (see `run`), whether the signal came from the terminal or to kairos alone.
struct Signals {
    ids: Vec<signal_hook::SigId>,
    flags: Vec<(i32, Arc<AtomicBool>)>,
}

impl Signals {
    fn register() -> Result<Signals, CollectError> {
        let mut s = Signals {
            ids: Vec::new(),
            flags: Vec::new(),
        };
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let flag = Arc::new(AtomicBool::new(false));
            let id = signal_hook::flag::register(sig, Arc::clone(&flag))
                .map_err(io_err("installing the SIGINT/SIGTERM handlers"))?;
            s.ids.push(id);
            s.flags.push((sig, flag));
        }
        Ok(s)
    }
    fn received(&self) -> Option<i32> {
        self.flags
            .iter()
            .find(|(_, f)| f.load(Ordering::Relaxed))
            .map(|(s, _)| *s)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
