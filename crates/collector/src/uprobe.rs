//! Exact function tracing of unmodified binaries with uprobes (`kairos collect trace -k
//! mode=uprobes`).
//!
//! Each function gets two perf events of the uprobe PMU (type from
//! /sys/bus/event_source/devices/uprobe/type): an entry probe (config1 = path, config2 =
//! file offset) and a return probe (the bit named in .../format/retprobe). sample_period 1,
//! so every hit is a PERF_RECORD_SAMPLE {id, ip, pid, tid, time} in CLOCK_MONOTONIC. The
//! events are opened per CPU for every process (an inherited per-task uprobe event makes
//! the target's thread creation fail, see [`attr`]), before the launched child execs, and
//! only the hits of the child and the processes it starts are kept; all events of one CPU
//! write into that CPU's one ring (SET_OUTPUT).
//! Pairing the hits into calls is kairos-analysis-trace's job.
//!
//! Limits the kernel imposes: a uretprobe replaces the return address, so at most 64
//! nested return probes per task are tracked (deeper returns are missed), and probes on
//! some instructions are refused; refused functions are listed, not fatal.

use std::collections::HashMap;
use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use perf_event_open_sys as sys;

use crate::launch;
use crate::ring::Ring;
use crate::{online_cpus, CollectError, TargetExit};

const PMU_DIR: &str = "/sys/bus/event_source/devices/uprobe";
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;

/// One function to probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    pub name: String,
    pub path: PathBuf,
    /// Offset of the function's first instruction in the file.
    pub file_offset: u64,
}

#[derive(Debug, Clone)]
pub struct UprobeOptions {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub functions: Vec<ProbeTarget>,
    /// Data pages per CPU ring (rounded up to a power of two).
    pub ring_pages: usize,
}

/// One probe hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UprobeHit {
    /// Index into [`UprobeOptions::functions`].
    pub function: u32,
    pub is_return: bool,
    pub pid: u32,
    pub tid: u32,
    pub time_ns: u64,
    /// Entry: the function's address; return: the address returned to.
    pub ip: u64,
}

#[derive(Debug, Clone, Default)]
pub struct UprobeRecording {
    /// In the order read: per ring in time order, rings one after another (sort by time).
    pub hits: Vec<UprobeHit>,
    /// Functions the kernel would not probe, with its reason.
    pub refused: Vec<(String, String)>,
    /// Functions probed (entry and return).
    pub probed: usize,
    /// Hits the kernel dropped because a ring was full.
    pub lost: u64,
    pub target_exit: Option<TargetExit>,
    /// From exec to exit of the target.
    pub wall_seconds: f64,
    /// Whether kairos was interrupted (SIGINT/SIGTERM) and stopped the target.
    pub interrupted: bool,
    /// The signal that interrupted kairos, when `interrupted`.
    pub signal: Option<i32>,
}

/// The uprobe PMU's type number and the config bit of return probes.
pub fn pmu() -> Result<(u32, u32), String> {
    let read =
        |f: &str| std::fs::read_to_string(Path::new(PMU_DIR).join(f)).map(|s| s.trim().to_string());
    let ty = read("type")
        .map_err(|e| format!("{PMU_DIR}/type is not readable ({e}): this kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)"))?
        .parse::<u32>()
        .map_err(|_| format!("{PMU_DIR}/type is not a number"))?;
    // "config:0" -> bit 0.
    let ret = read("format/retprobe")
        .map_err(|e| format!("{PMU_DIR}/format/retprobe is not readable ({e})"))?;
    let bit = ret
        .strip_prefix("config:")
        .and_then(|b| b.parse::<u32>().ok())
        .filter(|&b| b < 64)
        .ok_or_else(|| format!("unexpected retprobe format '{ret}'"))?;
    Ok((ty, bit))
}

/// The uprobe PMU's bit field of the reference counter (USDT semaphore) offset in
/// `config` ("config:32-63" → 32), None on kernels without it.
pub fn ref_ctr_shift() -> Option<u32> {
    let f = std::fs::read_to_string(Path::new(PMU_DIR).join("format/ref_ctr_offset")).ok()?;
    let range = f.trim().strip_prefix("config:")?;
    range
        .split('-')
        .next()?
        .parse::<u32>()
        .ok()
        .filter(|&b| b < 64)
}

