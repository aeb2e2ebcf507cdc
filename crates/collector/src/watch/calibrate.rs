//! What one hit costs the thread that traps, on this machine: the duty cycle's unit of
//! account. 11-14 us on our KVM guests; bare metal is expected to be much cheaper, so a
//! fixed figure would waste most of the budget there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

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
