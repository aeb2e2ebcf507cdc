//! The one recorder of a group's counters (LLC occupancy, memory bandwidth), for both
//! `kairos run --cache-ways` and `kairos collect`: a thread reads the group's mon_data at
//! a fixed interval until it is told to stop, which it hears at once.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kairos_resctrl::monitor::{self, Reading};

/// The readings, each with its time in seconds.
pub(crate) type Series = Vec<(f64, Vec<Reading>)>;

/// The recording thread.
pub(crate) struct Monitor {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Series>,
}

impl Monitor {
    /// Reads `group`'s counters every `every`, times counted from `t0`. None when the
    /// group has no monitoring (no mon_data).
    pub(crate) fn start(group: &Path, every: Duration, t0: Instant) -> Option<Monitor> {
        if !group.join("mon_data").is_dir() {
            return None;
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let g = group.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("kairos-occupancy".into())
            .spawn(move || {
                let mut series = Vec::new();
                loop {
                    if let Ok(r) = monitor::read(&g) {
                        series.push((t0.elapsed().as_secs_f64(), r));
                    }
                    if stopped.recv_timeout(every) != Err(RecvTimeoutError::Timeout) {
                        break series;
                    }
                }
            })
            .ok()?;
        Some(Monitor { stop, thread })
    }

    /// Stops the recording; the readings.
    pub(crate) fn finish(self) -> Series {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_default()
    }
}

/// The group's total LLC occupancy at each reading that has one, in bytes.
pub(crate) fn occupancy(series: &Series) -> Vec<u64> {
    series
        .iter()
        .filter_map(|(_, r)| monitor::total_occupancy(r))
        .collect()
}

/// The first, highest and last of some readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstPeakLast {
    pub first: u64,
    pub peak: u64,
    pub last: u64,
}

impl FirstPeakLast {
    pub(crate) fn of(v: &[u64]) -> Option<FirstPeakLast> {
        Some(FirstPeakLast {
            first: *v.first()?,
            peak: *v.iter().max()?,
            last: *v.last()?,
        })
    }

    /// In KiB, as the summaries show it.
    pub(crate) fn kib(self) -> FirstPeakLast {
        FirstPeakLast {
            first: self.first / 1024,
            peak: self.peak / 1024,
            last: self.last / 1024,
        }
    }
}

/// The readings as the manifest keeps them.
pub(crate) fn to_json(series: &Series) -> Vec<serde_json::Value> {
    series
        .iter()
        .map(|(t, r)| serde_json::json!({"t_s": t, "domains": r}))
        .collect()
}
