//! A derived profile whose samples are the points of an [`Assignment`].
//!
//! A sample point keeps its sample's stack and CPU; a branch point gets a one-frame stack
//! of its FROM frame (interned, reusing an existing root node when there is one) and the
//! CPU of the sample that carried it. Weights are the points' durations. The derived
//! profile has no branch records (their sample indices would no longer hold); threads,
//! modules, frames, losses, branch info and calls are kept; weights become ns.

use std::collections::HashMap;

use kairos_model::{FrameIdx, Profile, Sample, Stack, StackIdx, ThreadIdx};

use crate::Assignment;

pub fn to_profile(profile: &Profile, a: &Assignment) -> Profile {
    let mut stacks = profile.stacks.clone();
    let mut roots: HashMap<FrameIdx, StackIdx> = HashMap::new();
    for (i, s) in stacks.iter().enumerate().rev() {
        if s.parent.is_none() {
            roots.insert(s.frame, i as StackIdx);
        }
    }
    // The samples of each thread by time, to find a point's sample (and its CPU).
    let mut by_thread: HashMap<ThreadIdx, Vec<&Sample>> = HashMap::new();
    for s in &profile.samples {
        by_thread.entry(s.thread).or_default().push(s);
    }
    by_thread.values_mut().for_each(|v| v.sort_by_key(|s| s.time_ns));
    let mut samples = Vec::with_capacity(a.points.len());
    for pt in &a.points {
        // The sample a point belongs to: the first of its thread at or after the point.
        let owner = by_thread.get(&pt.thread).and_then(|v| {
            let i = v.partition_point(|s| s.time_ns < pt.time_ns);
            v.get(i).copied()
        });
        let stack = if pt.from_branch {
            pt.frame.filter(|&f| (f as usize) < profile.frames.len()).map(|f| {
                *roots.entry(f).or_insert_with(|| {
                    stacks.push(Stack { parent: None, frame: f });
                    (stacks.len() - 1) as StackIdx
                })
            })
        } else {
            owner.filter(|s| s.time_ns == pt.time_ns).and_then(|s| s.stack)
        };
        samples.push(Sample {
            time_ns: pt.time_ns,
            thread: pt.thread,
            cpu: owner.map_or(0, |s| s.cpu),
            stack,
            weight: pt.weight_ns,
        });
    }
    // Clone everything else, so fields added to the model later are kept too.
    let mut out = profile.clone();
    out.stacks = stacks;
    out.samples = samples;
    out.branches = Vec::new();
    // Point weights are always nanoseconds.
    out.weight_event = None;
    out
}
