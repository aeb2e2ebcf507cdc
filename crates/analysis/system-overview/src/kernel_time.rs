//! Measured kernel time per thread: the timed kernel entries, the entry and exit paths
//! around them that no event times, and no time the thread spent switched out.
//!
//! - Timed entries (faults, system calls, interrupts) overlap: a fault inside a system
//!   call, a timer interrupt inside a fault. Their union is counted, not their sum.
//! - A pair of events times the handler, not the kernel entry before its first event nor
//!   the way back to user mode after its second (with the recording of that event
//!   itself). [`PathCost`] is that per-entry cost, measured on the machine at collection
//!   time (`kairos_collector::calibrate`); each completed fault and system call gets it,
//!   never more than the time to the thread's next event.
//! - A system call that blocks (a sleep, a read that waits) is off the CPU from its
//!   sched_switch until the thread is next seen (an event or a sample): that time is
//!   not kernel CPU time and is taken out.

use std::collections::BTreeMap;

use kairos_model::{Mode, Profile};

use crate::{Cause, Entry};

/// Per-entry kernel time outside the timed pairs, in ns (0: not measured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCost {
    pub syscall_ns: u64,
    pub fault_ns: u64,
}

/// One thread's measured kernel time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadKernelTime {
    /// Disjoint, sorted [start, end) spans of kernel time.
    pub spans: Vec<(u64, u64)>,
    /// Of the spans' total, what the entry and exit paths added.
    pub paths_ns: u64,
}

impl ThreadKernelTime {
    pub fn total_ns(&self) -> u64 {
        self.spans.iter().map(|&(a, b)| b - a).sum()
    }

    /// Kernel time inside [from, to).
    pub fn within(&self, from: u64, to: u64) -> u64 {
        let i = self.spans.partition_point(|&(_, b)| b <= from);
        self.spans[i..]
            .iter()
            .take_while(|&&(a, _)| a < to)
            .map(|&(a, b)| b.min(to).saturating_sub(a.max(from)))
            .sum()
    }
}

/// Times each context switch (sched_switch) with the time its thread was switched out:
/// until its first switch-in after it (`switch_ins`: per thread, the PERF_RECORD_SWITCH
/// switch-in times of the recording, any order). Switches with no switch-in after them
/// (the thread ended) stay untimed.
pub fn time_switches(entries: &mut [Entry], switch_ins: &BTreeMap<u32, Vec<u64>>) {
    let mut sorted: BTreeMap<u32, Vec<u64>> = switch_ins.clone();
    for v in sorted.values_mut() {
        v.sort_unstable();
    }
    for e in entries
        .iter_mut()
        .filter(|e| e.cause == Cause::ContextSwitch)
    {
        let Some(ins) = sorted.get(&e.thread) else {
            continue;
        };
        if let Some(&t) = ins.get(ins.partition_point(|&x| x <= e.time_ns)) {
            e.duration_ns = Some(t - e.time_ns);
        }
    }
}

/// The longest gap before a timer interrupt that interrupted the kernel credited as kernel
/// time (see `per_thread`).
const HELD_IRQ_MAX_NS: u64 = 50_000;

/// Fewer short same-kind gaps than this: the calibrated cost stands.
const MIN_GAPS: usize = 100;

/// The per-entry path cost as this recording shows it. The cost calibrated at collection
/// is a few milliseconds' snapshot, and the same code costs a third more or less with what
/// else the machine runs (another thread on the sibling hyperthread, say). Where a thread
/// makes one system call (or takes one fault) right after another, the gap from one's
/// closing event to the next one's opening event is that cost plus next to no user code:
/// the median of such gaps, among those under twice the calibrated cost (longer ones hold
/// user work) and with nothing else (an interrupt, a sample) in between, is the cost during
/// the run. Where there are too few, the calibrated cost stands.
pub fn observed_cost(profile: &Profile, entries: &[Entry], calibrated: &PathCost) -> PathCost {
    let mut by_thread: BTreeMap<u32, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        by_thread.entry(e.thread).or_default().push(e);
    }
    let mut samples: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for s in &profile.samples {
        samples.entry(s.thread).or_default().push(s.time_ns);
    }
    let kind = |c: Cause| match c {
        Cause::Syscall => Some(0),
        Cause::UserFault => Some(1),
        _ => None,
    };
    let limit = [
        calibrated.syscall_ns.saturating_mul(2),
        calibrated.fault_ns.saturating_mul(2),
    ];
    let mut gaps: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    for (thread, mut list) in by_thread {
        list.sort_by_key(|e| e.time_ns);
        let mut times = samples.remove(&thread).unwrap_or_default();
        times.sort_unstable();
        for w in list.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (Some(k), Some(d)) = (kind(a.cause), a.duration_ns) else {
                continue;
            };
            if kind(b.cause) != Some(k) || (k == 1 && !a.completed) {
                continue;
            }
            let end = a.time_ns.saturating_add(d);
            let gap = b.time_ns.saturating_sub(end);
            let sampled_between = times
                .get(times.partition_point(|&t| t < end))
                .is_some_and(|&t| t <= b.time_ns);
            if b.time_ns >= end && gap < limit[k] && !sampled_between {
                gaps[k].push(gap);
            }
        }
    }
    let pick = |mut g: Vec<u64>, cal: u64| {
        if cal == 0 || g.len() < MIN_GAPS {
            return cal;
        }
        g.sort_unstable();
        g[g.len() / 2]
    };
    let [sys, fault] = gaps;
    PathCost {
        syscall_ns: pick(sys, calibrated.syscall_ns),
        fault_ns: pick(fault, calibrated.fault_ns),
    }
}

