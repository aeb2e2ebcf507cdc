//! Sampling collector on perf_event_open: launch, attach or system-wide, writing perf.data
//!
//! One sampling event per online CPU (the kernel refuses to mmap an inherited per-task
//! event opened with cpu = -1), each with its ring buffer; every record the kernel writes
//! is copied verbatim into a perf.data file by [`kairos_perf_data::write::PerfDataWriter`],
//! plus the side-band records synthesised from /proc that perf would write. Every way of
//! ending (target exit, duration, SIGINT/SIGTERM, write error) drains the buffers and
//! finishes the file, so the result always opens in `perf script`.

pub mod attr;
pub mod calibrate;
pub mod device_io;
pub mod extra;
pub mod launch;
pub mod pmu;
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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kairos_perf_data::write::{PerfDataWriter, StringFeature};
use perf_event_open_sys as sys;

use attr::{AttrSpec, EventKind};
use ring::Ring;
use synth::IdTrailer;

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

/// The opened events: every fd (for ids and enabling) and one ring per CPU.
struct Events {
    attr: sys::bindings::perf_event_attr,
    kind: EventKind,
    include_kernel: bool,
    fds: Vec<OwnedFd>,
    /// Index into `fds` of each CPU's first fd, whose buffer the others write into.
    leaders: Vec<usize>,
    /// (task, index into the CPU list) of each fd, so extra events open on the same pairs.
    targets: Vec<(i32, usize)>,
}

struct OpenFailure {
    errno: i32,
    pid: i32,
    cpu: i32,
}

fn errno_name(e: i32) -> &'static str {
    match e {
        libc::ENOENT => "ENOENT",
        libc::ENODEV => "ENODEV",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EINVAL => "EINVAL",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ESRCH => "ESRCH",
        libc::EMFILE => "EMFILE",
        libc::EBUSY => "EBUSY",
        _ => "error",
    }
}

pub(crate) fn open_fd(
    attr: &mut sys::bindings::perf_event_attr,
    pid: i32,
    cpu: i32,
) -> Result<OwnedFd, i32> {
    // CLOEXEC: a program launched by another thread must not inherit our events.
    // SAFETY: attr is a valid, initialised perf_event_attr.
    let fd = unsafe {
        sys::perf_event_open(attr, pid, cpu, -1, sys::bindings::PERF_FLAG_FD_CLOEXEC as _)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL));
    }
    // SAFETY: fd was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens one event per (task, CPU) pair. For an attached process, threads that exit while
/// we open are skipped, and threads born meanwhile are picked up by a second listing.
fn open_events(
    spec: &AttrSpec,
    target: &Target,
    child: Option<i32>,
    cpus: &[i32],
) -> Result<Events, OpenFailure> {
    let mut attr = attr::build(spec);
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut cpu_of: Vec<usize> = Vec::new();
    let mut pid_of: Vec<i32> = Vec::new();
    let mut open_task = |attr: &mut sys::bindings::perf_event_attr,
                         fds: &mut Vec<OwnedFd>,
                         cpu_of: &mut Vec<usize>,
                         pid: i32|
     -> Result<(), OpenFailure> {
        for (ci, &cpu) in cpus.iter().enumerate() {
            match open_fd(attr, pid, cpu) {
                Ok(fd) => {
                    fds.push(fd);
                    cpu_of.push(ci);
                    pid_of.push(pid);
                }
                Err(errno) => return Err(OpenFailure { errno, pid, cpu }),
            }
        }
        Ok(())
    };
    match target {
        Target::Launch { .. } => {
            let pid = child.unwrap_or(-1);
            open_task(&mut attr, &mut fds, &mut cpu_of, pid)?;
        }
        Target::SystemWide => open_task(&mut attr, &mut fds, &mut cpu_of, -1)?,
        Target::Pid(pid) => {
            let mut done: Vec<i32> = Vec::new();
            for _round in 0..3 {
                let tids = synth::threads_of(*pid).unwrap_or_default();
                let new: Vec<i32> = tids.into_iter().filter(|t| !done.contains(t)).collect();
                if new.is_empty() {
                    break;
                }
                for tid in new {
                    done.push(tid);
                    match open_task(&mut attr, &mut fds, &mut cpu_of, tid) {
                        Ok(()) => {}
                        Err(f) if f.errno == libc::ESRCH => {} // thread ended meanwhile
                        Err(f) => return Err(f),
                    }
                }
            }
            if fds.is_empty() {
                return Err(OpenFailure {
                    errno: libc::ESRCH,
                    pid: *pid,
                    cpu: -1,
                });
            }
        }
    }
    // The first event of each CPU owns that CPU's ring buffer; the others are redirected
    // into it once it is mapped (see `redirect_to_leaders`).
    let leaders: Vec<usize> = (0..cpus.len())
        .filter_map(|ci| cpu_of.iter().position(|&c| c == ci))
        .collect();
    let targets = pid_of.into_iter().zip(cpu_of).collect();
    Ok(Events {
        attr,
        kind: spec.kind,
        include_kernel: spec.include_kernel,
        fds,
        leaders,
        targets,
    })
}

