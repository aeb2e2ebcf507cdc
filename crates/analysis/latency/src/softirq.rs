//! Softirqs on a request's CPU (network receive, timers, RCU, block completions run after
//! an interrupt, in the context of the thread it interrupted): irq:softirq_entry/exit
//! paired per CPU into kernel entries of that thread, which system-overview's pairing of
//! hardware interrupts leaves out. A request's interrupt time counts both.

use rustc_hash::FxHashMap as HashMap;

use kairos_analysis_system_overview::{Cause, Entry};
use kairos_convert::SideSample;

/// The tracepoints, as recorded.
pub const ENTRY: &str = "irq:softirq_entry";
pub const EXIT: &str = "irq:softirq_exit";

/// Each softirq that both began and ended in the recording, as an interrupt entry of the
/// thread it ran on (its vector, negated below -1, in `detail`).
pub fn entries(side: &[SideSample], events: &[String]) -> Vec<Entry> {
    let attr = |name: &str| {
        events
            .iter()
            .position(|e| e.starts_with(name))
            .map(|i| i as u32)
    };
    let (Some(entry), Some(exit)) = (attr(ENTRY), attr(EXIT)) else {
        return Vec::new();
    };
    let mut open: HashMap<u32, &SideSample> = HashMap::default();
    let mut out = Vec::new();
    for s in side {
        if s.attr == entry {
            open.insert(s.cpu, s);
        } else if s.attr == exit {
            let Some(e) = open.remove(&s.cpu) else {
                continue;
            };
            out.push(Entry {
                time_ns: e.time_ns,
                duration_ns: Some(s.time_ns.saturating_sub(e.time_ns)),
                cause: Cause::Interrupt,
                major: false,
                completed: true,
                thread: e.thread,
                cpu: e.cpu,
                ip: 0,
                stack: None,
                addr: None,
                object: None,
                object_start: 0,
                object_end: 0,
                detail: Some(-2 - e.payload.unwrap_or(0)),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(attr: u32, t: u64, cpu: u32, thread: u32) -> SideSample {
        SideSample {
            attr,
            time_ns: t,
            thread,
            cpu,
            ip: 0,
            stack: None,
            addr: None,
            object: None,
            payload: Some(3),
            nested: false,
            raw: None,
        }
    }

    #[test]
    fn softirqs_pair_per_cpu_on_the_thread_they_interrupted() {
        let events = vec!["cpu-clock".to_string(), ENTRY.into(), EXIT.into()];
        let e = entries(
            &[
                side(1, 10, 0, 5),
                side(1, 12, 1, 6),
                side(2, 15, 0, 5),
                side(2, 20, 1, 6),
                side(2, 30, 0, 5),
            ],
            &events,
        );
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].thread, e[0].duration_ns), (5, Some(5)));
        assert_eq!((e[1].thread, e[1].duration_ns), (6, Some(8)));
        assert!(entries(&[side(1, 10, 0, 5)], &["cpu-clock".to_string()]).is_empty());
    }
}
