//! Measured kernel time per thread: the timed kernel entries, the entry and exit paths
//! around them that no event times, and no time the thread spent switched out.
//!
//! - Timed entries (faults, system calls, interrupts) overlap: a fault inside a system
//!   call, a timer interrupt inside a fault. Their union is counted, not their sum.
//! - A pair of events times the handler, not the kernel entry before its first event nor
//!   the way back to user mode after its second (with the recording of that event
//!   itself): about 300-550 ns a system call and 750-1,100 ns a page fault on one KVM
//!   guest, as long as the handler itself. Two sources estimate that untimed time, and
//!   neither is exact alone:
//!   - the cost per entry calibrated at collection on fresh threads of our own
//!     ([`PathCost`], `kairos_collector::calibrate`). The same code costs up to half as
//!     much again on one thread as on another (measured: a thread keeps its own figure
//!     for its life), so each gap between entries is credited the calibrated cost with
//!     that spread as its uncertainty;
//!   - the thread's own cpu-clock samples, an unbiased picture of where its time went
//!     once one bias is undone: a timer interrupt that arrives while the kernel runs with
//!     interrupts off (the way back to user mode) is taken right after the return, in
//!     user mode, at the instruction the kernel returned to (or the one after it). Such a
//!     sample is kernel time. The samples' kernel time less the timed time is the
//!     untimed time, uncertain by the samples' binomial spread.
//!
//!   The two are combined weighted by the inverse of their variances (a program that
//!   enters the kernel every microsecond is measured by its samples, one that enters it
//!   a few thousand times a second by the calibration), and the result is laid over the
//!   gaps between entries in proportion to each gap's calibrated cost, never more than
//!   the gap.
//! - A system call that blocks (a sleep, a read that waits) is off the CPU from its
//!   sched_switch until the thread is next seen (an event or a sample): that time is
//!   not kernel CPU time and is taken out. A way out that ends in a switch (preempted
//!   before it got back to user mode) is kernel time up to the switch, and after the
//!   switch-in the rest of the way out follows.

use std::collections::BTreeMap;

use kairos_model::{Mode, Profile};

use crate::{Cause, Entry};

/// Per-entry kernel time outside the timed pairs, in ns (0: not measured), with the spread
/// between the threads it was calibrated on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCost {
    pub syscall_ns: u64,
    pub fault_ns: u64,
    /// Half the range of the per-thread figures (a quarter of the cost at least: the
    /// spread between threads measured on a KVM guest).
    pub syscall_spread_ns: u64,
    pub fault_spread_ns: u64,
}

impl PathCost {
    fn of(&self, cause: Cause, completed: bool) -> (u64, u64) {
        // Five threads may all draw the same figure: a quarter of the cost at least.
        let spread = |cost: u64, s: u64| s.max(cost / 4);
        match cause {
            Cause::Syscall => (
                self.syscall_ns,
                spread(self.syscall_ns, self.syscall_spread_ns),
            ),
            Cause::UserFault | Cause::KernelFault if completed => {
                (self.fault_ns, spread(self.fault_ns, self.fault_spread_ns))
            }
            _ => (0, 0),
        }
    }
}

/// One thread's measured kernel time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadKernelTime {
    /// Disjoint, sorted [start, end) spans of kernel time.
    pub spans: Vec<(u64, u64)>,
    /// Of the spans' total, what the entry and exit paths added.
    pub paths_ns: u64,
    /// How the untimed paths were estimated.
    pub paths: PathEstimate,
}

/// The two estimates of a thread's untimed kernel time and what was made of them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathEstimate {
    /// Gaps between entries that hold a way out and a way in.
    pub gaps: u64,
    /// From the calibrated cost per entry, and its standard deviation.
    pub calibrated_ns: f64,
    pub calibrated_sd_ns: f64,
    /// From the thread's samples (None: no time-weighted samples), and its deviation.
    pub sampled_ns: Option<f64>,
    pub sampled_sd_ns: f64,
    /// Samples taken in user mode right where the kernel returned to: kernel time.
    pub held_samples: u64,
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

/// How far past the instruction the kernel returned to a held-back interrupt may land:
/// the return point and the instruction after it (x86 instructions are at most 15 bytes).
const HELD_WINDOW_BYTES: u64 = 16;

