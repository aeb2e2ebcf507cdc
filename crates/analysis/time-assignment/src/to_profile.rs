//! A derived profile whose samples are the points of an [`Assignment`].
//!
//! A sample point keeps its sample's stack and CPU; a branch point gets a one-frame stack
//! of its FROM frame (interned, reusing an existing root node when there is one) and the
//! CPU of the sample that carried it. Weights are the points' durations. The derived
//! profile has no branch records (their sample indices would no longer hold); threads,
//! modules, frames, losses, branch info and calls are kept; weights become ns.

use std::collections::HashMap;

use kairos_model::{FrameIdx, Profile, Sample, Stack, StackIdx};

use crate::Assignment;

pub fn to_profile(profile: &Profile, a: &Assignment) -> Profile {
    let mut stacks = profile.stacks.clone();
    let mut roots: HashMap<FrameIdx, StackIdx> = HashMap::new();
    for (i, s) in stacks.iter().enumerate().rev() {
        if s.parent.is_none() {
            roots.insert(s.frame, i as StackIdx);
        }
    }
    let mut samples = Vec::with_capacity(a.points.len());
    for pt in &a.points {
        // The sample whose interval holds the point: its CPU, and its stack for its own point.
        let owner = profile.samples.get(pt.sample as usize);
        let stack = if pt.from_branch {
            pt.frame.filter(|&f| (f as usize) < profile.frames.len()).map(|f| {
                *roots.entry(f).or_insert_with(|| {
                    stacks.push(Stack { parent: None, frame: f });
                    (stacks.len() - 1) as StackIdx
                })
            })
        } else {
            owner.and_then(|s| s.stack)
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
