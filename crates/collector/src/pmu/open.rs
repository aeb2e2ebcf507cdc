//! Opening the PMU groups: settling on the settings the kernel accepts on one (task, CPU)
//! pair, then opening every group on every pair of the tracking event, into its rings.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use kairos_perf_data::write::PerfDataWriter;
use perf_event_open_sys as sys;
use sys::bindings as b;

use super::attr::{build, file_name, precise_of, Role, Try};
use super::{
    errno_name, max_sample_rate, refusal_reason, wants_phys, PmuError, PmuEvent, PmuGroup,
    PmuOutcome, PmuSampling,
};
use crate::{CollectError, CollectOptions, Events, Target};

/// perf_event_open with a group fd, behind a trait so the fallback search can be tested
/// with scripted kernel answers.
pub(crate) trait Opener {
    fn open(
        &mut self,
        attr: &mut b::perf_event_attr,
        pid: i32,
        cpu: i32,
        group_fd: RawFd,
    ) -> Result<OwnedFd, i32>;
}

struct Kernel;

impl Opener for Kernel {
    fn open(
        &mut self,
        attr: &mut b::perf_event_attr,
        pid: i32,
        cpu: i32,
        group_fd: RawFd,
    ) -> Result<OwnedFd, i32> {
        // SAFETY: attr is a valid, initialised perf_event_attr; group_fd is -1 or a perf fd
        // we own. CLOEXEC: a program launched later must not inherit the event.
        let fd =
            unsafe { sys::perf_event_open(attr, pid, cpu, group_fd, b::PERF_FLAG_FD_CLOEXEC as _) };
        if fd < 0 {
            return Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL));
        }
        // SAFETY: fd was just returned by the kernel and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// Answers that a lower precise_ip, no physical address or no kernel may turn into success.
fn retryable(errno: i32) -> bool {
    matches!(
        errno,
        libc::EINVAL | libc::EOPNOTSUPP | libc::EACCES | libc::EPERM
    )
}

/// A group's accepted settings and attrs (leader first).
pub(crate) struct Settled<'a> {
    pub t: Try,
    pub events: Vec<&'a PmuEvent>,
    pub attrs: Vec<b::perf_event_attr>,
    pub notes: Vec<Vec<String>>,
}

/// Opens the group (leader first, members with its fd) on one pair; on failure, which
/// event failed and how.
fn open_group(
    attrs: &mut [b::perf_event_attr],
    pid: i32,
    cpu: i32,
    opener: &mut dyn Opener,
) -> Result<Vec<OwnedFd>, (usize, i32)> {
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(attrs.len());
    for (i, a) in attrs.iter_mut().enumerate() {
        let group_fd = fds.first().map_or(-1, |f| f.as_raw_fd());
        fds.push(opener.open(a, pid, cpu, group_fd).map_err(|e| (i, e))?);
    }
    Ok(fds)
}

/// Turns a kernel refusal of `ev` into the collector's error.
fn refused(ev: &PmuEvent, errno: i32, precise: u8, pid: i32, tried: &str) -> CollectError {
    match errno {
        libc::ESRCH => CollectError::NoSuchProcess(pid),
        libc::EMFILE | libc::ENFILE => CollectError::Io {
            context: format!("opening {} (one per thread and CPU)", ev.name),
            source: io::Error::from_raw_os_error(errno),
        },
        _ => CollectError::Pmu(PmuError::Refused {
            event: ev.name.clone(),
            errno,
            why: format!("{}{tried}", refusal_reason(ev, errno, precise)),
        }),
    }
}

/// Tries the settings best first (kernel, then physical addresses, then precise_ip from
/// the asked value down) on one (pid, cpu) pair and returns the first the kernel accepts.
/// Physical addresses are kept over precision: an old kernel refusing PHYS_ADDR must not
/// cost the precise level, and the precise loop runs again without it.
pub(crate) fn settle<'a>(
    g: &'a PmuGroup,
    kernel_options: &[bool],
    role: Role,
    max_freq: Option<u64>,
    (pid, cpu): (i32, i32),
    opener: &mut dyn Opener,
) -> Result<Settled<'a>, CollectError> {
    let role = Role {
        read_group: !g.members.is_empty(),
        ..role
    };
    let mut s = Search::new(g, kernel_options);
    for t in s.tries() {
        let mut attrs = Vec::with_capacity(s.events.len());
        for (i, ev) in s.events.iter().enumerate() {
            let role = Role {
                member: i > 0,
                ..role
            };
            attrs.push(build(ev, &t, role, max_freq).map_err(CollectError::Pmu)?);
        }
        match open_group(&mut attrs, pid, cpu, opener) {
            // Closed here: every pair, this one included, is opened by open_on_targets.
            Ok(_fds) => {
                let notes = s
                    .events
                    .iter()
                    .map(|ev| notes_for(ev, &t, kernel_options, max_freq, &s.attempts))
                    .collect();
                return Ok(Settled {
                    t,
                    events: s.events,
                    attrs,
                    notes,
                });
            }
            Err((i, errno)) if retryable(errno) => s.attempts.push((t, i, errno)),
            Err((i, errno)) => {
                let ev = s.events[i];
                return Err(refused(ev, errno, precise_of(ev, &t), pid, ""));
            }
        }
    }
    Err(s.all_refused(g, pid))
}