/// One sample of a thread, as the path estimate needs it.
struct ThreadSample {
    time: u64,
    weight: u64,
    kernel: bool,
    /// The user-mode leaf address (0 in kernel mode or unknown).
    address: u64,
}

/// Everything known of one thread.
#[derive(Default)]
struct Acc<'e> {
    timed: Vec<(u64, u64)>,
    /// Completed entries that return to user mode, by end time.
    ends: Vec<&'e Entry>,
    starts: Vec<u64>,
    switches: Vec<(u64, Option<u64>)>,
    seen: Vec<u64>,
    samples: Vec<ThreadSample>,
}

/// Measured kernel time of every thread with kernel entries, by thread index.
pub fn per_thread(
    profile: &Profile,
    entries: &[Entry],
    cost: &PathCost,
) -> BTreeMap<u32, ThreadKernelTime> {
    let mut by: BTreeMap<u32, Acc> = BTreeMap::new();
    for e in entries {
        let a = by.entry(e.thread).or_default();
        if e.cause == Cause::ContextSwitch {
            a.switches.push((e.time_ns, e.duration_ns));
            continue;
        }
        a.seen.push(e.time_ns);
        if matches!(e.cause, Cause::Syscall | Cause::UserFault) {
            a.starts.push(e.time_ns);
        }
        let Some(d) = e.duration_ns else { continue };
        let end = e.time_ns.saturating_add(d);
        a.seen.push(end);
        a.timed.push((e.time_ns, end));
        // Only these return to user mode (a fault in kernel mode returns to the kernel).
        if e.cause == Cause::Syscall || (e.cause == Cause::UserFault && e.completed) {
            a.ends.push(e);
        }
    }
    let time_weights = profile.weight_is_time();
    for s in &profile.samples {
        if let Some(a) = by.get_mut(&s.thread) {
            a.seen.push(s.time_ns);
            if time_weights {
                let leaf = profile.leaf_frame(s);
                let kernel = leaf.is_some_and(|f| f.mode == Mode::Kernel);
                a.samples.push(ThreadSample {
                    time: s.time_ns,
                    weight: s.weight,
                    kernel,
                    address: leaf.filter(|_| !kernel).map_or(0, |f| f.address),
                });
            }
        }
    }
    by.into_iter()
        .map(|(thread, a)| (thread, thread_time(profile, a, cost)))
        .collect()
}

/// One thread's spans: the timed ones, the ways out that ended in a switch, and the
/// estimated untimed paths laid over the gaps; less the time switched out.
fn thread_time(profile: &Profile, mut a: Acc<'_>, cost: &PathCost) -> ThreadKernelTime {
    a.seen.sort_unstable();
    a.starts.sort_unstable();
    a.switches.sort_unstable();
    a.ends
        .sort_by_key(|e| e.time_ns + e.duration_ns.unwrap_or(0));
    a.samples.sort_by_key(|s| s.time);
    let next_seen = |t: u64| a.seen.get(a.seen.partition_point(|&x| x <= t)).copied();
    let next_start = |t: u64| a.starts.get(a.starts.partition_point(|&x| x <= t)).copied();
    let next_switch = |t: u64| {
        a.switches
            .get(a.switches.partition_point(|&(x, _)| x <= t))
            .copied()
    };
    // Off the CPU from a sched_switch to the switch-in (PERF_RECORD_SWITCH), or at most
    // until the thread is next seen.
    let back_in = |t: u64, d: Option<u64>| d.map(|d| t.saturating_add(d)).or_else(|| next_seen(t));
    let off = union(
        a.switches
            .iter()
            .filter_map(|&(t, d)| back_in(t, d).map(|b| (t, b)))
            .collect(),
    );
    // Timed, and ways out that ended in a switch (the thread never got back to user mode:
    // nothing seen between the end and the switch), with the rest of the way out after
    // the switch-in.
    let mut fixed = a.timed.clone();
    // (start, length, calibrated cost, its spread, return address) of each gap.
    let mut gaps: Vec<(u64, u64, u64, u64, u64)> = Vec::new();
    for e in &a.ends {
        let end = e.time_ns + e.duration_ns.unwrap_or(0);
        let (c, spread) = cost.of(e.cause, e.completed);
        let seen = next_seen(end);
        match next_switch(end) {
            Some((sw, d)) if seen.is_none_or(|n| sw <= n) => {
                fixed.push((end, sw));
                if let Some(back) = back_in(sw, d) {
                    let until = next_seen(back).unwrap_or(back + c).min(back + c);
                    fixed.push((back, until));
                }
            }
            _ => {
                let stop = [next_start(end), next_switch(end).map(|(x, _)| x)]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(end + c);
                gaps.push((
                    end,
                    stop.saturating_sub(end),
                    c,
                    spread,
                    return_ip(profile, e),
                ));
            }
        }
    }
    let timed_len: u64 = subtract(union(fixed.clone()), &off)
        .iter()
        .map(|&(x, y)| y - x)
        .sum();
    let est = estimate(&a.samples, &gaps, timed_len);
    let credited = lay_over(&gaps, est.combined());
    let mut all = fixed;
    all.extend(
        gaps.iter()
            .zip(&credited)
            .map(|(&(start, ..), &c)| (start, start + c)),
    );
    let spans = subtract(union(all), &off);
    let timed_ns: u64 = subtract(union(a.timed), &off)
        .iter()
        .map(|&(x, y)| y - x)
        .sum();
    let total: u64 = spans.iter().map(|&(x, y)| y - x).sum();
    ThreadKernelTime {
        spans,
        paths_ns: total.saturating_sub(timed_ns),
        paths: est,
    }
}

