//! Counting the planned uncore events: each opened (counting, not sampling) on its CPU
//! for every process, read at each tick; deltas times the counter's scale add up per series.
//! An IIO box has four counters and the plan asks for more: the kernel rotates them, so
//! each delta is scaled by the time the event was enabled over the time it counted.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use perf_event_open_sys as sys;
use sys::bindings as b;

use crate::uncore::Counter;

struct Open {
    series: usize,
    scale: f64,
    fd: OwnedFd,
    last: [u64; 3],
}

pub struct Sampler {
    open: Vec<Open>,
    series: usize,
}

/// (count, time enabled, time running).
fn read_count(fd: &OwnedFd) -> [u64; 3] {
    let mut v = [0u64; 3];
    // SAFETY: reading 24 bytes (read_format TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING) into
    // three u64s.
    let n = unsafe { libc::read(fd.as_raw_fd(), v.as_mut_ptr().cast(), 24) };
    if n == 24 {
        v
    } else {
        [0; 3]
    }
}

/// The count between two readings, scaled up for the time it was not on a counter.
pub fn scaled_delta(last: [u64; 3], now: [u64; 3]) -> f64 {
    let d = |i: usize| now[i].saturating_sub(last[i]) as f64;
    if d(2) > 0.0 {
        d(0) * d(1) / d(2)
    } else {
        0.0
    }
}

fn why(c: &Counter, e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EBUSY) => format!("the counters of {} are taken by another tool (perf stat, pcm or a monitoring agent): stop it and collect again", c.pmu),
        Some(libc::EACCES) | Some(libc::EPERM) => format!("opening {} on {} was refused ({e}): system-wide uncore counting needs kernel.perf_event_paranoid 0 or less, root or CAP_PERFMON", c.event, c.pmu),
        _ => format!("opening {} on {} (CPU {}) failed: {e}", c.event, c.pmu, c.cpu),
    }
}

impl Sampler {
    /// Opens every counter; a refusal closes what was opened and says why.
    pub fn open(counters: &[Counter], series: usize) -> Result<Sampler, String> {
        let mut open = Vec::new();
        for c in counters {
            // SAFETY: perf_event_attr is plain data; zeroed is its documented default.
            let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
            a.size = std::mem::size_of::<b::perf_event_attr>() as u32;
            a.type_ = c.type_;
            a.config = c.config;
            a.__bindgen_anon_3.config1 = c.config1;
            a.read_format =
                (b::PERF_FORMAT_TOTAL_TIME_ENABLED | b::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64;
            // SAFETY: a valid attr; pid -1 with a CPU counts everything on it.
            let fd = unsafe {
                sys::perf_event_open(&mut a, -1, c.cpu as i32, -1, b::PERF_FLAG_FD_CLOEXEC as _)
            };
            if fd < 0 {
                return Err(why(c, &std::io::Error::last_os_error()));
            }
            // SAFETY: a new fd owned by nobody else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let last = read_count(&fd);
            open.push(Open {
                series: c.series,
                scale: c.scale,
                fd,
                last,
            });
        }
        Ok(Sampler { open, series })
    }

    /// Each series' delta since the previous tick.
    pub fn tick(&mut self) -> Vec<f64> {
        let mut out = vec![0.0; self.series];
        for o in &mut self.open {
            let v = read_count(&o.fd);
            // A smaller value (a reset counter) counts 0.
            if let Some(slot) = out.get_mut(o.series) {
                *slot += scaled_delta(o.last, v) * o.scale;
            }
            o.last = v;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rotated_counts_are_scaled_to_the_whole_interval() {
        // 1,000 counts while on a counter for 25 of 100 ms: 4,000.
        assert_eq!(super::scaled_delta([10, 0, 0], [1010, 100, 25]), 4000.0);
        assert_eq!(super::scaled_delta([10, 0, 0], [10, 100, 0]), 0.0);
    }
}