/// An extra event of the sampling collector that fires at entry to (or, `is_return`, at
/// the return of) the instruction at `offset` of `path`, with the user call chain; a USDT
/// probe's semaphore at file offset `ref_ctr` is counted up by the kernel while it is
/// attached.
pub fn extra_event(
    name: String,
    path: &Path,
    offset: u64,
    is_return: bool,
    ref_ctr: Option<u64>,
) -> Result<crate::extra::ExtraEvent, String> {
    let (ty, bit) = pmu()?;
    let mut config = if is_return { 1u64 << bit } else { 0 };
    if let Some(r) = ref_ctr.filter(|&r| r > 0) {
        let shift = ref_ctr_shift().ok_or_else(|| {
            format!("this kernel's uprobe PMU has no ref_ctr_offset field, so the USDT semaphore of {name} cannot be set")
        })?;
        config |= r << shift;
    }
    let path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{}: path contains a NUL byte", path.display()))?;
    Ok(crate::extra::ExtraEvent {
        name,
        type_: ty,
        config,
        addr: false,
        raw: false,
        user_callchain: false,
        probe: Some(crate::extra::ProbeSite { path, offset }),
        every_process: true,
    })
}

fn attr(
    ty: u32,
    retprobe: Option<u32>,
    path: &CString,
    offset: u64,
) -> sys::bindings::perf_event_attr {
    // SAFETY: plain old data; all-zero is the documented default.
    let mut a: sys::bindings::perf_event_attr = unsafe { std::mem::zeroed() };
    a.size = std::mem::size_of::<sys::bindings::perf_event_attr>() as u32;
    a.type_ = ty;
    a.config = retprobe.map_or(0, |bit| 1u64 << bit);
    // The kernel copies the path during perf_event_open; `path` outlives the call.
    a.__bindgen_anon_3.config1 = path.as_ptr() as u64;
    a.__bindgen_anon_4.config2 = offset;
    a.__bindgen_anon_1.sample_period = 1;
    a.sample_type = (sys::bindings::PERF_SAMPLE_IDENTIFIER
        | sys::bindings::PERF_SAMPLE_IP
        | sys::bindings::PERF_SAMPLE_TID
        | sys::bindings::PERF_SAMPLE_TIME) as u64;
    // Per CPU for every process, counting at once, never inherited: at clone the kernel
    // makes an inherited copy by reading the path at `config1` again, in the target's own
    // memory, where it is not, and the clone fails (the program could not start a
    // thread). Hits of other processes are left out by [`Targets`].
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    a
}

/// The launched program and the processes it starts: a hit of any other process that
/// runs the same file is not the target's.
struct Targets {
    known: HashMap<u32, bool>,
}

impl Targets {
    fn new(root: i32) -> Targets {
        let mut known = HashMap::new();
        known.insert(root as u32, true);
        Targets { known }
    }

    /// Whether `pid` is the program or descends from it, by its parents in /proc (read
    /// once per process, while it runs: hits are read every few milliseconds).
    fn contains(&mut self, pid: u32) -> bool {
        if let Some(&t) = self.known.get(&pid) {
            return t;
        }
        let mut chain = vec![pid];
        let mut at = pid;
        let found = loop {
            let Some(parent) = parent_of(at) else {
                break false;
            };
            if let Some(&t) = self.known.get(&parent) {
                break t;
            }
            if parent <= 1 || chain.len() > 64 {
                break false;
            }
            chain.push(parent);
            at = parent;
        };
        for p in chain {
            self.known.insert(p, found);
        }
        found
    }
}

/// The parent of process `pid` (field 4 of /proc/PID/stat, after the command's parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn open(a: &mut sys::bindings::perf_event_attr, pid: i32, cpu: i32) -> Result<OwnedFd, i32> {
    // SAFETY: `a` is a valid attr; CLOEXEC keeps the fds out of the traced program.
    let fd =
        unsafe { sys::perf_event_open(a, pid, cpu, -1, sys::bindings::PERF_FLAG_FD_CLOEXEC as _) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL));
    }
    // SAFETY: a new fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Launches the program with every function probed and records until it exits.