/// Points every event at its CPU's leader, so there is one mmap and one poll fd per CPU
/// whatever the number of threads (-p of a multi-threaded process). Newer kernels refuse
/// the redirect (EINVAL) until the leader's buffer is mapped, so this runs after mapping.
fn redirect_to_leaders(events: &Events) -> Result<(), CollectError> {
    for &l in &events.leaders {
        let cpu = events.targets[l].1;
        for (i, t) in events.targets.iter().enumerate() {
            if t.1 == cpu && i != l {
                // SAFETY: both are perf fds we own.
                if unsafe {
                    sys::ioctls::SET_OUTPUT(events.fds[i].as_raw_fd(), events.fds[l].as_raw_fd())
                } != 0
                {
                    return Err(io_err(
                        "redirecting a thread's events to its CPU's ring buffer",
                    )(io::Error::last_os_error()));
                }
            }
        }
    }
    Ok(())
}

/// Tries the candidate events and kernel settings in order; returns the first that opens,
/// with the reason for the choice.
/// Opens the sampling events with branch records as `opts.branch_records` asks: each
/// filter of [`attr::BRANCH_CANDIDATES`] in turn on a hardware event, then (Auto) without.
fn open_with_branches(
    opts: &CollectOptions,
    child: Option<i32>,
    cpus: &[i32],
    wakeup_bytes: u32,
) -> Result<(Events, String, u64, BranchOutcome), CollectError> {
    let without = |why: String| -> Result<_, CollectError> {
        let (ev, reason, period) = choose_and_open(opts, child, cpus, wakeup_bytes, 0)?;
        Ok((
            ev,
            reason,
            period,
            BranchOutcome {
                recorded: false,
                detail: why,
            },
        ))
    };
    match (opts.branch_records, &opts.lbr_missing) {
        (BranchRecords::Off, _) => return without("not requested (branch-records=off)".into()),
        (BranchRecords::On, Some(why)) => return Err(CollectError::NoBranchRecords(why.clone())),
        (BranchRecords::Auto, Some(why)) => return without(why.clone()),
        _ => {}
    }
    if opts.event == EventChoice::CpuClock || pmu::replaces_timer(opts) {
        let why = match pmu::replaces_timer(opts) {
            true => "not recorded with PMU events replacing the timer".to_string(),
            false => "branch stacks need a hardware event, and cpu-clock was chosen".to_string(),
        };
        return match opts.branch_records {
            BranchRecords::On => Err(CollectError::NoBranchRecords(why)),
            _ => without(why),
        };
    }
    let mut last = String::new();
    for bst in attr::BRANCH_CANDIDATES {
        match choose_and_open(opts, child, cpus, wakeup_bytes, bst) {
            Ok((ev, reason, period)) => {
                let filter = if bst & attr::BRANCH_USER_CALL_RETURN == attr::BRANCH_USER_CALL_RETURN
                {
                    "user calls and returns (hardware filter)"
                } else {
                    "every user branch: the hardware filter was refused (as on AMD Zen 3 BRS); calls and returns are picked in software"
                };
                let detail = format!("recorded: {filter}, branch_sample_type {bst:#x}");
                return Ok((
                    ev,
                    reason,
                    period,
                    BranchOutcome {
                        recorded: true,
                        detail,
                    },
                ));
            }
            Err(
                e @ (CollectError::NoSuchProcess(_)
                | CollectError::ProgramNotFound(_)
                | CollectError::NotExecutable { .. }),
            ) => return Err(e),
            Err(e) => last = e.to_string(),
        }
    }
    let why = format!("the kernel refused branch-stack sampling with every filter ({last})");
    match opts.branch_records {
        BranchRecords::On => Err(CollectError::NoBranchRecords(why)),
        _ => without(why),
    }
}

