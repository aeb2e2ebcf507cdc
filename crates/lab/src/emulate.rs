//! `emulate_lbr`: what sampling with a user call+return LBR would have recorded, made
//! from an exact trace.
//!
//! Per thread the trace's calls become the call/return sequence ([`crate::timeline`]).
//! Samples fall every `interval_ns` from a seeded phase after the thread's first event;
//! each sample's stack is the calls open at that instant and its branch stack is the last
//! `depth` events before it, newest first, as the ring of LBR registers would hold them.
//!
//! Thread time: the trace records wall-clock entry and exit times, not when the thread
//! was off the CPU, so wall time between the thread's first and last event stands in for
//! its CPU time. That is right for the busy sample programs, and means a sleeping thread
//! would get samples a cpu-clock sampler would not have taken.

use kairos_model::{BranchInfo, BranchRecord, FrameIdx, Profile, Sample, StackIdx, StackInterner};

use crate::error::{Error, Result};
use crate::timeline::{thread_events, ThreadEvents};

/// LBR depths real CPUs have (Nehalem-Haswell 16, Skylake 32, Arch LBR up to 64, some
/// Atoms 8).
pub const DEPTHS: [usize; 4] = [8, 16, 32, 64];
/// The hardware cycle field (LBR_INFO.CYC_CNT) is 16 bits and saturates.
pub const MAX_CYCLES: u32 = 65_535;
/// The filter stated in the emulated result's branch info.
pub const FILTER: &str = "user call+return (emulated)";

/// Everything `emulate_lbr` needs; [`EmulateOptions::new`] gives the usual defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmulateOptions {
    pub interval_ns: u64,
    pub depth: usize,
    /// Give records the cycles since the previous record, as LBR_INFO does.
    pub cycles: bool,
    /// Core clock used to turn ns into cycles.
    pub cpu_ghz: f64,
    /// Seeds each thread's sampling phase, so that a run is repeatable and different
    /// seeds give independent sample positions.
    pub seed: u64,
    /// A fixed offset of the first sample after the thread's first event, instead of the
    /// seeded one (tests; reproducing a given run).
    pub phase_ns: Option<u64>,
}

impl EmulateOptions {
    pub fn new(interval_ns: u64, depth: usize) -> Self {
        EmulateOptions {
            interval_ns,
            depth,
            cycles: false,
            cpu_ghz: 3.0,
            seed: 1,
            phase_ns: None,
        }
    }

    fn check(&self) -> Result<()> {
        if self.interval_ns == 0 {
            return Err(Error::BadInterval);
        }
        if !DEPTHS.contains(&self.depth) {
            return Err(Error::BadDepth(self.depth));
        }
        if !(self.cpu_ghz.is_finite() && self.cpu_ghz > 0.0) {
            return Err(Error::BadCpuGhz(self.cpu_ghz));
        }
        Ok(())
    }
}

/// Emulates sampling every `interval_ns` with a `depth`-deep LBR (seed 1); see
/// [`emulate_lbr_with`].
pub fn emulate_lbr(
    trace: &Profile,
    interval_ns: u64,
    depth: usize,
    cycles: bool,
    cpu_ghz: f64,
) -> Result<Profile> {
    emulate_lbr_with(
        trace,
        &EmulateOptions {
            cycles,
            cpu_ghz,
            ..EmulateOptions::new(interval_ns, depth)
        },
    )
}

/// Emulates LBR sampling of `trace`. The output keeps the trace's threads, modules,
/// frames, losses and calls (so that [`crate::score`] can compare against the truth) and
/// has new stacks, samples, branch records and a [`BranchInfo`] with `emulated: true`.
pub fn emulate_lbr_with(trace: &Profile, opts: &EmulateOptions) -> Result<Profile> {
    opts.check()?;
    let threads = thread_events(trace)?;
    let mut out = Profile {
        threads: trace.threads.clone(),
        modules: trace.modules.clone(),
        frames: trace.frames.clone(),
        losses: trace.losses,
        calls: trace.calls.clone(),
        ..Default::default()
    };
    out.calls.sort_by_key(|c| (c.start_ns, c.thread, c.depth));
    let mut interner = StackInterner::default();
    let mut info = BranchInfo {
        depth: opts.depth as u32,
        has_cycles: opts.cycles,
        filter: FILTER.to_string(),
        emulated: true,
        overflowed_snapshots: 0,
        unclassified: 0,
    };
    // Samples of all threads with their records, merged by time below.
    let mut taken: Vec<(Sample, Vec<BranchRecord>)> = Vec::new();
    for te in &threads {
        info.overflowed_snapshots += sample_thread(te, opts, &mut out, &mut interner, &mut taken);
    }
    taken.sort_by_key(|(s, _)| (s.time_ns, s.thread));
    if taken.len() > u32::MAX as usize {
        return Err(Error::TooManySamples);
    }
    for (i, (s, recs)) in taken.into_iter().enumerate() {
        out.samples.push(s);
        out.branches.extend(recs.into_iter().map(|r| BranchRecord {
            sample: i as u32,
            ..r
        }));
    }
    out.branch_info = Some(info);
    Ok(out)
}

