//! A derived profile whose samples are the points of an [`Assignment`].
//!
//! A sample point keeps its sample's stack and CPU; a branch point gets a one-frame stack
//! of its FROM frame (interned, reusing an existing root node when there is one) and the
//! CPU of the sample that carried it. Weights are the points' durations. The derived
//! profile has no branch records (their sample indices would no longer hold); threads,
//! modules, frames, losses, branch info and calls are kept; weights become ns.

use kairos_model::{Profile, Sample, Stack, StackIdx};

use crate::Assignment;

pub fn to_profile(profile: &Profile, a: &Assignment) -> Profile {
    let mut stacks = profile.stacks.clone();
    let mut roots = root_stacks(profile);
    let mut samples = Vec::with_capacity(a.points.len());
    for pt in &a.points {
        // The sample whose interval holds the point: its CPU, and its stack for its own point.
        let owner = profile.samples.get(pt.sample as usize);
        let stack = if pt.from_branch {
            pt.frame.and_then(|f| {
                let root = roots.get_mut(f as usize)?;
                Some(*root.get_or_insert_with(|| {
                    stacks.push(Stack {
                        parent: None,
                        frame: f,
                    });
                    (stacks.len() - 1) as StackIdx
                }))
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
    with_samples(profile, stacks, samples)
}

/// The root stack node of each frame (by frame index; the first when there are several).
pub(crate) fn root_stacks(profile: &Profile) -> Vec<Option<StackIdx>> {
    let mut roots = vec![None; profile.frames.len()];
    for (i, s) in profile.stacks.iter().enumerate() {
        if let Some(r) = roots
            .get_mut(s.frame as usize)
            .filter(|r: &&mut Option<StackIdx>| s.parent.is_none() && r.is_none())
        {
            *r = Some(i as StackIdx);
        }
    }
    roots
}

/// `profile` with these stacks and samples, weights in ns and no branch records.
pub(crate) fn with_samples(profile: &Profile, stacks: Vec<Stack>, samples: Vec<Sample>) -> Profile {
    // Everything else is kept. Destructured without `..` so a field added to the model
    // later fails to compile here until it is kept or dropped; the samples and branch
    // records (hundreds of millions of them) are never copied.
    let Profile {
        threads,
        modules,
        frames,
        stacks: _,
        samples: _,
        losses,
        branches: _,
        branch_info,
        calls,
        weight_event: _,
        events,
        sample_events,
    } = profile;
    Profile {
        threads: threads.clone(),
        modules: modules.clone(),
        frames: frames.clone(),
        stacks,
        samples,
        losses: *losses,
        branches: Vec::new(),
        branch_info: branch_info.clone(),
        calls: calls.clone(),
        // Point weights are always nanoseconds.
        weight_event: None,
        events: events.clone(),
        sample_events: sample_events.clone(),
    }
}