fn choose_and_open(
    opts: &CollectOptions,
    child: Option<i32>,
    cpus: &[i32],
    wakeup_bytes: u32,
    branch_sample_type: u64,
) -> Result<(Events, String, u64), CollectError> {
    let paranoid = attr::paranoid();
    let kernel_options: Vec<bool> = match opts.include_kernel {
        Some(k) => vec![k],
        None if attr::kernel_permitted() => vec![true, false],
        None => vec![false],
    };
    let mut kinds: Vec<EventKind> = match opts.event {
        _ if pmu::replaces_timer(opts) => vec![EventKind::Dummy],
        // Branch stacks come with hardware events only.
        EventChoice::Auto if branch_sample_type != 0 => vec![EventKind::Cycles],
        EventChoice::Auto => vec![EventKind::Cycles, EventKind::CpuClock],
        EventChoice::Cycles => vec![EventKind::Cycles],
        EventChoice::CpuClock => vec![EventKind::CpuClock],
    };
    let mhz = attr::nominal_mhz();
    let mut reason = String::new();
    if kinds.contains(&EventKind::Cycles) && mhz.is_none() {
        if opts.event == EventChoice::Cycles {
            return Err(CollectError::EventUnsupported {
                event: "cycles".into(),
                detail: "the CPU's nominal frequency is unknown, so the interval cannot be converted to cycles"
                    .into(),
            });
        }
        kinds.retain(|k| *k != EventKind::Cycles);
        reason = "CPU frequency unknown, cannot convert the interval to cycles; ".into();
    }
    let pid_for_errors = match opts.target {
        Target::Pid(p) => p,
        _ => child.unwrap_or(-1),
    };
    for (ki, &kind) in kinds.iter().enumerate() {
        let period = match kind {
            EventKind::CpuClock | EventKind::Dummy => opts.interval_us.saturating_mul(1000),
            EventKind::Cycles => (opts.interval_us as f64 * mhz.unwrap_or(1000.0)).round() as u64,
        };
        for (oi, &include_kernel) in kernel_options.iter().enumerate() {
            let spec = AttrSpec {
                kind,
                period,
                unwinding: opts.unwinding,
                include_kernel,
                inherit: !matches!(opts.target, Target::SystemWide),
                enable_on_exec: matches!(opts.target, Target::Launch { .. }),
                wakeup_bytes,
                branch_sample_type,
                mmap_data: opts.data_mmaps,
                context_switch: opts.context_switches,
                user_regs: opts.user_regs,
            };
            match open_events(&spec, &opts.target, child, cpus) {
                Ok(ev) => {
                    reason.push_str(&match (kind, opts.event) {
                        (EventKind::Dummy, _) => pmu::DUMMY_REASON.to_string(),
                        (EventKind::Cycles, _) => format!(
                            "hardware cycles, period {period} cycles = {} us at the nominal {:.0} MHz",
                            opts.interval_us,
                            mhz.unwrap_or(0.0)
                        ),
                        (EventKind::CpuClock, EventChoice::CpuClock) => {
                            format!("cpu-clock requested, period {period} ns")
                        }
                        (EventKind::CpuClock, _) => format!("cpu-clock timer, period {period} ns"),
                    });
                    if !include_kernel && opts.include_kernel.is_none() {
                        reason.push_str(&format!(
                            "; kernel excluded: not permitted (perf_event_paranoid {paranoid}, not root)"
                        ));
                    }
                    return Ok((ev, reason, period));
                }
                Err(f) => {
                    let e = f.errno;
                    let more_kernel_options = oi + 1 < kernel_options.len();
                    if (e == libc::EACCES || e == libc::EPERM) && more_kernel_options {
                        continue; // retry without the kernel
                    }
                    if e == libc::ESRCH {
                        return Err(CollectError::NoSuchProcess(if f.pid > 0 {
                            f.pid
                        } else {
                            pid_for_errors
                        }));
                    }
                    if e == libc::EACCES || e == libc::EPERM {
                        return Err(CollectError::Permission {
                            paranoid,
                            detail: format!(
                                "{} ({}) for {} on pid {} cpu {}",
                                errno_name(e),
                                io::Error::from_raw_os_error(e),
                                kind.name(include_kernel),
                                f.pid,
                                f.cpu
                            ),
                        });
                    }
                    if e == libc::EMFILE || e == libc::ENFILE {
                        return Err(CollectError::Io {
                            context: format!(
                                "opening {} events (one per thread and CPU)",
                                cpus.len()
                            ),
                            source: io::Error::from_raw_os_error(e),
                        });
                    }
                    let unsupported = matches!(
                        e,
                        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP | libc::EINVAL
                    );
                    if kind == EventKind::Cycles && unsupported && ki + 1 < kinds.len() {
                        let why = match e {
                            libc::ENOENT | libc::ENODEV => "no PMU, typical of VMs",
                            libc::EOPNOTSUPP => "the PMU cannot sample (no overflow interrupt)",
                            _ => "the PMU rejected the sampling settings",
                        };
                        reason = format!(
                            "hardware cycles refused by the kernel ({}): {why}; ",
                            errno_name(e)
                        );
                        break;
                    }
                    if unsupported {
                        return Err(CollectError::EventUnsupported {
                            event: kind.name(include_kernel),
                            detail: format!(
                                "{} ({})",
                                errno_name(e),
                                io::Error::from_raw_os_error(e)
                            ),
                        });
                    }
                    return Err(CollectError::Io {
                        context: format!(
                            "perf_event_open of {} on cpu {}",
                            kind.name(include_kernel),
                            f.cpu
                        ),
                        source: io::Error::from_raw_os_error(e),
                    });
                }
            }
        }
    }
    Err(CollectError::EventUnsupported {
        event: "cpu-clock".into(),
        detail: "no sampling event could be opened".into(),
    })
}