/// Measured kernel time of every thread with kernel entries, by thread index.
pub fn per_thread(
    profile: &Profile,
    entries: &[Entry],
    cost: &PathCost,
) -> BTreeMap<u32, ThreadKernelTime> {
    // Everything known of each thread: timed spans, where entries ended (with their path
    // cost), its switch-outs, and the times it was seen running (entry starts and ends,
    // samples).
    #[derive(Default)]
    struct Acc {
        timed: Vec<(u64, u64)>,
        ends: Vec<(u64, u64)>,
        switches: Vec<(u64, Option<u64>)>,
        seen: Vec<u64>,
        irqs: Vec<(u64, u64)>,
        kernel_samples: Vec<u64>,
    }
    let mut by: BTreeMap<u32, Acc> = BTreeMap::new();
    for e in entries {
        let a = by.entry(e.thread).or_default();
        if e.cause == Cause::ContextSwitch {
            a.switches.push((e.time_ns, e.duration_ns));
            continue;
        }
        a.seen.push(e.time_ns);
        let Some(d) = e.duration_ns else { continue };
        let end = e.time_ns.saturating_add(d);
        a.seen.push(end);
        a.timed.push((e.time_ns, end));
        if e.cause == Cause::Interrupt {
            a.irqs.push((e.time_ns, end));
        }
        let path = match e.cause {
            Cause::Syscall => cost.syscall_ns,
            Cause::UserFault | Cause::KernelFault if e.completed => cost.fault_ns,
            _ => 0,
        };
        a.ends.push((end, path));
    }
    for s in &profile.samples {
        if let Some(a) = by.get_mut(&s.thread) {
            a.seen.push(s.time_ns);
            if profile
                .leaf_frame(s)
                .is_some_and(|f| f.mode == Mode::Kernel)
            {
                a.kernel_samples.push(s.time_ns);
            }
        }
    }
    let path_in = cost.syscall_ns.max(cost.fault_ns);
    by.into_iter()
        .map(|(thread, mut a)| {
            a.seen.sort_unstable();
            a.switches.sort_unstable();
            let next_seen = |t: u64| a.seen.get(a.seen.partition_point(|&x| x <= t)).copied();
            let next_switch = |t: u64| {
                a.switches
                    .get(a.switches.partition_point(|&(x, _)| x <= t))
                    .map(|&(x, _)| x)
            };
            // The thread is off the CPU from its sched_switch to its switch-in (the
            // recording's PERF_RECORD_SWITCH), or at most until it is next seen.
            let back_in =
                |t: u64, d: Option<u64>| d.map(|d| t.saturating_add(d)).or_else(|| next_seen(t));
            let timed = union(a.timed.clone());
            let mut all = a.timed;
            let mut preempted_on_way_out = Vec::new();
            for &(end, path) in &a.ends {
                let seen = next_seen(end);
                match next_switch(end) {
                    // Nothing between the end of an entry and a switch-out: the thread
                    // never got back to user mode; the way out ended in schedule().
                    Some(sw) if seen.is_none_or(|n| sw <= n) => {
                        all.push((end, sw));
                        preempted_on_way_out.push(sw);
                    }
                    _ if path > 0 => {
                        let until = seen.map_or(end + path, |n| way_out(end, n, path));
                        all.push((end, until));
                    }
                    _ => {}
                }
            }
            preempted_on_way_out.sort_unstable();
            // A timer interrupt whose cpu-clock sample was taken in kernel mode interrupted
            // the kernel: the thread had not got back to user mode since it was last seen
            // (the end of an entry, a switch-in). With interrupts off while a closing event
            // records itself, and an interrupt held back that long costing a VM exit, such
            // gaps reach 15 us here, far beyond the path cost.
            a.kernel_samples.sort_unstable();
            let mut seen_all = a.seen.clone();
            seen_all.extend(
                a.switches
                    .iter()
                    .filter_map(|&(t, d)| d.map(|d| t.saturating_add(d))),
            );
            seen_all.sort_unstable();
            for &(start, end) in &a.irqs {
                let i = a.kernel_samples.partition_point(|&t| t < start);
                if a.kernel_samples.get(i).is_some_and(|&t| t <= end) {
                    let k = seen_all.partition_point(|&t| t < start);
                    if let Some(&prev) = k.checked_sub(1).and_then(|k| seen_all.get(k)) {
                        // Longer gaps mean a kernel entry no event records (an IPI, say):
                        // that one's time is not known, only that it ended in kernel mode.
                        all.push((prev.max(start.saturating_sub(HELD_IRQ_MAX_NS)), start));
                    }
                }
            }
            let mut off = Vec::new();
            for &(t, d) in &a.switches {
                let Some(back) = back_in(t, d) else { continue };
                off.push((t, back));
                // Back in after a preemption on the way out: the rest of that way out.
                if d.is_some() && preempted_on_way_out.binary_search(&t).is_ok() && path_in > 0 {
                    let until =
                        next_seen(back).map_or(back + path_in, |n| way_out(back, n, path_in));
                    all.push((back, until));
                }
            }
            let off = union(off);
            let spans = subtract(union(all), &off);
            let timed_ns: u64 = subtract(timed, &off).iter().map(|&(x, y)| y - x).sum();
            let total: u64 = spans.iter().map(|&(x, y)| y - x).sum();
            (
                thread,
                ThreadKernelTime {
                    spans,
                    paths_ns: total.saturating_sub(timed_ns),
                },
            )
        })
        .collect()
}