pub fn record(opts: &UprobeOptions) -> Result<UprobeRecording, CollectError> {
    let (ty, retbit) = pmu().map_err(|detail| CollectError::EventUnsupported {
        event: "uprobe".into(),
        detail,
    })?;
    crate::open::raise_fd_limit();
    let cpus = online_cpus();
    let mut child = launch::spawn_waiting(&opts.program, &opts.args)?;
    let mut out = UprobeRecording::default();
    let mut probes = Probes {
        opts,
        ty,
        retbit,
        cpus: &cpus,
        leaders: cpus.iter().map(|_| None).collect(),
        fds: Vec::new(),
        ids: HashMap::new(),
    };
    for (fi, f) in opts.functions.iter().enumerate() {
        match probes.add_function(fi, f)? {
            // An entry probe without its return probe would leave every call open: the
            // function is left out whole. Its already opened fds stay (harmless: their
            // ids are dropped here).
            Some(why) => {
                probes.ids.retain(|_, (f, _)| *f != fi as u32);
                out.refused.push((f.name.clone(), why));
            }
            None => out.probed += 1,
        }
    }
    let Probes {
        leaders, fds, ids, ..
    } = probes;
    let (lead_fds, mut rings): (Vec<OwnedFd>, Vec<Ring>) = leaders.into_iter().flatten().unzip();
    let (stops, hooks) = register_stops();
    let start = Instant::now();
    child.release()?;
    let mut targets = Targets::new(child.pid);
    let mut drain = |rings: &mut Vec<Ring>, out: &mut UprobeRecording| {
        for r in rings.iter_mut() {
            r.drain(&mut |rec| decode(rec, &ids, &mut targets, out));
        }
    };
    loop {
        if let Some(e) = child.try_wait() {
            out.target_exit = Some(e);
            break;
        }
        if let Some((sig, _)) = stops.iter().find(|(_, f)| f.load(Ordering::Relaxed)) {
            out.interrupted = true;
            out.signal = Some(*sig);
            // Stop recording at once (nothing the program does while it ends belongs in
            // the trace), then end it: SIGTERM, SIGKILL after 2 s.
            for fd in lead_fds.iter().chain(&fds) {
                // SAFETY: disabling our own perf fd.
                unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
            }
            out.target_exit = child.terminate(Duration::from_secs(2), &mut || {});
            break;
        }
        drain(&mut rings, &mut out);
        std::thread::sleep(Duration::from_millis(2));
    }
    out.wall_seconds = start.elapsed().as_secs_f64();
    drain(&mut rings, &mut out);
    for h in hooks {
        signal_hook::low_level::unregister(h);
    }
    // Rings before their fds.
    drop(rings);
    // Closing takes long (the kernel unregisters one probe at a time, ~80 ms each here).
    drop((lead_fds, fds));
    Ok(out)
}

/// SIGINT and SIGTERM, each with the flag its arrival sets, and the handlers' ids.
fn register_stops() -> (Vec<(i32, Arc<AtomicBool>)>, Vec<signal_hook::SigId>) {
    let mut stops = Vec::new();
    let mut hooks = Vec::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let stop = Arc::new(AtomicBool::new(false));
        if let Ok(h) = signal_hook::flag::register(sig, stop.clone()) {
            hooks.push(h);
            stops.push((sig, stop));
        }
    }
    (stops, hooks)
}

/// The probe events opened so far, for the launched child.
struct Probes<'a> {
    opts: &'a UprobeOptions,
    /// The uprobe PMU's type and the config bit of return probes.
    ty: u32,
    retbit: u32,
    cpus: &'a [i32],
    /// Per CPU: the first fd owns the ring, the others are redirected into it. The ring is
    /// mapped at once: recent kernels (6.x) refuse SET_OUTPUT into an unmapped event.
    leaders: Vec<Option<(OwnedFd, Ring)>>,
    fds: Vec<OwnedFd>,
    /// Event id to (function index, is a return probe).
    ids: HashMap<u64, (u32, bool)>,
}

