//! What one hit costs the thread that traps, on this machine: the duty cycle's unit of
//! account. 11-14 us on our KVM guests; bare metal is expected to be much cheaper, so a
//! fixed figure would waste most of the budget there.
//!
//! The watched thread is ours, which no helper of ours may trace (see `guard.rs`), so a
//! trap the machine delivers without saying which slot fired (DR6 empty, about one in
//! 30,000-90,000 on KVM) would kill kairos with SIGTRAP: while measuring, a handler
//! ([`TrapShield`]) drops such SIGTRAPs of the measuring thread and passes any other to
//! the disposition it replaced.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};

use super::events::{bp_attr, Events};
use super::WatchError;

/// Writes per measurement: enough to average over, few enough to fit one ring
/// (56 bytes a hit) and to take a few tens of milliseconds.
const WRITES: u64 = 2000;

/// The thread's CPU time (trap handling included), ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One shield at a time in the process (the handler's state is global).
static SHIELD: Mutex<()> = Mutex::new(());
/// The thread whose stray SIGTRAPs are dropped.
static SHIELDED_TID: AtomicI32 = AtomicI32::new(0);
/// The SIGTRAP disposition the shield replaced, for signals that are not ours.
static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
/// SIGTRAPs dropped, over the process's life.
static ABSORBED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_sigtrap(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; gettid,
    // sigaction and raise are async-signal-safe.
    unsafe {
        let code = (*info).si_code;
        if libc::gettid() == SHIELDED_TID.load(Ordering::Acquire)
            && matches!(code, libc::TRAP_BRKPT | libc::TRAP_HWBKPT)
        {
            // A #DB no perf event claimed: the access is done, going on is safe.
            ABSORBED.fetch_add(1, Ordering::AcqRel);
            return;
        }
        // Not ours: put the replaced disposition back and raise the signal again; it is
        // delivered under that disposition once this handler returns.
        let previous = PREVIOUS.load(Ordering::Acquire);
        if !previous.is_null() {
            libc::sigaction(libc::SIGTRAP, previous, std::ptr::null_mut());
        }
        libc::raise(libc::SIGTRAP);
    }
}

/// While it lives, stray watchpoint SIGTRAPs of thread `tid` are dropped. Drop it only
/// once the thread can no longer trap (its events disabled, its work acknowledged).
pub(super) struct TrapShield {
    previous: Box<libc::sigaction>,
    _one: std::sync::MutexGuard<'static, ()>,
}

impl TrapShield {
    pub(super) fn new(tid: i32) -> Result<TrapShield, WatchError> {
        let one = SHIELD.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: sigaction is plain data; all-zero is valid and then filled in.
        let mut previous: Box<libc::sigaction> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: as above.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_sigtrap as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: valid pointers; the handler only touches atomics and async-signal-safe calls.
        unsafe { libc::sigemptyset(&mut sa.sa_mask) };
        SHIELDED_TID.store(tid, Ordering::Release);
        // SAFETY: as above; `previous` outlives the handler's use of it (see Drop).
        if unsafe { libc::sigaction(libc::SIGTRAP, &sa, &mut *previous) } != 0 {
            SHIELDED_TID.store(0, Ordering::Release);
            return Err(WatchError::Io {
                context: "installing the SIGTRAP handler of the trap-cost measurement".into(),
                source: std::io::Error::last_os_error(),
            });
        }
        PREVIOUS.store(&mut *previous, Ordering::Release);
        Ok(TrapShield {
            previous,
            _one: one,
        })
    }
}

impl Drop for TrapShield {
    fn drop(&mut self) {
        // SAFETY: restores the disposition saved in `new`.
        unsafe { libc::sigaction(libc::SIGTRAP, &*self.previous, std::ptr::null_mut()) };
        PREVIOUS.store(std::ptr::null_mut(), Ordering::Release);
        SHIELDED_TID.store(0, Ordering::Release);
    }
}

/// SIGTRAPs the measurements of this process have dropped (see [`TrapShield`]).
pub fn stray_traps() -> u64 {
    ABSORBED.load(Ordering::Acquire)
}

/// A thread of ours writes a word [`WRITES`] times, without and then with a W watchpoint
/// on it; the difference of its CPU time per hit, median of `rounds`, in ns.
pub fn measure_trap_cost(rounds: usize) -> Result<u64, WatchError> {
    let word = std::sync::Arc::new(AtomicU64::new(0));
    let (to_worker, orders) = mpsc::channel::<u64>();
    let (reply, from_worker) = mpsc::channel::<u64>();
    let w = word.clone();
    let worker = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        let _ = reply.send(unsafe { libc::gettid() } as u64);
        // 0 ends the thread; any other order is a number of writes to time.
        while let Ok(n) = orders.recv() {
            if n == 0 {
                break;
            }
            let start = thread_cpu_ns();
            for i in 0..n {
                w.store(i, Ordering::Relaxed);
            }
            let _ = reply.send(thread_cpu_ns() - start);
        }
    });
    let result = measure(&word, &to_worker, &from_worker, rounds.max(1));
    let _ = to_worker.send(0);
    let _ = worker.join();
    result
}

fn measure(
    word: &AtomicU64,
    to: &mpsc::Sender<u64>,
    from: &mpsc::Receiver<u64>,
    rounds: usize,
) -> Result<u64, WatchError> {
    let gone = || WatchError::Io {
        context: "measuring the trap cost".into(),
        source: std::io::Error::other("the measuring thread stopped"),
    };
    let tid = from.recv().map_err(|_| gone())? as i32;
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    // Dropped last (declared first): after `events`, whose traps it catches, and after
    // every order was answered, so no SIGTRAP of the thread can still be on its way.
    let _shield = TrapShield::new(tid)?;
    let mut events = Events::new(pid);
    events
        .open_thread(tid, 1)
        .map_err(|(e, _)| WatchError::from_errno(e, pid, tid, "opening a watchpoint"))?;
    let addr = word as *const AtomicU64 as u64;
    let mut costs = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut timed = |armed: bool| -> Result<(u64, u64), WatchError> {
            events.modify(0, &bp_attr(addr, 8, true, !armed))?;
            to.send(WRITES).map_err(|_| gone())?;
            let cpu = from.recv().map_err(|_| gone())?;
            events.enable(0, false)?;
            let hits: usize = events.drain().iter().map(|d| d.hits.len()).sum();
            Ok((cpu, hits as u64))
        };
        let (free, _) = timed(false)?;
        let (armed, hits) = timed(true)?;
        if let Some(cost) = armed.saturating_sub(free).checked_div(hits) {
            costs.push(cost);
        }
    }
    costs.sort_unstable();
    costs
        .get(costs.len() / 2)
        .copied()
        .ok_or_else(|| WatchError::Unsupported {
            detail: "a watchpoint on our own thread never trapped".into(),
        })
}