/// The user address the kernel returns to after entry `e`: the faulting instruction (it
/// runs again), or the instruction after the system call (the leaf of its user stack).
fn return_ip(profile: &Profile, e: &Entry) -> u64 {
    if e.ip != 0 {
        return e.ip;
    }
    e.stack
        .and_then(|s| profile.stacks.get(s as usize))
        .and_then(|s| profile.frames.get(s.frame as usize))
        .filter(|f| f.mode == Mode::User)
        .map_or(0, |f| f.address)
}

impl PathEstimate {
    /// The two estimates weighted by the inverse of their variances, within [0, the gaps].
    pub fn combined(&self) -> f64 {
        let Some(s) = self.sampled_ns else {
            return self.calibrated_ns;
        };
        let (vc, vs) = (
            self.calibrated_sd_ns.powi(2).max(1.0),
            self.sampled_sd_ns.powi(2).max(1.0),
        );
        (self.calibrated_ns / vc + s / vs) / (1.0 / vc + 1.0 / vs)
    }
}

/// Both estimates of the untimed paths over `gaps`, given the thread's samples and the
/// time already timed.
fn estimate(
    samples: &[ThreadSample],
    gaps: &[(u64, u64, u64, u64, u64)],
    timed_len: u64,
) -> PathEstimate {
    let room: u64 = gaps.iter().map(|g| g.1).sum();
    let calibrated: f64 = gaps.iter().map(|g| g.1.min(g.2) as f64).sum();
    // The calibrated figures of the threads are independent draws: their deviations add
    // as one figure per thread, not per gap.
    let sd: f64 = gaps
        .iter()
        .map(|g| {
            if g.2 > 0 {
                g.1.min(g.2) as f64 * g.3 as f64 / g.2 as f64
            } else {
                0.0
            }
        })
        .sum();
    let mut est = PathEstimate {
        gaps: gaps.len() as u64,
        calibrated_ns: calibrated,
        calibrated_sd_ns: sd,
        ..PathEstimate::default()
    };
    if samples.is_empty() {
        return est;
    }
    let (mut kernel_ns, mut kernel_n, mut weight_sum) = (0u64, 0u64, 0u64);
    let starts: Vec<u64> = gaps.iter().map(|g| g.0).collect();
    for s in samples {
        weight_sum += s.weight;
        let held = !s.kernel && s.address != 0 && {
            let i = starts.partition_point(|&t| t <= s.time);
            i.checked_sub(1).and_then(|i| gaps.get(i)).is_some_and(|g| {
                g.4 != 0 && s.time <= g.0 + g.1 && s.address.wrapping_sub(g.4) < HELD_WINDOW_BYTES
            })
        };
        est.held_samples += held as u64;
        if s.kernel || held {
            kernel_ns += s.weight;
            kernel_n += 1;
        }
    }
    let n = samples.len() as f64;
    let mean_weight = weight_sum as f64 / n;
    let k = kernel_n as f64;
    est.sampled_ns = Some((kernel_ns as f64 - timed_len as f64).clamp(0.0, room as f64));
    est.sampled_sd_ns = mean_weight * (k * (1.0 - k / n)).max(1.0).sqrt();
    est
}

