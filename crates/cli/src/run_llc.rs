//! The target's LLC misses over time in `kairos run --cache-ways` (the recipe's "LLC Miss
//! Count"): perf's generic LLC-load-misses counted over the program and its threads, read
//! at each tick. Without a PMU the result says why instead.

use kairos_collector::task_counter::{why_not, Event, TaskCounter};

pub struct LlcMisses {
    counter: Option<TaskCounter>,
    why: Option<String>,
    /// (seconds since the start, misses so far).
    points: Vec<(f64, u64)>,
}

impl LlcMisses {
    /// Starts counting in `pid` (just started: threads it makes later are counted too).
    pub fn start(pid: libc::pid_t) -> LlcMisses {
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
    pub fn tick(&mut self, t: f64) {
        if let Some(Ok(Some(n))) = self.counter.as_ref().map(TaskCounter::read) {
            self.points.push((t, n));
        }
    }

    /// The summary's lines, or the note saying why there are none.
    pub fn summary(&self) -> Result<Vec<String>, String> {
        if let Some(why) = &self.why {
            return Err(why.clone());
        }
        let (Some(first), Some(last)) = (self.points.first(), self.points.last()) else {
            return Err(
                "the target's LLC misses were never read (it ended before the first tick)".into(),
            );
        };
        let per_tick = self
            .points
            .windows(2)
            .map(|w| (w[1].1.saturating_sub(w[0].1), w[1].0 - w[0].0));
        let peak = per_tick
            .clone()
            .map(|(n, dt)| n as f64 / dt.max(1e-9))
            .fold(0.0, f64::max);
        let secs = (last.0 - first.0).max(1e-9);
        Ok(vec![
            format!(
                "LLC misses:             {} (LLC-load-misses, program and its threads)",
                kairos_report::thousands(last.1)
            ),
            format!(
                "LLC misses per second:  {:.0} average, {peak:.0} at the peak tick",
                last.1.saturating_sub(first.1) as f64 / secs
            ),
        ])
    }

    /// For the result's manifest.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"event": "LLC-load-misses", "why_not": self.why,
                           "series": self.points.iter().map(|(t, n)| serde_json::json!({"t_s": t, "misses": n})).collect::<Vec<_>>()})
    }
}