/// Opens one extra event on every (task, CPU) pair of the sampling event, each writing
/// into its CPU's ring. Returns the fds and their ids, or why the event cannot be recorded.
fn open_extra(
    a: &mut sys::bindings::perf_event_attr,
    events: &Events,
    cpus: &[i32],
) -> Result<(Vec<OwnedFd>, Vec<u64>), String> {
    let mut fds = Vec::new();
    let mut ids = Vec::new();
    for &(pid, ci) in &events.targets {
        let cpu = cpus.get(ci).copied().unwrap_or(-1);
        let fd = match open_fd(a, pid, cpu) {
            Ok(fd) => fd,
            // An attached process's thread that ended meanwhile.
            Err(libc::ESRCH) => continue,
            Err(e) => {
                return Err(format!(
                    "{} ({})",
                    errno_name(e),
                    io::Error::from_raw_os_error(e)
                ))
            }
        };
        let leader = events
            .leaders
            .iter()
            .copied()
            .find(|&l| events.targets.get(l).is_some_and(|t| t.1 == ci));
        if let Some(l) = leader {
            // SAFETY: both are perf fds we own.
            if unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), events.fds[l].as_raw_fd()) } != 0 {
                return Err(format!(
                    "redirecting to the CPU's ring buffer failed ({})",
                    io::Error::last_os_error()
                ));
            }
        }
        let mut id = 0u64;
        // SAFETY: fd is a perf event fd; id is a valid out pointer.
        if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } != 0 {
            return Err(format!(
                "reading the event id failed ({})",
                io::Error::last_os_error()
            ));
        }
        ids.push(id);
        fds.push(fd);
    }
    if fds.is_empty() {
        return Err("no task left to open it on".into());
    }
    Ok((fds, ids))
}

