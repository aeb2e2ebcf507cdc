//! Keeps the watched process alive when one of its watchpoint traps reaches it as a
//! SIGTRAP: a helper process of ours is its tracer while a [`super::Watcher`] is open,
//! and drops those signals.
//!
//! Why this is needed. x86's `exc_debug_user` sends SIGTRAP for every #DB that no perf
//! event claims; `hw_breakpoint_handler` claims a trap by the slot bits of DR6. Under a
//! hypervisor the trap of a watchpoint can arrive with DR6 empty: the kernel then takes
//! it for an `int1` (icebp) and sends SIGTRAP with si_code TRAP_BRKPT, whose default
//! action kills the process. Measured on a KVM guest (Intel family 6 model 207, guest
//! kernel 6.18), with two W slots armed once and nothing changed afterwards (no DISABLE,
//! MODIFY or close): about one trap in 30,000-90,000, in bursts, each one exactly a hit
//! missing from the ring (a writer's iterations minus its hits = its SIGTRAPs), all at
//! one phase of a 10 ms grid of the guest's clock that no guest interrupt explains (so,
//! we infer, an event of the host's); the same with `perf stat -e mem:ADDR:w` on a
//! one-thread loop, without any of our code.
//! Nothing we do to the events can prevent it, and another process's signal disposition
//! cannot be changed from outside; its tracer, though, sees every signal before it is
//! delivered and may drop it. Bare metal sets DR6 on every data breakpoint, but the guard
//! is used everywhere: whether a machine or kernel loses the bits cannot be told ahead.
//!
//! How. A helper process, forked from ours, PTRACE_SEIZEs every thread of the target
//! (PTRACE_O_TRACECLONE attaches the threads created later) without stopping it. It
//! resumes every stop unchanged (signals passed on, group-stops kept with
//! PTRACE_LISTEN), except the SIGTRAPs of a #DB (si_code TRAP_BRKPT: DR6 empty;
//! TRAP_HWBKPT: a slot bit with no perf event behind it, which with us as the tracer
//! cannot be a debugger's), which it counts and drops. A separate process, not a thread:
//! a tracer thread in our process would make our own waitpid on a launched target (our
//! child) return its ptrace-stops. When the [`Guard`] is dropped, after the watcher has
//! closed its events (so no trap can come any more), the helper interrupts each thread,
//! lets a SIGTRAP still queued reach it and drops it, and detaches; it does the same when
//! our process dies (its control pipe closes).
//!
//! What it costs the target: while watched it cannot be traced by a debugger or strace
//! (one already tracing it makes [`super::Watcher::open`] fail with
//! [`WatchError::Traced`]), each signal it receives passes through the helper (a few
//! microseconds), and an `int1` instruction of its own does not raise SIGTRAP. Attaching
//! needs the ptrace access that perf_event_open on another process needs, plus what
//! kernel.yama.ptrace_scope adds; a refusal is [`WatchError::PtraceRestricted`] (Yama)
//! or [`WatchError::NotOurProcess`].

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::WatchError;

/// Threads of the target the helper keeps track of (to interrupt and detach them); one
/// created past it is still traced and resumed, and detached by the kernel when the
/// helper exits.
const MAX_THREADS: usize = 1 << 16;
/// How long attaching, or detaching, may take before we give up on the helper.
const HELPER_TIMEOUT: Duration = Duration::from_secs(10);

// The page starts zeroed: 0 is "starting".
const READY: u32 = 1;
/// `value` is the errno of PTRACE_SEIZE, `tid` the thread.
const FAILED: u32 = 2;
/// `value` is the pid of the tracer already there.
const TRACED: u32 = 3;

/// The page the helper and we share.
#[repr(C)]
struct Shared {
    /// SIGTRAPs dropped so far.
    absorbed: AtomicU64,
    state: AtomicU32,
    value: AtomicI32,
    tid: AtomicI32,
}

/// A MAP_SHARED page, so the forked helper's counters are ours to read.
struct SharedPage(*mut Shared);