/// The settings [`settle`] falls back over for one group, and the refusals met so far.
struct Search<'a, 'k> {
    events: Vec<&'a PmuEvent>,
    kernel_options: &'k [bool],
    phys_options: &'static [bool],
    /// The most any event's precise_ip can be lowered.
    max_drop: u8,
    /// Each retryable refusal: the settings, the event refused, the errno.
    attempts: Vec<(Try, usize, i32)>,
}

impl<'a, 'k> Search<'a, 'k> {
    fn new(g: &'a PmuGroup, kernel_options: &'k [bool]) -> Self {
        let events = g.events();
        let max_drop = events
            .iter()
            .map(|e| e.precise_ip.saturating_sub(e.precise_min))
            .max()
            .unwrap_or(0);
        let phys_options: &[bool] = if events.iter().any(|e| wants_phys(e.sample_type)) {
            &[true, false]
        } else {
            &[false]
        };
        Search {
            events,
            kernel_options,
            phys_options,
            max_drop,
            attempts: Vec::new(),
        }
    }

    /// Every combination of the settings, best first.
    fn tries(&self) -> Vec<Try> {
        let mut tries = Vec::new();
        for &include_kernel in self.kernel_options {
            for &phys_addr in self.phys_options {
                for precise_drop in 0..=self.max_drop {
                    tries.push(Try {
                        precise_drop,
                        phys_addr,
                        include_kernel,
                    });
                }
            }
        }
        tries
    }

    /// The error when the kernel refused every combination, naming what was tried.
    fn all_refused(&self, g: &PmuGroup, pid: i32) -> CollectError {
        // A permission error is the answer only when nothing else went wrong: otherwise
        // the event itself is the problem, whatever the privilege.
        let perm = |e: i32| e == libc::EACCES || e == libc::EPERM;
        let pick = self
            .attempts
            .iter()
            .find(|a| !perm(a.2))
            .or(self.attempts.first());
        let Some(&(t, i, errno)) = pick else {
            return CollectError::Pmu(PmuError::BadSpec {
                event: g.event.name.clone(),
                why: "no settings to try".into(),
            });
        };
        let lowest = self
            .events
            .iter()
            .map(|e| e.precise_min.min(e.precise_ip))
            .min()
            .unwrap_or(0);
        let tried = format!(
            " (tried {} settings: precise_ip down to {lowest}{}{})",
            self.attempts.len(),
            if self.phys_options.len() > 1 {
                ", with and without physical addresses"
            } else {
                ""
            },
            if self.kernel_options.len() > 1 {
                ", with and without the kernel"
            } else {
                ""
            }
        );
        let t = Try {
            precise_drop: self.max_drop,
            ..t
        };
        refused(
            self.events[i],
            errno,
            precise_of(self.events[i], &t),
            pid,
            &tried,
        )
    }
}

/// What differs from the request for `ev`, and why.
fn notes_for(
    ev: &PmuEvent,
    t: &Try,
    kernel_options: &[bool],
    max_freq: Option<u64>,
    attempts: &[(Try, usize, i32)],
) -> Vec<String> {
    let mut notes = Vec::new();
    if wants_phys(ev.sample_type) && !t.phys_addr {
        let errno = attempts.iter().find(|a| a.0.phys_addr).map_or(0, |a| a.2);
        notes.push(format!(
            "physical addresses dropped: the kernel refused PERF_SAMPLE_PHYS_ADDR ({}; it needs kernel.perf_event_paranoid 1 or less, root or CAP_PERFMON)",
            errno_name(errno)
        ));
    }
    let p = precise_of(ev, t);
    if p < ev.precise_ip {
        notes.push(format!(
            "precise_ip {p}: the PMU refused {} and above",
            p + 1
        ));
    }
    if !t.include_kernel && !ev.no_exclude {
        let why = if kernel_options.len() > 1 {
            "refused with it"
        } else {
            "not permitted or not asked"
        };
        notes.push(format!(
            "kernel samples excluded ({why}; kernel.perf_event_paranoid is {})",
            crate::attr::paranoid()
        ));
    }
    if let (PmuSampling::Frequency(hz), Some(m)) = (ev.sampling, max_freq) {
        if hz > m {
            notes.push(format!(
                "frequency {hz} Hz capped at kernel.perf_event_max_sample_rate {m}"
            ));
        }
    }
    notes
}