/// Record counting and writing, shared by the loop and the final drain.
struct Sink {
    writer: PerfDataWriter,
    samples: u64,
    lost: u64,
    throttled: u64,
    first_time: u64,
    last_time: u64,
    write_error: Option<String>,
    hook: Option<sample_hook::Hook>,
}

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_THROTTLE: u32 = 5;
pub(crate) const PERF_RECORD_SAMPLE: u32 = 9;
const PERF_RECORD_LOST_SAMPLES: u32 = 13;

pub(crate) fn u64_at(b: &[u8], o: usize) -> u64 {
    match b.get(o..o + 8) {
        Some(s) => u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        None => 0,
    }
}

impl Sink {
    fn record(&mut self, rec: &[u8]) {
        if self.write_error.is_some() {
            return;
        }
        let ty = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
        match ty {
            PERF_RECORD_SAMPLE => {
                self.samples += 1;
                // Our sample layout: header, identifier, ip, pid/tid, time.
                let t = u64_at(rec, 32);
                if self.first_time == 0 || t < self.first_time {
                    self.first_time = t;
                }
                self.last_time = self.last_time.max(t);
                if let Some(h) = &self.hook {
                    h.offer(rec);
                }
            }
            // Both carry {u64 id, u64 lost} first.
            PERF_RECORD_LOST | PERF_RECORD_LOST_SAMPLES => self.lost += u64_at(rec, 16),
            PERF_RECORD_THROTTLE => self.throttled += 1,
            _ => {}
        }
        if let Err(e) = self.writer.write_record(rec) {
            self.write_error = Some(format!("writing the perf.data file failed: {e}"));
        }
    }

    fn drain(&mut self, rings: &mut [Ring]) -> u64 {
        let mut n = 0;
        for r in rings.iter_mut() {
            n += r.drain(&mut |rec| self.record(rec));
        }
        if n > 0 {
            // As perf: mark a round so readers can sort and flush what came before.
            self.record(&synth::finished_round_record());
        }
        n
    }

    fn progress(&self, start: Instant) -> Progress {
        Progress {
            samples: self.samples,
            bytes: self.writer.data_bytes(),
            lost_records: self.lost,
            elapsed: start.elapsed(),
        }
    }
}