// SAFETY: the page holds atomics only, and lives as long as this value.
unsafe impl Send for SharedPage {}

impl SharedPage {
    fn new() -> Result<SharedPage, WatchError> {
        // SAFETY: a fresh anonymous mapping; zeroed memory is a valid `Shared`.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<Shared>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io_error("mapping the guard's shared page"));
        }
        Ok(SharedPage(p.cast()))
    }

    fn get(&self) -> &Shared {
        // SAFETY: mapped in `new`, unmapped only in drop.
        unsafe { &*self.0 }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer referenced.
        unsafe { libc::munmap(self.0.cast(), std::mem::size_of::<Shared>()) };
    }
}

/// The helper tracing one process; dropping it detaches (drop it after the events).
pub(super) struct Guard {
    helper: libc::pid_t,
    /// Closing it tells the helper to detach.
    ctl: Option<OwnedFd>,
    shared: SharedPage,
    ended: bool,
}

impl Guard {
    /// Forks the helper and waits until it traces every thread of `pid`.
    pub fn start(pid: i32) -> Result<Guard, WatchError> {
        // Everything the helper needs is made before the fork: after it, in a copy of a
        // multi-threaded process, it allocates nothing and takes no lock.
        let task_dir = CString::new(format!("/proc/{pid}/task")).map_err(|_| WatchError::Io {
            context: "the guard's /proc path".into(),
            source: std::io::Error::other("a NUL in a path"),
        })?;
        let mut tids = vec![0i32; MAX_THREADS];
        let shared = SharedPage::new()?;
        let (ctl_rd, ctl_wr) = pipe()?;
        let (rep_rd, rep_wr) = pipe()?;
        // SAFETY: the child runs `helper` only, which never returns (see above).
        let child = unsafe { libc::fork() };
        if child < 0 {
            return Err(io_error("forking the guard process"));
        }
        if child == 0 {
            // SAFETY: in the child; the arguments were made for it before the fork.
            unsafe {
                helper(
                    pid,
                    &task_dir,
                    ctl_rd.as_raw_fd(),
                    rep_wr.as_raw_fd(),
                    shared.get(),
                    &mut tids,
                )
            }
        }
        drop((ctl_rd, rep_wr));
        let mut guard = Guard {
            helper: child,
            ctl: Some(ctl_wr),
            shared,
            ended: false,
        };
        // One byte (or the end of the pipe) once the helper is tracing or has given up.
        let mut pfd = libc::pollfd {
            fd: rep_rd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let deadline = Instant::now() + HELPER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis() as i32) };
            if r > 0 || left.is_zero() || (r < 0 && errno() != libc::EINTR) {
                break;
            }
        }
        let sh = guard.shared.get();
        let (value, tid) = (
            sh.value.load(Ordering::Acquire),
            sh.tid.load(Ordering::Acquire),
        );
        match sh.state.load(Ordering::Acquire) {
            READY => Ok(guard),
            state => {
                guard.end();
                Err(match state {
                    TRACED => WatchError::Traced { pid, tracer: value },
                    FAILED => refusal(pid, tid, value, yama_scope(), is_root()),
                    _ => WatchError::Io {
                        context: format!("starting the process that protects process {pid}"),
                        source: std::io::Error::other("it did not answer"),
                    },
                })
            }
        }
    }

    /// SIGTRAPs dropped so far: each is a hit the hypervisor (or kernel) lost.
    pub fn absorbed(&self) -> u64 {
        self.shared.get().absorbed.load(Ordering::Acquire)
    }

    /// Detaches (the helper lets every queued SIGTRAP come and drops it first) and reaps
    /// the helper; kills it if it takes longer than [`HELPER_TIMEOUT`].
    fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.ctl = None;
        let deadline = Instant::now() + HELPER_TIMEOUT;
        loop {
            let mut status = 0;
            // SAFETY: our own child.
            let r = unsafe { libc::waitpid(self.helper, &mut status, libc::WNOHANG) };
            if r == self.helper || (r < 0 && errno() != libc::EINTR) {
                return;
            }
            if Instant::now() >= deadline {
                // The kernel detaches the tracees of a tracer that dies.
                // SAFETY: our own child, not reaped yet.
                unsafe {
                    libc::kill(self.helper, libc::SIGKILL);
                    libc::waitpid(self.helper, &mut status, 0);
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.end();
    }
}

/// The error for PTRACE_SEIZE failing with `errno` on thread `tid` of `pid`. perf_event_open
/// already passed the same ownership checks, so EPERM is most often Yama's (`scope`, read
/// from /proc/sys/kernel/yama/ptrace_scope): from 1 on, a process that is not the target's
/// ancestor, as our helper is not, may trace it only with CAP_SYS_PTRACE.
fn refusal(pid: i32, tid: i32, errno: i32, scope: Option<i32>, root: bool) -> WatchError {
    match (errno, scope) {
        (libc::EPERM, Some(scope)) if scope >= 1 && (!root || scope >= 3) => {
            WatchError::PtraceRestricted { pid, scope }
        }
        (libc::EPERM | libc::EACCES, _) => WatchError::NotOurProcess { pid },
        (libc::ESRCH, _) => WatchError::ProcessGone { pid },
        (e, _) => WatchError::Io {
            context: format!(
                "tracing thread {tid} of process {pid} to keep stray watchpoint traps from killing it (PTRACE_SEIZE)"
            ),
            source: std::io::Error::from_raw_os_error(e),
        },
    }
}

fn yama_scope() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

fn io_error(context: &str) -> WatchError {
    WatchError::Io {
        context: context.into(),
        source: std::io::Error::last_os_error(),
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), WatchError> {
    let mut fds = [0; 2];
    // SAFETY: valid out array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io_error("making the guard's pipe"));
    }
    // SAFETY: two fresh descriptors, owned from here on.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

// ---- The helper process. Raw system calls only: it is a fork of a multi-threaded
// ---- process, where a lock held by another thread at the fork is held forever.

const OPTIONS: libc::c_int = libc::PTRACE_O_TRACECLONE | libc::PTRACE_O_TRACEEXEC;

/// The threads traced, in a buffer allocated before the fork.
struct Tracees<'a> {
    pid: i32,
    tids: &'a mut [i32],
    n: usize,
    shared: &'a Shared,
    /// Detaching: every stop ends in PTRACE_DETACH.
    leaving: bool,
}

impl Tracees<'_> {
    fn has(&self, tid: i32) -> bool {
        self.tids.iter().take(self.n).any(|&t| t == tid)
    }
    fn add(&mut self, tid: i32) {
        if !self.has(tid) {
            if let Some(slot) = self.tids.get_mut(self.n) {
                *slot = tid;
                self.n += 1;
            }
        }
    }
    fn remove(&mut self, tid: i32) {
        if let Some(i) = self.tids.iter().take(self.n).position(|&t| t == tid) {
            self.n -= 1;
            self.tids.swap(i, self.n);
        }
    }

    /// One wait status of a tracee.
    fn on_status(&mut self, tid: i32, status: i32) {
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            self.remove(tid);
            return;
        }
        if !libc::WIFSTOPPED(status) {
            return;
        }
        let sig = libc::WSTOPSIG(status);
        match (status >> 16) & 0xff {
            0 => {
                // Signal-delivery-stop: drop a #DB's SIGTRAP, pass anything else on.
                let pass = if sig == libc::SIGTRAP && stray_trap(tid) {
                    self.shared.absorbed.fetch_add(1, Ordering::AcqRel);
                    0
                } else {
                    sig
                };
                if !self.leaving {
                    ptrace(libc::PTRACE_CONT, tid, 0, pass as usize);
                } else if sigtrap_queued(self.pid, tid) {
                    // (A #DB's SIGTRAP is dequeued before other signals; to be sure.)
                    ptrace(libc::PTRACE_CONT, tid, 0, pass as usize);
                    ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0);
                } else {
                    // Detaching from here delivers `pass`, as continuing would.
                    self.remove(tid);
                    ptrace(libc::PTRACE_DETACH, tid, 0, pass as usize);
                }
            }
            libc::PTRACE_EVENT_STOP
                if matches!(
                    sig,
                    libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
                ) =>
            {
                // Group-stop: stays stopped until SIGCONT, as it would untraced.
                if self.leaving {
                    self.remove(tid);
                    ptrace(libc::PTRACE_DETACH, tid, 0, 0);
                } else {
                    ptrace(libc::PTRACE_LISTEN, tid, 0, 0);
                }
            }
            libc::PTRACE_EVENT_CLONE => {
                let mut new: libc::c_ulong = 0;
                if ptrace(
                    libc::PTRACE_GETEVENTMSG,
                    tid,
                    0,
                    &mut new as *mut _ as usize,
                ) == 0
                {
                    self.add(new as i32);
                    if self.leaving {
                        // It starts with a stop of its own, where it is detached.
                        ptrace(libc::PTRACE_INTERRUPT, new as i32, 0, 0);
                    }
                }
                self.resume(tid);
            }
            libc::PTRACE_EVENT_EXEC => {
                // A thread other than the leader that execs takes the leader's id.
                let mut former: libc::c_ulong = 0;
                if ptrace(
                    libc::PTRACE_GETEVENTMSG,
                    tid,
                    0,
                    &mut former as *mut _ as usize,
                ) == 0
                    && former as i32 != tid
                {
                    self.remove(former as i32);
                }
                self.add(tid);
                self.resume(tid);
            }
            // New threads' first stop, PTRACE_INTERRUPT's, others.
            _ => self.resume(tid),
        }
    }

    /// After a stop that is not a signal's: go on, or (leaving) detach, unless a SIGTRAP
    /// is queued for the thread, which must first come through a signal-delivery-stop
    /// where it is dropped (after the detach it would kill the process).
    fn resume(&mut self, tid: i32) {
        if !self.leaving {
            ptrace(libc::PTRACE_CONT, tid, 0, 0);
        } else if sigtrap_queued(self.pid, tid) {
            ptrace(libc::PTRACE_CONT, tid, 0, 0);
            ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0);
        } else {
            self.remove(tid);
            ptrace(libc::PTRACE_DETACH, tid, 0, 0);
        }
    }

    /// Waits for and handles every status there is; blocking until one comes if `block`.
    /// False once no tracee is left.
    fn reap(&mut self, block: bool) -> bool {
        loop {
            let mut status = 0;
            let flags = libc::__WALL | if block { 0 } else { libc::WNOHANG };
            // SAFETY: valid out pointer.
            let r = unsafe { libc::waitpid(-1, &mut status, flags) };
            if r > 0 {
                self.on_status(r, status);
                if block {
                    return self.n > 0;
                }
            } else if r == 0 {
                return self.n > 0;
            } else if errno() != libc::EINTR {
                // ECHILD: nothing traced any more.
                self.n = 0;
                return false;
            }
        }
    }
}