/// Where the kernel's way out from `end` is taken to end, the thread being next seen at
/// `next`: a gap shorter than twice the path cost holds no user work to speak of (the
/// path cost is a median; its slower half is kernel time too), a longer one gets the
/// path cost.
fn way_out(end: u64, next: u64, path: u64) -> u64 {
    if next.saturating_sub(end) < path.saturating_mul(2) {
        next
    } else {
        next.min(end.saturating_add(path))
    }
}

/// Sorted, disjoint spans covering the same time as `v`.
fn union(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.retain(|&(a, b)| b > a);
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `spans` minus `holes` (both sorted and disjoint).
fn subtract(spans: Vec<(u64, u64)>, holes: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(spans.len());
    let mut h = 0;
    for (mut a, b) in spans {
        while h < holes.len() && holes[h].1 <= a {
            h += 1;
        }
        let mut k = h;
        while a < b {
            match holes.get(k) {
                Some(&(ha, hb)) if ha < b => {
                    if ha > a {
                        out.push((a, ha));
                    }
                    a = a.max(hb);
                    k += 1;
                }
                _ => {
                    out.push((a, b));
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(t: u64, d: Option<u64>, cause: Cause) -> Entry {
        Entry {
            time_ns: t,
            duration_ns: d,
            cause,
            major: false,
            completed: cause.is_fault() && d.is_some(),
            thread: 0,
            cpu: 0,
            ip: 0,
            stack: None,
            addr: None,
            object: None,
            object_start: 0,
            object_end: 0,
            detail: None,
        }
    }

    #[test]
    fn observed_cost_follows_back_to_back_entries() {
        let p = Profile::default();
        let cal = PathCost {
            syscall_ns: 700,
            fault_ns: 1000,
        };
        // 200 system calls of 500 ns, 1100 ns apart (end to start): the run's cost.
        let mut e: Vec<Entry> = (0..200)
            .map(|i| entry(i * 1600, Some(500), Cause::Syscall))
            .collect();
        // 200 faults 20 us apart: user work between them, so the calibrated cost stands.
        e.extend((0..200).map(|i| entry(1_000_000 + i * 20_000, Some(800), Cause::UserFault)));
        assert_eq!(
            observed_cost(&p, &e, &cal),
            PathCost {
                syscall_ns: 1100,
                fault_ns: 1000
            }
        );
        // Too few gaps: calibrated.
        assert_eq!(observed_cost(&p, &e[..50], &cal), cal);
        // Nothing calibrated: nothing credited.
        assert_eq!(
            observed_cost(&p, &e, &PathCost::default()),
            PathCost::default()
        );
    }

    /// With the switch-in known (PERF_RECORD_SWITCH): a preemption on the way out of a
    /// system call is kernel time up to the switch, and the rest of the way out follows
    /// the switch-in; a sleep inside a system call is taken out exactly.
    #[test]
    fn preemption_on_the_way_out_and_sleep_with_known_switch_in() {
        let p = Profile::default();
        let cost = PathCost {
            syscall_ns: 100,
            fault_ns: 50,
        };
        let switch = |t: u64, d: u64| Entry {
            duration_ns: Some(d),
            ..entry(t, None, Cause::ContextSwitch)
        };
        let e = vec![
            entry(0, Some(1000), Cause::Syscall),
            switch(1500, 10_000),
            entry(12_000, Some(500), Cause::Syscall),
            entry(20_000, Some(10_000), Cause::Syscall),
            switch(20_100, 9_000),
        ];
        let k = &per_thread(&p, &e, &cost)[&0];
        assert_eq!(
            k.spans,
            vec![
                (0, 1500),
                (11_500, 11_600),
                (12_000, 12_600),
                (20_000, 20_100),
                (29_100, 30_100)
            ]
        );
        assert_eq!(k.paths_ns, 500 + 100 + 100 + 100);
    }

    #[test]
    fn switches_are_timed_until_the_next_switch_in() {
        let mut e = vec![
            entry(100, None, Cause::ContextSwitch),
            entry(500, None, Cause::ContextSwitch),
            entry(900, None, Cause::ContextSwitch),
        ];
        let ins = BTreeMap::from([(0u32, vec![700, 300])]);
        time_switches(&mut e, &ins);
        assert_eq!(
            e.iter().map(|e| e.duration_ns).collect::<Vec<_>>(),
            vec![Some(200), Some(200), None]
        );
    }

    /// A timer interrupt 15 us after a system call's exit whose sample shows kernel mode:
    /// the thread was still on its way out; one whose sample shows user mode: it was not.
    #[test]
    fn a_timer_interrupt_that_caught_the_kernel_extends_the_way_out() {
        use kairos_model::{Frame, Sample, Stack};
        let mut p = Profile::default();
        let frame = |mode| Frame {
            address: 0,
            module: None,
            module_offset: 0,
            function: "f".into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode,
        };
        p.frames = vec![frame(Mode::Kernel), frame(Mode::User)];
        p.stacks = vec![
            Stack {
                parent: None,
                frame: 0,
            },
            Stack {
                parent: None,
                frame: 1,
            },
        ];
        let (k, u) = (0, 1);
        p.samples = vec![
            Sample {
                time_ns: 16_500,
                thread: 0,
                cpu: 0,
                stack: Some(k),
                weight: 1_000_000,
            },
            Sample {
                time_ns: 56_500,
                thread: 0,
                cpu: 0,
                stack: Some(u),
                weight: 1_000_000,
            },
        ];
        let irq = |t: u64| Entry {
            detail: Some(-1),
            ..entry(t, Some(2000), Cause::Interrupt)
        };
        let e = vec![
            entry(0, Some(1000), Cause::Syscall),
            irq(16_000),
            entry(40_000, Some(1000), Cause::Syscall),
            irq(56_000),
        ];
        let cost = PathCost {
            syscall_ns: 100,
            fault_ns: 100,
        };
        let spans = &per_thread(&p, &e, &cost)[&0].spans;
        assert_eq!(
            spans,
            &vec![(0, 18_000), (40_000, 41_100), (56_000, 58_000)]
        );
    }

    #[test]
    fn union_and_subtract() {
        assert_eq!(
            union(vec![(5, 9), (1, 3), (2, 4), (9, 10), (7, 7)]),
            vec![(1, 4), (5, 10)]
        );
        assert_eq!(
            subtract(vec![(0, 10), (20, 30)], &[(2, 3), (8, 22), (29, 40)]),
            vec![(0, 2), (3, 8), (22, 29)]
        );
    }

    #[test]
    fn overlaps_count_once_paths_are_capped_and_sleep_is_not_kernel_time() {
        let p = Profile::default();
        let cost = PathCost {
            syscall_ns: 100,
            fault_ns: 50,
        };
        let e = vec![
            // A system call 0..1000 with a kernel fault 200..300 inside: 1000, then its
            // path 1000..1100 (the next event is 400 ns away: user work in between).
            entry(0, Some(1000), Cause::Syscall),
            entry(200, Some(100), Cause::KernelFault),
            // A user fault 1400..1480: the next event follows 10 ns later, within twice
            // the path cost, so the whole gap is the way out.
            entry(1400, Some(80), Cause::UserFault),
            // A fault entry that never completed (inside an interrupt): no time.
            entry(1490, None, Cause::KernelFault),
            // nanosleep 1700..5000, switched out at 1800 until the exit at 5000 (the
            // switch-in is not known: the thread is next seen at 5000).
            entry(1700, Some(3300), Cause::Syscall),
            entry(1800, None, Cause::ContextSwitch),
        ];
        let k = &per_thread(&p, &e, &cost)[&0];
        assert_eq!(
            k.spans,
            vec![(0, 1100), (1400, 1490), (1700, 1800), (5000, 5100)]
        );
        assert_eq!(k.total_ns(), 1100 + 90 + 100 + 100);
        assert_eq!(k.paths_ns, 100 + 10 + 100);
        assert_eq!(k.within(1000, 1450), 100 + 50);
    }
}