fn run(
    opts: &CollectOptions,
    file: std::fs::File,
    cpus: &[i32],
    signals: &Signals,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<CollectSummary, CollectError> {
    let wall_start = Instant::now();
    let mut writer =
        PerfDataWriter::create(file).map_err(io_err("writing the perf.data header"))?;

    // Launch: the child exists (blocked before exec) while the events are opened on it.
    let mut child = match &opts.target {
        Target::Launch { program, args } => {
            Some(launch::spawn_waiting_with(program, args, &opts.env)?)
        }
        _ => None,
    };
    let pages = opts.ring_buffer_pages.max(1).next_power_of_two();
    let ring_bytes = pages * ring::page_size();
    let wakeup = (ring_bytes / 4).min(u32::MAX as usize) as u32;
    let (events, event_reason, period, branch_records) =
        open_with_branches(opts, child.as_ref().map(|c| c.pid), cpus, wakeup)?;

    let mut rings = Vec::with_capacity(events.leaders.len());
    for &l in &events.leaders {
        let r = Ring::map(events.fds[l].as_raw_fd(), pages).map_err(|e| {
            if e.raw_os_error() == Some(libc::EPERM) {
                CollectError::Permission {
                    paranoid: attr::paranoid(),
                    detail: format!(
                        "ring buffer of {} KiB per CPU exceeds kernel.perf_event_mlock_kb; use fewer pages",
                        ring_bytes / 1024
                    ),
                }
            } else {
                CollectError::Io { context: format!("mapping a ring buffer of {} KiB", ring_bytes / 1024), source: e }
            }
        })?;
        rings.push(r);
    }
    redirect_to_leaders(&events)?;

    let mut ids = Vec::with_capacity(events.fds.len());
    for fd in &events.fds {
        let mut id = 0u64;
        // SAFETY: fd is a perf event fd; id is a valid out pointer.
        if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } != 0 {
            return Err(io_err("reading an event id")(io::Error::last_os_error()));
        }
        ids.push(id);
    }
    let event_name = events.kind.name(events.include_kernel);
    let include_kernel = events.include_kernel;
    writer.add_attr(
        attr::attr_bytes(&events.attr),
        ids.clone(),
        event_name.clone(),
    );
    // PMU fds are enabled, disabled and closed with the extra events'.
    let (mut extra_fds, pmu_outcomes) = pmu::open_all(opts, &events, cpus, &mut writer)?;
    let mut extra_outcomes = Vec::with_capacity(opts.extra_events.len());
    for x in &opts.extra_events {
        let enable_on_exec = matches!(opts.target, Target::Launch { .. });
        let inherit = !matches!(opts.target, Target::SystemWide);
        let mut a = x.attr(include_kernel, enable_on_exec, inherit);
        match open_extra(&mut a, &events, cpus) {
            Ok((fds, xids)) => {
                writer.add_attr(attr::attr_bytes(&a), xids, x.name.clone());
                extra_fds.extend(fds);
                extra_outcomes.push(extra::ExtraOutcome {
                    name: x.name.clone(),
                    missing: None,
                });
            }
            Err(why) => extra_outcomes.push(extra::ExtraOutcome {
                name: x.name.clone(),
                missing: Some(why),
            }),
        }
    }
    // The machine's online CPUs, not only those sampled (-C).
    set_features(&mut writer, online_cpus().len().max(cpus.len()));
    let recorded: Vec<extra::ExtraEvent> = opts
        .extra_events
        .iter()
        .filter(|x| {
            extra_outcomes
                .iter()
                .any(|o| o.name == x.name && o.missing.is_none())
        })
        .cloned()
        .collect();
    if recorded
        .iter()
        .any(|x| x.type_ == sys::bindings::PERF_TYPE_TRACEPOINT)
    {
        // perf refuses a file with tracepoints but no event formats.
        if let Some(t) = extra::tracing_data(&recorded) {
            writer.set_feature_raw(kairos_perf_data::HEADER_TRACING_DATA, t);
        }
    }

    let hook = opts
        .on_sample
        .clone()
        .map(|tx| sample_hook::Hook::new(tx, &events.attr, &ids));
    let mut sink = Sink {
        writer,
        samples: 0,
        lost: 0,
        throttled: 0,
        first_time: 0,
        last_time: 0,
        write_error: None,
        hook,
    };
    let start_ns = monotonic_ns();
    let trailer = IdTrailer {
        time: start_ns,
        id: ids.first().copied().unwrap_or(0),
    };
    // Side-band records of what exists already. Written before anything from the
    // buffers, stamped with the start time.
    if let Some(addr) = synth::kernel_text_address() {
        sink.record(&synth::kernel_mmap_record(addr, trailer));
    }
    let mut synthesised = Vec::new();
    let data_maps = matches!(opts.unwinding, Unwinding::Dwarf { .. }) || opts.data_mmaps;
    match opts.target {
        Target::Pid(pid) => synth::process_records(pid, data_maps, trailer, &mut synthesised),
        Target::SystemWide => {
            for pid in synth::all_pids() {
                synth::process_records(pid, data_maps, trailer, &mut synthesised);
            }
        }
        Target::Launch { .. } => {}
    }
    for r in &synthesised {
        sink.record(r);
    }

    if let Some(h) = &opts.on_target {
        let tids = match (&child, &opts.target) {
            (Some(c), _) => vec![c.pid],
            (None, Target::Pid(pid)) => target_hook::threads(*pid),
            _ => Vec::new(),
        };
        for tid in tids {
            (h.0)(tid).map_err(CollectError::TargetSetup)?;
        }
    }

    // Start counting.
    if let Some(c) = child.as_mut() {
        c.release()?;
    } else {
        for fd in events.fds.iter().chain(&extra_fds) {
            // SAFETY: enabling our own perf fd.
            unsafe { sys::ioctls::ENABLE(fd.as_raw_fd(), 0) };
        }
    }

    let leader_fds: Vec<RawFd> = events
        .leaders
        .iter()
        .map(|&l| events.fds[l].as_raw_fd())
        .collect();
    let mut pollfds: Vec<libc::pollfd> = leader_fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // The duration is of collection proper: opening events and reading /proc for the
    // side-band records can take long on a loaded machine and must not eat into it.
    let deadline = opts.duration.map(|d| Instant::now() + d);
    let mut last_progress = Instant::now();
    let stop = loop {
        // A launched child's exit does not wake poll(), so this bounds how late we notice it.
        let mut timeout = Duration::from_millis(50);
        if let Some(d) = deadline {
            timeout = timeout.min(d.saturating_duration_since(Instant::now()));
        }
        // SAFETY: pollfds is a valid array of pollfd.
        unsafe {
            libc::poll(
                pollfds.as_mut_ptr(),
                pollfds.len() as libc::nfds_t,
                timeout.as_millis() as i32,
            )
        };
        for p in pollfds.iter_mut() {
            // A hung-up event (its task is gone) would make poll return at once forever;
            // stop polling it, but keep draining its buffer.
            if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                p.fd = -1;
            }
            p.revents = 0;
        }
        sink.drain(&mut rings);
        if let Some(e) = &sink.write_error {
            break StopReason::WriteError(e.clone());
        }
        if let Some(sig) = signals.received() {
            break StopReason::Signal(sig);
        }
        if let Some(c) = child.as_mut() {
            if c.try_wait().is_some() {
                break StopReason::TargetExited;
            }
        }
        if let Target::Pid(pid) = opts.target {
            if !process_alive(pid) {
                break StopReason::TargetExited;
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break StopReason::Duration;
        }
        if last_progress.elapsed() >= Duration::from_millis(250) {
            last_progress = Instant::now();
            on_progress(&sink.progress(wall_start));
        }
    };

    let disable = |fds: &mut dyn Iterator<Item = &OwnedFd>| {
        for fd in fds {
            // SAFETY: disabling our own perf fd; no new records after this.
            unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
        }
    };
    // When we, not the target, decided to stop (a signal to kairos, the duration, a write
    // error), recording stops now, as perf record does: the target may take a while to
    // end, or never end, and nothing it does after the stop belongs in the result.
    let mut end_ns = None;
    if stop != StopReason::TargetExited {
        disable(&mut events.fds.iter().chain(&extra_fds));
        end_ns = Some(monotonic_ns());
    }
    // Then end the program we launched (SIGTERM, SIGKILL after 2 s) and reap it. An
    // attached process (-p) or the system (-a) is left running: there is no child.
    let mut target_exit = None;
    if let Some(c) = child.as_mut() {
        let mut tick = || {
            sink.drain(&mut rings);
        };
        target_exit = match stop {
            StopReason::TargetExited => c.try_wait(),
            StopReason::Signal(_) | StopReason::Duration | StopReason::WriteError(_) => {
                c.terminate(Duration::from_secs(2), &mut tick)
            }
        };
    }
    disable(&mut events.fds.iter().chain(&extra_fds));
    let end_ns = end_ns.unwrap_or_else(monotonic_ns);
    sink.drain(&mut rings);
    let mut stopped_by = stop;
    if let Err(e) = sink.writer.flush_data() {
        if sink.write_error.is_none() {
            sink.write_error = Some(format!("writing the perf.data file failed: {e}"));
        }
    }
    if let Some(e) = &sink.write_error {
        if !matches!(stopped_by, StopReason::WriteError(_)) {
            stopped_by = StopReason::WriteError(e.clone());
        }
    }
    if sink.samples > 0 {
        sink.writer.set_sample_time(sink.first_time, sink.last_time);
    }
    drop(rings);
    drop(extra_fds);
    drop(events);
    let bytes = sink
        .writer
        .finish()
        .map_err(io_err("finishing the perf.data file"))?;
    if let Some(c) = child.as_mut() {
        target_exit = target_exit.or_else(|| c.try_wait());
    }
    let pmu_only = pmu::replaces_timer(opts);
    let summary = CollectSummary {
        event_name: match pmu_only {
            true => pmu_outcomes
                .iter()
                .map(|o| o.name.as_str())
                .collect::<Vec<_>>()
                .join(","),
            false => event_name,
        },
        event_reason,
        sample_period: if pmu_only { 0 } else { period },
        include_kernel,
        samples: sink.samples,
        lost_records: sink.lost,
        throttled: sink.throttled,
        ring_bytes: ring_bytes as u64,
        bytes,
        stopped_by,
        target_exit,
        start_monotonic_ns: start_ns,
        end_monotonic_ns: end_ns,
        wall_seconds: wall_start.elapsed().as_secs_f64(),
        cpus: cpus.len(),
        branch_records,
        extra_events: extra_outcomes,
        pmu_events: pmu_outcomes,
    };
    on_progress(&Progress {
        samples: summary.samples,
        bytes: summary.bytes,
        lost_records: summary.lost_records,
        elapsed: wall_start.elapsed(),
    });
    Ok(summary)
}

