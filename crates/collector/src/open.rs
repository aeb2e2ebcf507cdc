//! Opening the sampling events: the event chosen (hardware cycles or the cpu-clock timer),
//! with branch records when asked, one per CPU (per task with inherit when attaching),
//! each CPU's later events redirected into its first one's ring; extra events on the same
//! (task, CPU) pairs. A refusal becomes a sentence naming the errno and the fix.

use super::*;

/// The opened events: every fd (for ids and enabling) and one ring per CPU.
pub(crate) struct Events {
    pub(crate) attr: sys::bindings::perf_event_attr,
    pub(crate) kind: EventKind,
    pub(crate) include_kernel: bool,
    pub(crate) fds: Vec<OwnedFd>,
    /// Index into `fds` of each CPU's first fd, whose buffer the others write into.
    pub(crate) leaders: Vec<usize>,
    /// (task, index into the CPU list) of each fd, so extra events open on the same pairs.
    pub(crate) targets: Vec<(i32, usize)>,
}

pub(crate) struct OpenFailure {
    pub(crate) errno: i32,
    pub(crate) pid: i32,
    pub(crate) cpu: i32,
}

/// One descriptor per event, thread and CPU (many functions' probes, thousands of threads
/// of an attached process): the soft limit goes up to the hard one.
pub(crate) fn raise_fd_limit() {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on our own process.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

pub(crate) fn errno_name(e: i32) -> &'static str {
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
pub(crate) fn open_events(
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
pub(crate) fn redirect_to_leaders(events: &Events) -> Result<(), CollectError> {
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
pub(crate) fn open_with_branches(
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

pub(crate) fn choose_and_open(
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
    let mhz = attr::nominal_mhz();
    let (kinds, mut reason) = candidate_kinds(opts, branch_sample_type, mhz)?;
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
                    reason.push_str(&chosen_reason(opts, kind, period, mhz));
                    if !include_kernel && opts.include_kernel.is_none() {
                        reason.push_str(&format!(
                            "; kernel excluded: not permitted (perf_event_paranoid {paranoid}, not root)"
                        ));
                    }
                    return Ok((ev, reason, period));
                }
                Err(f) => {
                    let attempt = Attempt {
                        kind,
                        include_kernel,
                        more_kernel_options: oi + 1 < kernel_options.len(),
                        more_kinds: ki + 1 < kinds.len(),
                    };
                    match after_refusal(&f, &attempt, pid_for_errors, paranoid, cpus.len()) {
                        Next::WithoutKernel => continue,
                        Next::OtherKind(why) => {
                            reason = why;
                            break;
                        }
                        Next::Fail(e) => return Err(e),
                    }
                }
            }
        }
    }
    Err(CollectError::EventUnsupported {
        event: "cpu-clock".into(),
        detail: "no sampling event could be opened".into(),
    })
}

/// The kinds of sampling event to try, in order, and the start of the reason for the
/// choice (why cycles were left out when the CPU's frequency is unknown).
fn candidate_kinds(
    opts: &CollectOptions,
    branch_sample_type: u64,
    mhz: Option<f64>,
) -> Result<(Vec<EventKind>, String), CollectError> {
    let mut kinds: Vec<EventKind> = match opts.event {
        _ if pmu::replaces_timer(opts) => vec![EventKind::Dummy],
        // Branch stacks come with hardware events only.
        EventChoice::Auto if branch_sample_type != 0 => vec![EventKind::Cycles],
        EventChoice::Auto => vec![EventKind::Cycles, EventKind::CpuClock],
        EventChoice::Cycles => vec![EventKind::Cycles],
        EventChoice::CpuClock => vec![EventKind::CpuClock],
    };
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
    Ok((kinds, reason))
}

/// The sentence saying which event samples, and at what period.
fn chosen_reason(opts: &CollectOptions, kind: EventKind, period: u64, mhz: Option<f64>) -> String {
    match (kind, opts.event) {
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
    }
}

/// One try at opening the sampling events, and whether other tries are left.
struct Attempt {
    kind: EventKind,
    include_kernel: bool,
    more_kernel_options: bool,
    more_kinds: bool,
}

/// What to do after the kernel refused an attempt.
enum Next {
    /// Retry without the kernel.
    WithoutKernel,
    /// Fall back to the next kind of event; the reason says why this one was refused.
    OtherKind(String),
    Fail(CollectError),
}

/// Reads the kernel's refusal of an attempt: retry, fall back, or the error to report.
fn after_refusal(
    f: &OpenFailure,
    a: &Attempt,
    pid_for_errors: i32,
    paranoid: i32,
    cpus: usize,
) -> Next {
    let e = f.errno;
    let (kind, include_kernel) = (a.kind, a.include_kernel);
    if (e == libc::EACCES || e == libc::EPERM) && a.more_kernel_options {
        return Next::WithoutKernel;
    }
    if e == libc::ESRCH {
        return Next::Fail(CollectError::NoSuchProcess(if f.pid > 0 {
            f.pid
        } else {
            pid_for_errors
        }));
    }
    if e == libc::EACCES || e == libc::EPERM {
        return Next::Fail(CollectError::Permission {
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
        return Next::Fail(CollectError::Io {
            context: format!("opening {cpus} events (one per thread and CPU)"),
            source: io::Error::from_raw_os_error(e),
        });
    }
    let unsupported = matches!(
        e,
        libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP | libc::EINVAL
    );
    if kind == EventKind::Cycles && unsupported && a.more_kinds {
        let why = match e {
            libc::ENOENT | libc::ENODEV => "no PMU, typical of VMs",
            libc::EOPNOTSUPP => "the PMU cannot sample (no overflow interrupt)",
            _ => "the PMU rejected the sampling settings",
        };
        return Next::OtherKind(format!(
            "hardware cycles refused by the kernel ({}): {why}; ",
            errno_name(e)
        ));
    }
    if unsupported {
        return Next::Fail(CollectError::EventUnsupported {
            event: kind.name(include_kernel),
            detail: format!("{} ({})", errno_name(e), io::Error::from_raw_os_error(e)),
        });
    }
    Next::Fail(CollectError::Io {
        context: format!(
            "perf_event_open of {} on cpu {}",
            kind.name(include_kernel),
            f.cpu
        ),
        source: io::Error::from_raw_os_error(e),
    })
}

/// Opens one extra event on every (task, CPU) pair of the sampling event, each writing
/// into its CPU's ring. Returns the fds and their ids, or why the event cannot be recorded.
/// With `every_process`, once per CPU for every process (pid -1) instead.
pub(crate) fn open_extra(
    a: &mut sys::bindings::perf_event_attr,
    events: &Events,
    cpus: &[i32],
    every_process: bool,
) -> Result<(Vec<OwnedFd>, Vec<u64>), String> {
    let mut fds = Vec::new();
    let mut ids = Vec::new();
    let per_cpu: Vec<(i32, usize)> = (0..cpus.len()).map(|ci| (-1, ci)).collect();
    let targets = if every_process {
        &per_cpu
    } else {
        &events.targets
    };
    for &(pid, ci) in targets {
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
