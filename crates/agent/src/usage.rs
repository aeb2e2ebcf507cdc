//! The agent's own cost, said every window: CPU time of all its threads (getrusage) as a
//! share of one CPU over the window's wall time, and its resident memory (VmRSS).

use std::time::Instant;

/// CPU time used by this process so far, in ns.
fn cpu_ns() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Resident memory of this process in bytes (0 when /proc does not say).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Measures from one window's end to the next.
pub struct Meter {
    cpu: u64,
    at: Instant,
}

/// The agent's cost over one window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Percent of one CPU.
    pub cpu_percent: f64,
    pub rss_bytes: u64,
}

impl Meter {
    pub fn start() -> Meter {
        Meter {
            cpu: cpu_ns(),
            at: Instant::now(),
        }
    }

    /// The cost since the last call (or the start).
    pub fn lap(&mut self) -> Usage {
        let (cpu, at) = (cpu_ns(), Instant::now());
        let wall = at.duration_since(self.at).as_nanos().max(1) as f64;
        let used = cpu.saturating_sub(self.cpu) as f64;
        (self.cpu, self.at) = (cpu, at);
        Usage {
            cpu_percent: 100.0 * used / wall,
            rss_bytes: rss_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_shows_as_cpu() {
        let mut m = Meter::start();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 50 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
        }
        let u = m.lap();
        assert!(u.cpu_percent > 20.0, "{u:?}");
        assert!(u.rss_bytes > 0);
    }
}