fn ptrace(req: libc::c_uint, tid: i32, addr: usize, data: usize) -> libc::c_long {
    // SAFETY: requests whose data is a number or a pointer to a live local.
    unsafe { libc::ptrace(req, tid, addr, data) }
}

/// Whether the SIGTRAP `tid` is stopped with comes from a #DB no perf event claimed.
fn stray_trap(tid: i32) -> bool {
    // SAFETY: siginfo_t is plain data; all-zero is valid.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    ptrace(
        libc::PTRACE_GETSIGINFO,
        tid,
        0,
        &mut si as *mut libc::siginfo_t as usize,
    ) == 0
        && si.si_signo == libc::SIGTRAP
        && matches!(si.si_code, libc::TRAP_BRKPT | libc::TRAP_HWBKPT)
}

/// `n` in decimal into `buf` at `at`; returns the end.
fn put_decimal(buf: &mut [u8], at: usize, n: i32) -> usize {
    let mut digits = [0u8; 12];
    let (mut v, mut k) = (n.unsigned_abs(), 0);
    loop {
        digits[k] = b'0' + (v % 10) as u8;
        k += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let mut at = at;
    for &d in digits[..k].iter().rev() {
        if let Some(b) = buf.get_mut(at) {
            *b = d;
        }
        at += 1;
    }
    at
}

fn put(buf: &mut [u8], at: usize, s: &[u8]) -> usize {
    for (i, &c) in s.iter().enumerate() {
        if let Some(b) = buf.get_mut(at + i) {
            *b = c;
        }
    }
    at + s.len()
}

/// /proc/PID/task/TID/status into `buf`; None when the thread is gone.
fn read_status(pid: i32, tid: i32, buf: &mut [u8; 4096]) -> Option<&[u8]> {
    let mut path = [0u8; 64];
    let mut at = put(&mut path, 0, b"/proc/");
    at = put_decimal(&mut path, at, pid);
    at = put(&mut path, at, b"/task/");
    at = put_decimal(&mut path, at, tid);
    put(&mut path, at, b"/status\0");
    // SAFETY: a NUL-terminated path; reads into the caller's buffer.
    let len = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let len = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        len
    };
    buf.get(..usize::try_from(len).ok()?)
}