fn set_features(w: &mut PerfDataWriter, online: usize) {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    if unsafe { libc::uname(&mut u) } == 0 {
        let field = |f: &[libc::c_char]| -> String {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        w.set_feature_string(StringFeature::Hostname, field(&u.nodename));
        w.set_feature_string(StringFeature::OsRelease, field(&u.release));
        w.set_feature_string(StringFeature::Arch, field(&u.machine));
    }
    w.set_feature_string(
        StringFeature::Version,
        format!("kairos {}", env!("CARGO_PKG_VERSION")),
    );
    let model = attr::cpu_model();
    if !model.is_empty() {
        w.set_feature_string(StringFeature::CpuDesc, model);
    }
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .map(|s| parse_cpu_list(&s).len())
        .unwrap_or(online);
    w.set_nr_cpus(possible.max(online) as u32, online as u32);
    if let Some(kb) = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    }) {
        w.set_total_mem_kb(kb);
    }
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    w.set_cmdline(&args);
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) } == 0 {
        w.set_clockid_res_ns(res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64);
    }
    let tod = clock_ns(libc::CLOCK_REALTIME);
    let mono = monotonic_ns();
    w.set_clock_data(libc::CLOCK_MONOTONIC as u32, tod, mono);
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC now, in ns: the clock of the sample time stamps (use_clockid).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// True while the process exists and is not a zombie.
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => match s.rfind(')') {
            Some(i) => !matches!(
                s[i + 1..].trim_start().chars().next(),
                Some('Z') | Some('X')
            ),
            None => true,
        },
        Err(_) => false,
    }
}