/// What each gap is credited so that together they make `total`: the calibrated cost
/// scaled alike for all (`min(gap, x * cost)`), the gap's whole length at most.
fn lay_over(gaps: &[(u64, u64, u64, u64, u64)], total: f64) -> Vec<u64> {
    let room: u64 = gaps.iter().map(|g| g.1).sum();
    if gaps.is_empty() || total <= 0.0 {
        return vec![0; gaps.len()];
    }
    if total >= room as f64 {
        return gaps.iter().map(|g| g.1).collect();
    }
    // Without a calibrated cost every gap weighs alike.
    let weight = |g: &(u64, u64, u64, u64, u64)| if g.2 > 0 { g.2 as f64 } else { 1.0 };
    let sum_at = |x: f64| -> f64 { gaps.iter().map(|g| (g.1 as f64).min(x * weight(g))).sum() };
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while sum_at(hi) < total && hi < 1e15 {
        hi *= 2.0;
    }
    for _ in 0..64 {
        let mid = (lo + hi) / 2.0;
        if sum_at(mid) < total {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    gaps.iter()
        .map(|g| (g.1 as f64).min(hi * weight(g)).round() as u64)
        .collect()
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
    use kairos_model::{Frame, Sample, Stack};

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

    fn cost(syscall_ns: u64, fault_ns: u64) -> PathCost {
        PathCost {
            syscall_ns,
            fault_ns,
            ..PathCost::default()
        }
    }

    /// A profile whose frame 0 is kernel code and frames 1.. are user addresses `user`,
    /// with one stack per frame (stack i has frame i).
    fn profile(user: &[u64]) -> Profile {
        let mut p = Profile::default();
        let frame = |address, mode| Frame {
            address,
            module: None,
            module_offset: 0,
            function: "f".into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode,
        };
        p.frames = std::iter::once(frame(0xffff_ffff_8100_0000, Mode::Kernel))
            .chain(user.iter().map(|&a| frame(a, Mode::User)))
            .collect();
        p.stacks = (0..p.frames.len() as u32)
            .map(|frame| Stack {
                parent: None,
                frame,
            })
            .collect();
        p
    }

    fn sample(t: u64, stack: u32) -> Sample {
        Sample {
            time_ns: t,
            thread: 0,
            cpu: 0,
            stack: Some(stack),
            weight: 1_000,
        }
    }

    /// With the switch-in known (PERF_RECORD_SWITCH): a preemption on the way out of a
    /// system call is kernel time up to the switch, and the rest of the way out follows
    /// the switch-in; a sleep inside a system call is taken out exactly.
    #[test]
    fn preemption_on_the_way_out_and_sleep_with_known_switch_in() {
        let p = Profile::default();
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
        let k = &per_thread(&p, &e, &cost(100, 50))[&0];
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
        let e = vec![
            // A system call 0..1000 with a kernel fault 200..300 inside: 1000, then its
            // path 1000..1100 (the next entry is 400 ns away: user work in between).
            entry(0, Some(1000), Cause::Syscall),
            entry(200, Some(100), Cause::KernelFault),
            // A user fault 1400..1480 and its path.
            entry(1400, Some(80), Cause::UserFault),
            // A fault entry that never completed (inside an interrupt): no time.
            entry(1490, None, Cause::KernelFault),
            // nanosleep 1700..5000, switched out at 1800 until the exit at 5000 (the
            // switch-in is not known: the thread is next seen at 5000).
            entry(1700, Some(3300), Cause::Syscall),
            entry(1800, None, Cause::ContextSwitch),
        ];
        let k = &per_thread(&p, &e, &cost(100, 50))[&0];
        assert_eq!(
            k.spans,
            vec![(0, 1100), (1400, 1530), (1700, 1800), (5000, 5100)]
        );
        assert_eq!(k.total_ns(), 1100 + 130 + 100 + 100);
        assert_eq!(k.paths_ns, 100 + 50 + 100);
        assert_eq!(k.within(1000, 1450), 100 + 50);
    }

    /// 2,000 system calls of 300 ns, 700 ns apart, in a program that returns to 0x1000:
    /// its samples (1 us each) show where its time went. The calibration says 100 ns
    /// per entry; the samples say more and, being many, win.
    #[test]
    fn many_samples_outweigh_the_calibration_and_held_ones_are_kernel_time() {
        let mut p = profile(&[0x1000, 0x1004, 0x5000]);
        let (kernel, at_return, just_after, elsewhere) = (0, 1, 2, 3);
        let e: Vec<Entry> = (0..2000u64)
            .map(|i| Entry {
                stack: Some(at_return),
                ..entry(i * 1000, Some(300), Cause::Syscall)
            })
            .collect();
        // One sample per us: 600 in kernel code (300 inside the timed calls, 300 in the
        // gaps), 1,100 in user mode held back to the return point or the instruction
        // after it, 300 elsewhere in user code.
        let mut s = Vec::new();
        for i in 0..2000u64 {
            let t = i * 1000;
            let stack = match i % 20 {
                0..=5 => kernel,
                6..=11 => at_return,
                12..=16 => just_after,
                _ => elsewhere,
            };
            // Samples in kernel mode land inside the call half the time.
            let at = if stack == kernel && i % 2 == 0 {
                t + 100
            } else {
                t + 500
            };
            s.push(sample(at, stack));
        }
        p.samples = s;
        let k = &per_thread(&p, &e, &cost(100, 100))[&0];
        let est = k.paths;
        assert_eq!(est.gaps, 2000);
        assert_eq!(est.held_samples, 1100);
        // Kernel: 600 samples in kernel code + 1,100 held = 1,700 us, less 600 us timed.
        assert_eq!(est.sampled_ns, Some(1_100_000.0));
        assert_eq!(est.calibrated_ns, 200_000.0);
        let combined = est.combined();
        // 1,100 +- 16 us against 200 +- 50 us: the samples carry nine tenths of the weight.
        assert!(
            (1_000_000.0..1_100_000.0).contains(&combined),
            "{combined} {est:?}"
        );
        // Laid over the gaps alike: each gets the same share.
        let per_gap = (combined / 2000.0).round() as u64;
        let first = k.spans.first().copied().unwrap_or_default();
        assert!(first.1.abs_diff(300 + per_gap) <= 1, "{first:?} {per_gap}");
        assert_eq!(k.paths_ns, k.total_ns() - 600_000);
    }

    /// Few entries: the samples' spread (one sample is a whole period) dwarfs what the
    /// calibration leaves uncertain, so the calibration stands.
    #[test]
    fn few_entries_keep_the_calibrated_cost() {
        let mut p = profile(&[0x1000, 0x5000]);
        let e: Vec<Entry> = (0..10u64)
            .map(|i| Entry {
                stack: Some(1),
                ..entry(i * 1_000_000, Some(1000), Cause::Syscall)
            })
            .collect();
        // 10 ms of samples, 1 ms each, one in kernel code between two calls.
        p.samples = (0..10u64)
            .map(|i| Sample {
                weight: 1_000_000,
                ..sample(i * 1_000_000 + 500_000, if i == 3 { 0 } else { 2 })
            })
            .collect();
        let k = &per_thread(&p, &e, &cost(400, 400))[&0];
        let c = k.paths.combined();
        assert!((c - 4000.0).abs() < 100.0, "{c} {:?}", k.paths);
        assert_eq!(k.paths_ns, 4000);
    }

    #[test]
    fn laying_over_scales_the_costs_and_caps_at_the_gap() {
        let g = |len, c| (0u64, len, c, 0u64, 0u64);
        let gaps = [g(100, 100), g(1000, 100), g(50, 200)];
        assert_eq!(lay_over(&gaps, 250.0), vec![100, 100, 50]);
        assert_eq!(lay_over(&gaps, 500.0), vec![100, 350, 50]);
        assert_eq!(lay_over(&gaps, 1e9), vec![100, 1000, 50]);
        assert_eq!(lay_over(&gaps, 0.0), vec![0, 0, 0]);
        // No calibration: every gap alike.
        let flat = [g(100, 0), g(1000, 0)];
        assert_eq!(lay_over(&flat, 400.0), vec![100, 300]);
    }
}