/// What follows `field` in a status text, blanks skipped.
fn after<'a>(text: &'a [u8], field: &[u8]) -> Option<&'a [u8]> {
    let start = text.windows(field.len()).position(|w| w == field)? + field.len();
    let rest = text.get(start..)?;
    let blanks = rest.iter().take_while(|c| c.is_ascii_whitespace()).count();
    rest.get(blanks..)
}

/// The number after `field` in a status text, in `radix`.
fn number(text: &[u8], field: &[u8], radix: u32) -> Option<u64> {
    let mut v = 0u64;
    for &c in after(text, field)? {
        match (c as char).to_digit(radix) {
            Some(d) => v = v.wrapping_mul(radix as u64).wrapping_add(d as u64),
            None => break,
        }
    }
    Some(v)
}

/// The number after `field` in the thread's status; None when the thread is gone.
fn status_field(pid: i32, tid: i32, field: &[u8], radix: u32) -> Option<u64> {
    let mut buf = [0u8; 4096];
    number(read_status(pid, tid, &mut buf)?, field, radix)
}

enum Tracer {
    /// Exited, or exiting (a zombie).
    Gone,
    Nobody,
    Us,
    Other(i32),
}

fn tracer_of(pid: i32, tid: i32) -> Tracer {
    let mut buf = [0u8; 4096];
    let Some(text) = read_status(pid, tid, &mut buf) else {
        return Tracer::Gone;
    };
    if matches!(
        after(text, b"State:").and_then(|s| s.first()),
        Some(b'Z' | b'X')
    ) {
        return Tracer::Gone;
    }
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    match number(text, b"TracerPid:", 10).map(|v| v as i32) {
        None | Some(0) => Tracer::Nobody,
        Some(t) if t == me => Tracer::Us,
        Some(t) => Tracer::Other(t),
    }
}