impl Probes<'_> {
    /// Opens the entry and then the return probe of one function on every CPU; `Some`
    /// says why the kernel refused one.
    fn add_function(&mut self, fi: usize, f: &ProbeTarget) -> Result<Option<String>, CollectError> {
        let Ok(path) = CString::new(f.path.as_os_str().as_bytes()) else {
            return Ok(Some("path contains a NUL byte".into()));
        };
        for ret in [false, true] {
            let mut a = attr(self.ty, ret.then_some(self.retbit), &path, f.file_offset);
            for ci in 0..self.cpus.len() {
                if let Some(why) = self.open_on_cpu(&mut a, fi, f, ret, ci)? {
                    return Ok(Some(why));
                }
            }
        }
        Ok(None)
    }

    /// Opens one probe on one CPU and attaches it to that CPU's ring; `Some` says why the
    /// kernel refused it.
    fn open_on_cpu(
        &mut self,
        a: &mut sys::bindings::perf_event_attr,
        fi: usize,
        f: &ProbeTarget,
        ret: bool,
        ci: usize,
    ) -> Result<Option<String>, CollectError> {
        let fd = match open(a, -1, self.cpus[ci]) {
            Ok(fd) => fd,
            Err(e) if e == libc::EACCES || e == libc::EPERM => {
                return Err(CollectError::Permission {
                    paranoid: crate::attr::paranoid(),
                    detail: format!(
                        "uprobe on {}: {}",
                        f.name,
                        std::io::Error::from_raw_os_error(e)
                    ),
                })
            }
            Err(e) if e == libc::EMFILE || e == libc::ENFILE => {
                return Err(CollectError::Io {
                    context: format!(
                        "opening uprobe events ({} functions x 2 x {} CPUs)",
                        self.opts.functions.len(),
                        self.cpus.len()
                    ),
                    source: std::io::Error::from_raw_os_error(e),
                })
            }
            Err(e) => return Ok(Some(std::io::Error::from_raw_os_error(e).to_string())),
        };
        let mut id = 0u64;
        // SAFETY: ID ioctl writes one u64.
        if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } != 0 {
            return Ok(Some(format!(
                "no event id ({})",
                std::io::Error::last_os_error()
            )));
        }
        self.ids.insert(id, (fi as u32, ret));
        self.attach(ci, fd)?;
        Ok(None)
    }

    /// The CPU's first probe maps the ring; later ones write into it.
    fn attach(&mut self, ci: usize, fd: OwnedFd) -> Result<(), CollectError> {
        match &self.leaders[ci] {
            None => {
                let ring = Ring::map(fd.as_raw_fd(), self.opts.ring_pages).map_err(|e| {
                    CollectError::Io {
                        context: "mapping the uprobe ring buffer".into(),
                        source: e,
                    }
                })?;
                self.leaders[ci] = Some((fd, ring));
            }
            Some((lead, _)) => {
                // SAFETY: both fds are perf events of the same CPU.
                if unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), lead.as_raw_fd()) } != 0 {
                    return Err(CollectError::Io {
                        context: "redirecting uprobe events into the CPU's ring".into(),
                        source: std::io::Error::last_os_error(),
                    });
                }
                self.fds.push(fd);
            }
        }
        Ok(())
    }
}

/// One record: a sample {id, ip, pid, tid, time} (the order perf_event.h lays out these
/// fields) or a LOST record; anything else is ignored.
fn decode(
    rec: &[u8],
    ids: &HashMap<u64, (u32, bool)>,
    targets: &mut Targets,
    out: &mut UprobeRecording,
) {
    let u64_at = |o: usize| {
        rec.get(o..o + 8)
            .map(|b| u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    };
    let Some(hdr) = rec.get(0..4) else { return };
    match u32::from_ne_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) {
        PERF_RECORD_SAMPLE => {
            let (Some(id), Some(ip), Some(pt), Some(time)) =
                (u64_at(8), u64_at(16), u64_at(24), u64_at(32))
            else {
                return;
            };
            if !targets.contains(pt as u32) {
                return;
            }
            if let Some(&(function, is_return)) = ids.get(&id) {
                out.hits.push(UprobeHit {
                    function,
                    is_return,
                    pid: pt as u32,
                    tid: (pt >> 32) as u32,
                    time_ns: time,
                    ip,
                });
            }
        }
        PERF_RECORD_LOST => out.lost += u64_at(16).unwrap_or(0),
        _ => {}
    }
}
