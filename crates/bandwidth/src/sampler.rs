//! Reading bandwidth counters over time: each counter opened (counting, not sampling) on
//! every CPU of its PMU's cpumask (one per socket), read at each tick; the deltas through
//! the formulas of [`crate::counters`] give bytes a second per socket and flow.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

use perf_event_open_sys as sys;
use sys::bindings as b;

use crate::counters::{channel_rates, rates, Counter, Flow};

/// One opened counter instance.
struct Open {
    counter: usize,
    socket: u32,
    fd: OwnedFd,
    last: u64,
}

/// One tick's rates.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Seconds since the sampler started.
    pub at: f64,
    pub bytes_per_s: std::collections::BTreeMap<(u32, Flow), f64>,
    /// Per (socket, channel, flow) where the counters are per channel.
    pub per_channel: std::collections::BTreeMap<(u32, u32, Flow), f64>,
}

pub struct Sampler {
    counters: Vec<Counter>,
    open: Vec<Open>,
    start: Instant,
    last: Instant,
}

#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    #[error("the counters of {pmu} are taken by another tool (EBUSY: perf stat, pcm or a monitoring agent holds them); stop it and retry")]
    Busy { pmu: String },
    #[error("opening {event} on {pmu} (CPU {cpu}) was refused: {source}{hint}")]
    Refused {
        event: String,
        pmu: String,
        cpu: i32,
        source: io::Error,
        hint: &'static str,
    },
    #[error("{pmu} has no CPU to count on (its cpumask is empty)")]
    NoCpu { pmu: String },
}

/// Opens `ev` counting on `cpu` (all processes).
fn open_counting(type_: u32, config: u64, cpu: i32) -> Result<OwnedFd, io::Error> {
    // SAFETY: perf_event_attr is plain data; zeroed is its documented default.
    let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
    a.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    a.type_ = type_;
    a.config = config;
    // SAFETY: a valid attr; pid -1 with a CPU counts everything on it.
    let fd = unsafe { sys::perf_event_open(&mut a, -1, cpu, -1, b::PERF_FLAG_FD_CLOEXEC as _) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn read_count(fd: &OwnedFd) -> u64 {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes (read_format 0: the count) into a u64.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    if n == 8 {
        v
    } else {
        0
    }
}

impl Sampler {
    /// Opens every counter on every CPU of `cpus_of(counter)`; `socket_of` names the socket
    /// of a CPU. Any refusal closes what was opened and says why.
    pub fn open(
        counters: Vec<Counter>,
        cpus_of: &dyn Fn(&Counter) -> Vec<u32>,
        socket_of: &dyn Fn(u32) -> u32,
    ) -> Result<Sampler, SamplerError> {
        let mut open = Vec::new();
        for (i, c) in counters.iter().enumerate() {
            let cpus = cpus_of(c);
            if cpus.is_empty() {
                return Err(SamplerError::NoCpu { pmu: c.pmu.clone() });
            }
            for cpu in cpus {
                let fd = open_counting(c.type_, c.config, cpu as i32).map_err(|source| match source.raw_os_error() {
                    Some(libc::EBUSY) => SamplerError::Busy { pmu: c.pmu.clone() },
                    e => SamplerError::Refused {
                        event: c.event.clone(),
                        pmu: c.pmu.clone(),
                        cpu: cpu as i32,
                        hint: match e {
                            Some(libc::EACCES) | Some(libc::EPERM) => " (system-wide counting needs kernel.perf_event_paranoid 0 or less, root or CAP_PERFMON)",
                            Some(libc::ENOENT) | Some(libc::ENODEV) => " (the PMU does not exist here)",
                            _ => "",
                        },
                        source,
                    },
                })?;
                let last = read_count(&fd);
                open.push(Open {
                    counter: i,
                    socket: socket_of(cpu),
                    fd,
                    last,
                });
            }
        }
        let now = Instant::now();
        Ok(Sampler {
            counters,
            open,
            start: now,
            last: now,
        })
    }

    /// Reads every counter: the rates since the previous tick.
    pub fn tick(&mut self) -> Tick {
        let now = Instant::now();
        let secs = now.duration_since(self.last).as_secs_f64();
        let mut deltas = Vec::with_capacity(self.open.len());
        for o in &mut self.open {
            let v = read_count(&o.fd);
            // Counters only grow; a smaller value (a wrapped or reset counter) counts as 0.
            deltas.push((o.counter, o.socket, v.saturating_sub(o.last)));
            o.last = v;
        }
        self.last = now;
        Tick {
            at: now.duration_since(self.start).as_secs_f64(),
            bytes_per_s: rates(&self.counters, &deltas, secs),
            per_channel: channel_rates(&self.counters, &deltas, secs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machinery on a software counter (this machine has no uncore PMU): cpu-clock
    /// counts nanoseconds, so one "byte per count" gives about 1e9 a second per CPU.
    #[test]
    fn ticks_turn_deltas_into_rates_per_socket() {
        let c = Counter {
            pmu: "software".into(),
            type_: b::PERF_TYPE_SOFTWARE,
            config: b::PERF_COUNT_SW_CPU_CLOCK as u64,
            event: "cpu-clock".into(),
            flow: Flow::DramRead,
            bytes_per_count: 1.0,
        };
        let mut s = match Sampler::open(vec![c], &|_| vec![0], &|_| 0) {
            Ok(s) => s,
            Err(SamplerError::Refused { source, .. })
                if source.raw_os_error() == Some(libc::EACCES) =>
            {
                return eprintln!("system-wide counting not permitted for this user")
            }
            Err(e) => panic!("{e}"),
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        let t = s.tick();
        let rate = t.bytes_per_s[&(0, Flow::DramRead)];
        // cpu-clock advances with wall time on its CPU: the rate is about 1e9 ns a second.
        assert!((0.5e9..=1.5e9).contains(&rate), "{rate}");
        assert!(t.at > 0.1);
    }

    #[test]
    fn a_pmu_that_does_not_exist_and_an_empty_cpumask_are_sentences() {
        let c = Counter {
            pmu: "uncore_imc_0".into(),
            type_: 0x7fff_0000,
            config: 0x0304,
            event: "UNC_M_CAS_COUNT.RD".into(),
            flow: Flow::DramRead,
            bytes_per_count: 64.0,
        };
        let e = Sampler::open(vec![c.clone()], &|_| vec![0], &|_| 0)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("UNC_M_CAS_COUNT.RD on uncore_imc_0 (CPU 0) was refused"),
            "{e}"
        );
        let e = Sampler::open(vec![c], &|_| vec![], &|_| 0)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("cpumask is empty"), "{e}");
    }
}