/// Whether a SIGTRAP is queued for the thread itself (a #DB's is sent to the thread).
fn sigtrap_queued(pid: i32, tid: i32) -> bool {
    status_field(pid, tid, b"SigPnd:", 16).is_some_and(|m| m & (1 << (libc::SIGTRAP - 1)) != 0)
}

/// Calls `f` with each thread id in /proc/PID/task.
fn each_thread(task_dir: &CString, mut f: impl FnMut(i32)) {
    // SAFETY: a NUL-terminated path; getdents64 fills a local buffer, parsed in bounds.
    unsafe {
        let fd = libc::open(
            task_dir.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 8192];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let end = (n as usize).min(buf.len());
            let mut off = 0usize;
            while off + 19 < end {
                // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                if reclen < 20 {
                    break;
                }
                let mut tid = 0i32;
                let mut digits = 0;
                let name = buf.get(off + 19..(off + reclen).min(end)).unwrap_or(&[]);
                for &c in name {
                    if !c.is_ascii_digit() {
                        break;
                    }
                    tid = tid.wrapping_mul(10).wrapping_add((c - b'0') as i32);
                    digits += 1;
                }
                if digits > 0 {
                    f(tid);
                }
                off += reclen;
            }
        }
        libc::close(fd);
    }
}

/// Closes every descriptor but 0-2 and `keep`: the helper must not hold the watcher's
/// events (or the collection's) open after we close them.
fn close_others(keep: [i32; 2]) {
    let (a, b) = (keep[0].min(keep[1]), keep[0].max(keep[1]));
    let ranges = [(3, a - 1), (a + 1, b - 1), (b + 1, i32::MAX)];
    for (lo, hi) in ranges {
        if lo > hi {
            continue;
        }
        // SAFETY: closing descriptors of this process.
        let r = unsafe { libc::syscall(libc::SYS_close_range, lo as u32, hi as u32, 0u32) };
        if r != 0 {
            // Before Linux 5.9.
            for fd in lo..=hi.min(1 << 16) {
                // SAFETY: as above.
                unsafe { libc::close(fd) };
            }
        }
    }
}

