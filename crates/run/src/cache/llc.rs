//! The program's LLC misses over time in `kairos run --cache-ways` (the recipe's "LLC Miss
//! Count"): perf's generic LLC-load-misses counted over the program and its threads, read
//! at each tick. Without a PMU the result says why instead.

use kairos_collector::task_counter::{why_not, Event, TaskCounter};

pub(crate) struct LlcMisses {
    counter: Option<TaskCounter>,
    why: Option<String>,
    /// (seconds since the start, misses so far).
    points: Vec<(f64, u64)>,
}

/// The summary's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LlcFigures {
    /// Misses over the whole run.
    pub total: u64,
    /// Misses per second between the first and the last reading.
    pub per_second: f64,
    /// Misses per second of the busiest tick.
    pub peak_per_second: f64,
}

impl LlcMisses {
    /// Starts counting in `pid` (just started: threads it makes later are counted too).
    pub(crate) fn start(pid: libc::pid_t) -> LlcMisses {
        match TaskCounter::open(pid, Event::LLC_LOAD_MISSES) {
            Ok(c) => LlcMisses {
                counter: Some(c),
                why: None,
                points: Vec::new(),
            },
            Err(e) => LlcMisses {
                counter: None,
                why: Some(format!(
                    "the target's LLC misses are not counted: {}",
                    why_not(&e)
                )),
                points: Vec::new(),
            },
        }
    }

    /// One reading at `t` seconds.
    pub(crate) fn tick(&mut self, t: f64) {
        if let Some(Ok(Some(n))) = self.counter.as_ref().map(TaskCounter::read) {
            self.points.push((t, n));
        }
    }

    /// The summary's figures, or the note saying why there are none.
    pub(crate) fn summary(&self) -> Result<LlcFigures, String> {
        if let Some(why) = &self.why {
            return Err(why.clone());
        }
        figures(&self.points)
    }

    /// For the result's manifest.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"event": "LLC-load-misses", "why_not": self.why,
                           "series": self.points.iter().map(|(t, n)| serde_json::json!({"t_s": t, "misses": n})).collect::<Vec<_>>()})
    }
}

fn figures(points: &[(f64, u64)]) -> Result<LlcFigures, String> {
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return Err(
            "the target's LLC misses were never read (it ended before the first tick)".into(),
        );
    };
    let peak_per_second = points
        .windows(2)
        .map(|w| w[1].1.saturating_sub(w[0].1) as f64 / (w[1].0 - w[0].0).max(1e-9))
        .fold(0.0, f64::max);
    let secs = (last.0 - first.0).max(1e-9);
    Ok(LlcFigures {
        total: last.1,
        per_second: last.1.saturating_sub(first.1) as f64 / secs,
        peak_per_second,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_the_total_the_average_and_the_busiest_tick() {
        assert!(figures(&[]).unwrap_err().contains("never read"));
        let f = figures(&[(0.0, 100), (0.5, 200), (1.0, 1100)]).unwrap();
        assert_eq!(f.total, 1100);
        assert!((f.per_second - 1000.0).abs() < 1e-6, "{f:?}");
        assert!((f.peak_per_second - 1800.0).abs() < 1e-6, "{f:?}");
    }
}
