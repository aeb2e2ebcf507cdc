//! Waiting for the program while Kairos stays in charge: the stop signals (SIGTERM, SIGHUP,
//! and Ctrl-C where asked) are caught and passed on to the program instead of ending
//! Kairos, so that Kairos outlives it and can undo what it changed; a tick runs while
//! the program lives.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use kairos_result::TargetExit;

/// The last stop signal Kairos received (0: none).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
}

/// Signal dispositions changed for the run, put back when dropped.
pub(crate) struct StopSignals {
    old: Vec<(libc::c_int, libc::sighandler_t)>,
}

impl StopSignals {
    /// Catches `catch` (noted, to be passed on) and ignores `ignore`.
    pub(crate) fn install(catch: &[libc::c_int], ignore: &[libc::c_int]) -> StopSignals {
        STOP.store(0, Ordering::SeqCst);
        let handler = on_signal as *const () as libc::sighandler_t;
        let mut old = Vec::new();
        for (sigs, disposition) in [(ignore, libc::SIG_IGN), (catch, handler)] {
            for &s in sigs {
                // SAFETY: plain dispositions; the handler only stores to an atomic, and
                // exec resets it in the program.
                old.push((s, unsafe { libc::signal(s, disposition) }));
            }
        }
        StopSignals { old }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for &(s, h) in self.old.iter().rev() {
            // SAFETY: puts back the disposition that was there before.
            unsafe { libc::signal(s, h) };
        }
    }
}

/// Which stop signals are passed on to the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forward {
    /// The first one only.
    First,
    /// Each one that differs from the last passed on.
    EachNew,
}

fn should_forward(forward: Forward, sig: libc::c_int, forwarded: libc::c_int) -> bool {
    sig != 0
        && match forward {
            Forward::First => forwarded == 0,
            Forward::EachNew => sig != forwarded,
        }
}

/// The program's own use of the machine, from wait4's rusage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub user_s: f64,
    pub system_s: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

/// How the program ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waited {
    wstatus: libc::c_int,
    pub(crate) usage: Usage,
    /// The last signal passed on to the program (0: none).
    pub(crate) forwarded: libc::c_int,
    pub(crate) elapsed_s: f64,
}

impl Waited {
    pub(crate) fn exit(&self) -> TargetExit {
        kairos_session::exit_of(std::os::unix::process::ExitStatusExt::from_raw(
            self.wstatus,
        ))
    }

    /// Kairos passed a stop signal on to the program.
    pub(crate) fn signalled(&self) -> bool {
        self.forwarded != 0
    }
}

/// Waits for `pid` (our child), calling `tick` with the seconds since `started` every
/// `every`, and passing stop signals on as `forward` says.
pub(crate) fn wait(
    pid: libc::pid_t,
    started: Instant,
    every: Duration,
    forward: Forward,
    mut tick: impl FnMut(f64),
) -> Waited {
    let mut wstatus: libc::c_int = 0;
    // SAFETY: rusage is plain data, filled by wait4.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut forwarded = 0;
    loop {
        // SAFETY: waits for our own child only; WNOHANG never blocks.
        let r = unsafe { libc::wait4(pid, &mut wstatus, libc::WNOHANG, &mut ru) };
        if r == pid || r < 0 {
            break;
        }
        tick(started.elapsed().as_secs_f64());
        let sig = STOP.load(Ordering::SeqCst);
        if should_forward(forward, sig, forwarded) {
            // SAFETY: signals our own child.
            unsafe { libc::kill(pid, sig) };
            forwarded = sig;
        }
        std::thread::sleep(every);
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Waited {
        wstatus,
        usage: Usage {
            user_s: tv(ru.ru_utime),
            system_s: tv(ru.ru_stime),
            minor_faults: ru.ru_minflt as u64,
            major_faults: ru.ru_majflt as u64,
        },
        forwarded,
        elapsed_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_signals_are_passed_on_as_asked() {
        assert!(!should_forward(Forward::First, 0, 0));
        assert!(should_forward(Forward::First, libc::SIGTERM, 0));
        assert!(!should_forward(Forward::First, libc::SIGHUP, libc::SIGTERM));
        assert!(should_forward(
            Forward::EachNew,
            libc::SIGHUP,
            libc::SIGTERM
        ));
        assert!(!should_forward(
            Forward::EachNew,
            libc::SIGTERM,
            libc::SIGTERM
        ));
    }

    #[test]
    fn a_program_is_waited_for_and_its_exit_told() {
        let child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn();
        let Ok(child) = child else { return };
        let mut ticks = 0;
        let w = wait(
            child.id() as libc::pid_t,
            Instant::now(),
            Duration::from_millis(5),
            Forward::EachNew,
            |_| ticks += 1,
        );
        assert_eq!(w.exit(), TargetExit::Code { code: 3 });
        assert!(!w.signalled());
    }
}