/// The CPUs of `-C`, each online, sorted, once; else which is not and which are.
fn chosen_cpus(want: &[i32], online: &[i32]) -> Result<Vec<i32>, CollectError> {
    let mut v = want.to_vec();
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        return Err(CollectError::InvalidOptions("the CPU list is empty".into()));
    }
    if let Some(c) = v.iter().find(|c| !online.contains(c)) {
        let list: Vec<String> = online.iter().map(i32::to_string).collect();
        return Err(CollectError::InvalidOptions(format!(
            "CPU {c} is not online (online: {})",
            list.join(",")
        )));
    }
    Ok(v)
}

/// "0-3,5,7-8" -> [0,1,2,3,5,7,8]
pub fn parse_cpu_list(s: &str) -> Vec<i32> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<i32>(), b.trim().parse::<i32>()) {
                    v.extend(a..=b);
                }
            }
            None => {
                if let Ok(a) = part.trim().parse() {
                    v.push(a);
                }
            }
        }
    }
    v
}

/// Online CPUs from sysfs, else 0..nproc.
pub fn online_cpus() -> Vec<i32> {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/online") {
        let v = parse_cpu_list(&s);
        if !v.is_empty() {
            return v;
        }
    }
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
    (0..n as i32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), vec![0, 1]);
        assert_eq!(parse_cpu_list("0,2-3,7"), vec![0, 2, 3, 7]);
    }
}