/// Opens a settled group on every (task, CPU) pair of the tracking event, each fd writing
/// into its CPU's ring. Returns the fds and, per attr of the group, the sample ids.
fn open_on_targets(
    s: &mut Settled<'_>,
    events: &Events,
    cpus: &[i32],
    only: Option<&[u32]>,
) -> Result<(Vec<OwnedFd>, Vec<Vec<u64>>), CollectError> {
    let mut all = Vec::new();
    let mut ids = vec![Vec::new(); s.attrs.len()];
    for &(pid, ci) in &events.targets {
        let cpu = cpus.get(ci).copied().unwrap_or(-1);
        if !on_pmu_cpu(cpu, only) {
            continue;
        }
        let fds = match open_group(&mut s.attrs, pid, cpu, &mut Kernel) {
            Ok(fds) => fds,
            // A thread of an attached process that ended meanwhile.
            Err((_, libc::ESRCH)) if pid > 0 => continue,
            Err((i, errno)) => {
                return Err(refused(
                    s.events[i],
                    errno,
                    precise_of(s.events[i], &s.t),
                    pid,
                    "",
                ))
            }
        };
        let ring = events
            .leaders
            .iter()
            .copied()
            .find(|&l| events.targets.get(l).is_some_and(|t| t.1 == ci));
        for (i, fd) in fds.iter().enumerate() {
            if let Some(l) = ring {
                // SAFETY: both are perf fds we own.
                if unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), events.fds[l].as_raw_fd()) }
                    != 0
                {
                    let e = io::Error::last_os_error();
                    return Err(CollectError::Io {
                        context: format!(
                            "redirecting {} to the CPU's ring buffer",
                            s.events[i].name
                        ),
                        source: e,
                    });
                }
            }
            let mut id = 0u64;
            // SAFETY: fd is a perf event fd; id is a valid out pointer.
            if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } != 0 {
                let e = io::Error::last_os_error();
                return Err(CollectError::Io {
                    context: format!("reading the id of {}", s.events[i].name),
                    source: e,
                });
            }
            ids[i].push(id);
        }
        all.extend(fds);
    }
    if all.is_empty() {
        let pid = events.targets.first().map_or(-1, |t| t.0);
        return Err(CollectError::NoSuchProcess(pid));
    }
    Ok((all, ids))
}

/// Whether `cpu` (-1: any) is one the group's PMU drives.
fn on_pmu_cpu(cpu: i32, only: Option<&[u32]>) -> bool {
    cpu < 0 || only.is_none_or(|l| l.contains(&(cpu as u32)))
}

/// Opens every group of `opts.pmu_events` next to the tracking event and declares each
/// event (leaders too) in the file with its own attr and name. Any refusal fails the
/// collection: the caller asked for these events.
pub(crate) fn open_all(
    opts: &CollectOptions,
    events: &Events,
    cpus: &[i32],
    writer: &mut PerfDataWriter,
) -> Result<(Vec<OwnedFd>, Vec<PmuOutcome>), CollectError> {
    let kernel_options: Vec<bool> = match opts.include_kernel {
        Some(k) => vec![k],
        None if events.include_kernel => vec![true, false],
        None => vec![false],
    };
    let role = Role {
        member: false,
        inherit: !matches!(opts.target, Target::SystemWide),
        enable_on_exec: matches!(opts.target, Target::Launch { .. }),
        read_group: false,
    };
    let max_freq = max_sample_rate();
    let pairs: Vec<(i32, i32)> = events
        .targets
        .iter()
        .map(|&(pid, ci)| (pid, cpus.get(ci).copied().unwrap_or(-1)))
        .collect();
    let mut fds = Vec::new();
    let mut outcomes = Vec::new();
    for g in &opts.pmu_events {
        // Settled on the first pair whose task still exists (threads of -p may end).
        let mut settled = Err(CollectError::InvalidOptions(
            "no task or CPU to open the PMU events on".into(),
        ));
        for &pair in pairs.iter().filter(|p| on_pmu_cpu(p.1, g.cpus.as_deref())) {
            settled = settle(g, &kernel_options, role, max_freq, pair, &mut Kernel);
            if !matches!(settled, Err(CollectError::NoSuchProcess(_))) {
                break;
            }
        }
        let opened = settled.and_then(|mut s| {
            open_on_targets(&mut s, events, cpus, g.cpus.as_deref()).map(|r| (s, r))
        });
        let (mut s, (group_fds, ids)) = match opened {
            Ok(r) => r,
            Err(e @ CollectError::Pmu(_)) if g.optional => {
                outcomes.extend(g.events().into_iter().map(|ev| PmuOutcome {
                    name: ev.name.clone(),
                    precise_ip: 0,
                    sample_type: 0,
                    include_kernel: false,
                    notes: Vec::new(),
                    refused: Some(e.to_string()),
                }));
                continue;
            }
            Err(e) => return Err(e),
        };
        for (((ev, a), ids), notes) in s
            .events
            .iter()
            .zip(&s.attrs)
            .zip(ids)
            .zip(std::mem::take(&mut s.notes))
        {
            let name = file_name(&ev.name, a.exclude_kernel() == 1);
            writer.add_attr(crate::attr::attr_bytes(a), ids, name.clone());
            outcomes.push(PmuOutcome {
                name,
                precise_ip: a.precise_ip() as u8,
                sample_type: a.sample_type,
                include_kernel: a.exclude_kernel() == 0,
                notes,
                refused: None,
            });
        }
        fds.extend(group_fds);
    }
    Ok((fds, outcomes))
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