/// The helper's life: attach, guard, detach, exit. Never returns.
///
/// # Safety
/// Only in the child of the fork in [`Guard::start`].
unsafe fn helper(
    pid: i32,
    task_dir: &CString,
    ctl: i32,
    rep: i32,
    shared: &Shared,
    tids: &mut [i32],
) -> ! {
    // SAFETY (whole body): system calls on this process's own state and descriptors.
    unsafe {
        let sfd = isolate([ctl, rep]);
        let mut t = Tracees {
            pid,
            tids,
            n: 0,
            shared,
            leaving: false,
        };
        let fail = |state: u32, value: i32, tid: i32| -> ! {
            shared.value.store(value, Ordering::Release);
            shared.tid.store(tid, Ordering::Release);
            shared.state.store(state, Ordering::Release);
            libc::write(rep, [0u8].as_ptr().cast(), 1);
            // The kernel detaches the threads attached so far; nothing is armed yet.
            libc::_exit(1)
        };
        if let Some((state, value, tid)) = t.attach_all(task_dir) {
            fail(state, value, tid);
        }
        if t.n == 0 {
            fail(FAILED, libc::ESRCH, pid);
        }
        shared.state.store(READY, Ordering::Release);
        libc::write(rep, [0u8].as_ptr().cast(), 1);
        libc::close(rep);

        if !t.guard(ctl, sfd) {
            // The target is gone.
            libc::_exit(0);
        }
        // Told to go (the watcher has closed its events), or kairos is gone.
        t.detach();
        libc::_exit(0)
    }
}

/// Keeps only the two pipe ends, ignores the terminal's signals and returns a signalfd
/// for SIGCHLD.
///
/// # Safety
/// Only in the helper.
unsafe fn isolate(keep: [i32; 2]) -> i32 {
    // SAFETY (whole body): system calls on this process's own state and descriptors.
    unsafe {
        close_others(keep);
        // Signals for the terminal's group are for kairos and the target: the helper
        // stays until told to go (or until kairos is gone), whatever handlers it inherited.
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        // Tracee stops arrive as SIGCHLD: through a signalfd, one poll waits for them and
        // for the control pipe.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC)
    }
}

/// A failure to attach: (state for [`Shared`], value, thread).
type Failure = (u32, i32, i32);