/// splitmix64: a fixed, well-mixed hash, so the phase depends on nothing but the seed.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Takes the samples of one thread; returns how many snapshots overflowed.
fn sample_thread(
    te: &ThreadEvents,
    opts: &EmulateOptions,
    out: &mut Profile,
    interner: &mut StackInterner,
    taken: &mut Vec<(Sample, Vec<BranchRecord>)>,
) -> u64 {
    let Some((first, last)) = te.span() else {
        return 0;
    };
    let events = &te.events;
    let phase = opts
        .phase_ns
        .unwrap_or_else(|| splitmix(opts.seed ^ splitmix(u64::from(te.thread))) % opts.interval_ns);
    // The open calls as the events are replayed: frames, root first.
    let mut open: Vec<FrameIdx> = Vec::new();
    let mut next = 0usize; // events[..next] happened before the current sample
    let mut prev_next: Option<usize> = None; // `next` at the previous sample
    let mut overflowed = 0;
    let mut t = first.saturating_add(phase);
    while t < last {
        while let Some(e) = events.get(next).filter(|e| e.time_ns <= t) {
            match e.kind {
                kairos_model::BranchKind::Call => open.extend(e.to),
                _ => {
                    open.pop();
                }
            }
            next += 1;
        }
        let since_prev = next - prev_next.unwrap_or(0);
        if prev_next.is_some() && since_prev > opts.depth {
            overflowed += 1;
        }
        let stack: Option<StackIdx> = interner.intern_path(&mut out.stacks, open.iter().copied());
        let sample = Sample {
            time_ns: t,
            thread: te.thread,
            cpu: 0,
            stack,
            weight: opts.interval_ns,
        };
        let records = snapshot(events, next, prev_next, opts, &out.frames);
        taken.push((sample, records));
        prev_next = Some(next);
        t = match t.checked_add(opts.interval_ns) {
            Some(n) => n,
            None => break,
        };
    }
    overflowed
}

/// The ring's content after `events[..next]`: the last `depth` events, newest first.
/// A record is new unless it was already in the previous snapshot (index below
/// `prev_next`), which is how overlap between consecutive reads of the ring looks.
fn snapshot(
    events: &[crate::timeline::Event],
    next: usize,
    prev_next: Option<usize>,
    opts: &EmulateOptions,
    frames: &[kairos_model::Frame],
) -> Vec<BranchRecord> {
    let addr = |f: Option<FrameIdx>| {
        f.and_then(|f| frames.get(f as usize))
            .map_or(0, |f| f.address)
    };
    let oldest = next.saturating_sub(opts.depth);
    (oldest..next)
        .rev()
        .enumerate()
        .filter_map(|(position, i)| {
            let e = events.get(i)?;
            let cycles = opts.cycles.then(|| {
                // LBR_INFO counts core cycles since the previous LBR update; the first
                // event of the thread has no predecessor in the trace.
                let dt = i
                    .checked_sub(1)
                    .and_then(|p| events.get(p))
                    .map_or(0, |p| e.time_ns - p.time_ns);
                let c = (dt as f64 * opts.cpu_ghz).round();
                if c >= f64::from(MAX_CYCLES) {
                    MAX_CYCLES
                } else {
                    c as u32
                }
            });
            Some(BranchRecord {
                sample: 0,
                position: position as u16,
                from_address: addr(e.from),
                to_address: addr(e.to),
                from_frame: e.from,
                to_frame: e.to,
                kind: e.kind,
                cycles,
                mispredicted: false,
                is_new: prev_next.is_none_or(|p| i >= p),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
