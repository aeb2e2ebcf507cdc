//! Branch records for synthetic profiles (`kairos lab synthesize --branches DEPTH`).
//!
//! Each thread keeps a ring of its last `depth` user calls and returns, as an LBR
//! filtered to calls and returns does. Between two samples the thread returns from the
//! previously sampled leaf, switches phase when the phase changed (return to `main`,
//! call the new phase), calls and leaves a few other leaves of its phase, and calls the
//! sampled leaf. So every record agrees with the stacks: a call goes from a function to
//! its callee on the sampled stack, a return back to the caller. At every sample the
//! whole ring is stored, newest first (position 0), and `is_new` marks the records made
//! since the previous sample of the thread, exactly as recordings store snapshots.
//!
//! Most intervals hold a few calls (mean about depth/8 leaf visits); about one in fifty
//! holds a burst of `depth` visits, so its snapshot overflows (more branches than the
//! ring holds). Branches are spread evenly over the interval; with `cycles`, each
//! record carries the core cycles since the previous one at 3 GHz, saturating at 16 bits
//! like LBR_INFO.

use std::collections::VecDeque;

use kairos_model::{BranchKind, BranchRecord, FrameIdx};

use crate::emulate::MAX_CYCLES;
use crate::synth::Rng;

/// Core clock used to turn synthetic time into cycles.
const GHZ: f64 = 3.0;
/// One interval in this many holds a burst of `depth` leaf visits.
const BURST_ONE_IN: u64 = 50;

#[derive(Debug, Clone, Copy)]
struct Entry {
    from: FrameIdx,
    to: FrameIdx,
    kind: BranchKind,
    from_address: u64,
    to_address: u64,
    cycles: Option<u32>,
}

/// The frames of the synthetic program, by index (see `scale.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frames {
    pub main: FrameIdx,
    /// Frame of the first leaf; leaves follow.
    pub leaf0: FrameIdx,
    pub leaves: u32,
}

/// One thread's branch ring and where it is.
#[derive(Debug, Clone, Default)]
struct ThreadRing {
    ring: VecDeque<Entry>,
    /// (phase frame, leaf frame) at the previous sample.
    at: Option<(FrameIdx, FrameIdx)>,
    last_branch_ns: u64,
}

/// Makes the snapshots of every sample, thread by thread.
pub(crate) struct Brancher {
    depth: usize,
    cycles: bool,
    frames: Frames,
    rng: Rng,
    threads: Vec<ThreadRing>,
    /// Snapshots whose ring held no record of the previous one although it was full.
    pub overflowed: u64,
}

/// Address of a call site or return site inside `f` (frames are 0x40 bytes or more apart).
fn site(f: FrameIdx, salt: u64) -> u64 {
    0x40_0000 + u64::from(f) * 0x40 + 0x10 + salt % 0x20
}

impl Brancher {
    pub(crate) fn new(
        depth: usize,
        cycles: bool,
        frames: Frames,
        threads: u32,
        seed: u64,
    ) -> Brancher {
        // A generator of its own: the samples stay the same with or without branches.
        let rng = Rng::new(seed ^ 0x6c62_725f_7379_6e74);
        Brancher {
            depth,
            cycles,
            frames,
            rng,
            threads: vec![ThreadRing::default(); threads as usize],
            overflowed: 0,
        }
    }

    /// Appends the snapshot of sample `sample` of `thread` at `time_ns`, whose stack is
    /// main -> `phase` -> `leaf`; `since_ns` is the start of its interval.
    #[allow(clippy::too_many_arguments)] // one sample's facts, each a plain number or index
    pub(crate) fn snapshot(
        &mut self,
        out: &mut Vec<BranchRecord>,
        sample: u32,
        thread: u32,
        since_ns: u64,
        time_ns: u64,
        phase: FrameIdx,
        leaf: FrameIdx,
    ) {
        let f = self.frames;
        let mut path: Vec<(FrameIdx, FrameIdx, BranchKind)> = Vec::with_capacity(8);
        let Some(tr) = self.threads.get_mut(thread as usize) else {
            return;
        };
        match tr.at {
            None => path.push((f.main, phase, BranchKind::Call)),
            Some((ph, lf)) => {
                path.push((lf, ph, BranchKind::Return));
                if ph != phase {
                    path.push((ph, f.main, BranchKind::Return));
                    path.push((f.main, phase, BranchKind::Call));
                }
            }
        }
        let u = (self.rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let visits = if self.rng.next().is_multiple_of(BURST_ONE_IN) {
            self.depth
        } else {
            (u * u * u * self.depth as f64 / 2.0) as usize
        };
        for _ in 0..visits {
            let other = f.leaf0 + (self.rng.next() % u64::from(f.leaves.max(1))) as FrameIdx;
            path.push((phase, other, BranchKind::Call));
            path.push((other, phase, BranchKind::Return));
        }
        path.push((phase, leaf, BranchKind::Call));

        let k = path.len() as u64;
        let span = time_ns.saturating_sub(since_ns);
        let full_before = tr.ring.len() == self.depth;
        for (j, &(from, to, kind)) in path.iter().enumerate() {
            let t = since_ns + span * (j as u64 + 1) / (k + 1);
            let cycles = self.cycles.then(|| {
                let c = (t.saturating_sub(tr.last_branch_ns) as f64 * GHZ).round();
                (c.min(f64::from(MAX_CYCLES)) as u32).max(1)
            });
            tr.last_branch_ns = t;
            let (from_address, to_address) = match kind {
                BranchKind::Call => (site(from, j as u64), site(to, 0) - 0x10),
                _ => (site(from, 0x1f), site(to, j as u64)),
            };
            if tr.ring.len() == self.depth {
                tr.ring.pop_front();
            }
            tr.ring.push_back(Entry {
                from,
                to,
                kind,
                from_address,
                to_address,
                cycles,
            });
        }
        tr.at = Some((phase, leaf));
        let new = path.len().min(self.depth);
        if full_before && path.len() >= self.depth {
            self.overflowed += 1;
        }
        let n = tr.ring.len();
        for (pos, e) in tr.ring.iter().rev().enumerate() {
            out.push(BranchRecord {
                sample,
                position: pos as u16,
                from_address: e.from_address,
                to_address: e.to_address,
                from_frame: Some(e.from),
                to_frame: Some(e.to),
                kind: e.kind,
                cycles: e.cycles,
                mispredicted: false,
                is_new: pos < new && pos < n,
            });
        }
    }
}