impl Tracees<'_> {
    /// Seizes every thread of the target. Until a listing finds no thread we do not trace
    /// yet: threads created meanwhile by a traced one are attached by the kernel, the
    /// others by the next listing.
    fn attach_all(&mut self, task_dir: &CString) -> Option<Failure> {
        for _ in 0..1000 {
            let mut new = 0;
            let mut failure = None;
            each_thread(task_dir, |tid| {
                if failure.is_some() || self.has(tid) {
                    return;
                }
                match self.seize(tid) {
                    Ok(true) => new += 1,
                    Ok(false) => {}
                    Err(f) => failure = Some(f),
                }
            });
            if failure.is_some() {
                return failure;
            }
            if new == 0 {
                break;
            }
        }
        None
    }

    /// Seizes one thread unless it is gone or ours already; true when newly seized.
    fn seize(&mut self, tid: i32) -> Result<bool, Failure> {
        let pid = self.pid;
        match tracer_of(pid, tid) {
            Tracer::Gone => {}
            Tracer::Us => self.add(tid),
            Tracer::Nobody => {
                if ptrace(libc::PTRACE_SEIZE, tid, 0, OPTIONS as usize) == 0 {
                    self.add(tid);
                    return Ok(true);
                }
                let e = errno();
                // EPERM also answers a thread that is exiting, or that a traced thread
                // has just created (the kernel attached it).
                match tracer_of(pid, tid) {
                    Tracer::Gone => {}
                    Tracer::Us => self.add(tid),
                    Tracer::Other(tracer) => return Err((TRACED, tracer, tid)),
                    Tracer::Nobody => return Err((FAILED, e, tid)),
                }
            }
            Tracer::Other(tracer) => return Err((TRACED, tracer, tid)),
        }
        Ok(false)
    }

    /// Handles the tracees' stops until told to go on `ctl` (true) or until the target is
    /// gone (false).
    fn guard(&mut self, ctl: i32, sfd: i32) -> bool {
        let mut drain = [0u8; 1024];
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: ctl,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: sfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: a local array of two pollfds; reading into a local buffer.
            unsafe {
                // The timeout only guards against a lost wake-up.
                libc::poll(fds.as_mut_ptr(), 2, 100);
                while libc::read(sfd, drain.as_mut_ptr().cast(), drain.len()) > 0 {}
            }
            if !self.reap(false) {
                return false;
            }
            if fds[0].revents != 0 {
                return true;
            }
        }
    }

    /// Interrupts every tracee and detaches each at its stop.
    fn detach(&mut self) {
        self.leaving = true;
        for i in 0..self.n {
            if let Some(&tid) = self.tids.get(i) {
                ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0);
            }
        }
        while self.reap(true) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seize_refusals_name_their_cause() {
        assert!(matches!(
            refusal(5, 6, libc::EPERM, Some(1), false),
            WatchError::PtraceRestricted { pid: 5, scope: 1 }
        ));
        // Root passes scopes 1 and 2; 3 forbids everyone.
        assert!(matches!(
            refusal(5, 6, libc::EPERM, Some(1), true),
            WatchError::NotOurProcess { pid: 5 }
        ));
        assert!(matches!(
            refusal(5, 6, libc::EPERM, Some(3), true),
            WatchError::PtraceRestricted { scope: 3, .. }
        ));
        assert!(matches!(
            refusal(5, 6, libc::EPERM, None, false),
            WatchError::NotOurProcess { pid: 5 }
        ));
        assert!(matches!(
            refusal(5, 6, libc::ESRCH, Some(1), false),
            WatchError::ProcessGone { pid: 5 }
        ));
        let e = refusal(5, 6, libc::EIO, None, false);
        assert!(e.to_string().contains("thread 6 of process 5"), "{e}");
    }

    #[test]
    fn status_fields_are_read_without_allocating() {
        let text = b"Name:\tx\nState:\tZ (zombie)\nTracerPid:\t1234\nSigPnd:\t0000000000000010\n";
        assert_eq!(number(text, b"TracerPid:", 10), Some(1234));
        assert_eq!(number(text, b"SigPnd:", 16), Some(0x10));
        assert_eq!(after(text, b"State:").and_then(|s| s.first()), Some(&b'Z'));
        assert_eq!(number(text, b"Missing:", 10), None);
        let mut buf = [0u8; 32];
        let at = put(&mut buf, 0, b"/proc/");
        let end = put_decimal(&mut buf, at, 40213);
        assert_eq!(&buf[..end], b"/proc/40213");
        // This thread: no SIGTRAP queued, and a status to read.
        // SAFETY: no preconditions.
        let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
        assert!(!sigtrap_queued(pid, tid));
        assert!(matches!(
            tracer_of(pid, tid),
            Tracer::Nobody | Tracer::Other(_)
        ));
    }
}
