//! Waiting for a launched program that kairos may be told to stop.
//!
//! `kill -INT <kairos>` (or `timeout -s INT`) reaches kairos alone, not the program it
//! launched; Ctrl-C in a terminal reaches both. Either way kairos stops at once, as perf
//! record does: it sends the program SIGTERM (SIGKILL if it is still there after a grace
//! period), reaps it and finishes its result from what was recorded up to then.
//! The sampling collector does the same in `kairos_collector::collect`; this is for the
//! analyses that run the program themselves (memory-consumption, trace in instrument mode).

use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// The first SIGINT/SIGTERM received while [`wait`] runs; 0 when none.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

/// How long a program may take to end after SIGTERM before it gets SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// Waits for `child` to end. Returns its status and the signal (SIGINT, SIGTERM) that made
/// kairos end it, if one did. The previous dispositions of SIGINT and SIGTERM are restored.
pub fn wait(child: &mut Child) -> std::io::Result<(ExitStatus, Option<i32>)> {
    RECEIVED.store(0, Ordering::SeqCst);
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs a handler that only stores to an atomic.
    let old = unsafe {
        [
            libc::signal(libc::SIGINT, handler),
            libc::signal(libc::SIGTERM, handler),
        ]
    };
    let result = wait_loop(child);
    // SAFETY: puts back what was there.
    unsafe {
        libc::signal(libc::SIGINT, old[0]);
        libc::signal(libc::SIGTERM, old[1]);
    }
    result
}

fn wait_loop(child: &mut Child) -> std::io::Result<(ExitStatus, Option<i32>)> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status, None));
        }
        let sig = RECEIVED.load(Ordering::SeqCst);
        if sig != 0 {
            return terminate(child).map(|status| (status, Some(sig)));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM, then SIGKILL after [`GRACE`]; always reaps.
fn terminate(child: &mut Child) -> std::io::Result<ExitStatus> {
    let pid = child.id() as libc::pid_t;
    // SAFETY: our own child, not reaped yet (try_wait said it runs), so the pid is its.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let end = Instant::now() + GRACE;
    while Instant::now() < end {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait()
}
