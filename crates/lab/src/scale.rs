//! Synthetic sampled profiles of any size, for measuring the viewer and the reports at
//! scale (`kairos lab synthesize`). They are labelled synthetic everywhere they go: no
//! program ran and nothing was measured.
//!
//! Shape: `threads` threads sampled every `interval_ns` of their own; each sample's stack
//! is `main -> phase_k -> leaf`, where the phase changes every `phase_ns` (so a timeline
//! shows structure) and the leaf is drawn from `functions` leaf functions with a skewed
//! distribution (a few hot ones, a long tail), every leaf appearing at least once when
//! there are at least as many samples as leaves.
//!
//! With `branch_depth` > 0 every sample also carries a snapshot of branch records that
//! agrees with the stacks (see [`crate::scale_branches`]); the samples are the same with
//! or without them, so the two results can be compared.

use kairos_model::{BranchInfo, Frame, Mode, Module, Profile, Sample, StackInterner, Thread};

use crate::emulate::DEPTHS;
use crate::scale_branches::{Brancher, Frames};
use crate::synth::Rng;
use crate::{Error, Result};

/// Filter named in the branch info of synthetic records.
pub const SYNTHETIC_FILTER: &str = "user call+return (synthetic)";

/// What to make.
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    pub samples: u64,
    pub functions: u32,
    pub threads: u32,
    pub interval_ns: u64,
    pub phase_ns: u64,
    pub seed: u64,
    /// LBR depth of the branch records to add (8, 16, 32 or 64); 0: none.
    pub branch_depth: u32,
    /// Whether branch records carry cycles since the previous record.
    pub branch_cycles: bool,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions {
            samples: 1_000_000,
            functions: 1000,
            threads: 4,
            interval_ns: 1_000_000,
            phase_ns: 500_000_000,
            seed: 1,
            branch_depth: 0,
            branch_cycles: false,
        }
    }
}

const PHASES: u32 = 8;
const START_NS: u64 = 1_000_000_000;

/// Builds the profile; sizes beyond what a u32-indexed profile holds are an error.
pub fn synthesize(o: &ScaleOptions) -> Result<Profile> {
    check(o)?;
    let (mut p, leaf0) = skeleton(o);
    let mut brancher = (o.branch_depth > 0).then(|| {
        let frames = Frames {
            main: 0,
            leaf0,
            leaves: o.functions,
        };
        Brancher::new(
            o.branch_depth as usize,
            o.branch_cycles,
            frames,
            o.threads,
            o.seed,
        )
    });
    if brancher.is_some() {
        p.branches
            .reserve((o.samples * u64::from(o.branch_depth)) as usize);
    }
    let mut interner = StackInterner::default();
    let mut rng = Rng::new(o.seed);
    p.samples.reserve(o.samples as usize);
    let per_thread = o.samples.div_ceil(o.threads as u64);
    let phase_ns = o.phase_ns.max(1);
    'outer: for step in 0..per_thread {
        for t in 0..o.threads {
            let i = step * o.threads as u64 + t as u64;
            if i >= o.samples {
                break 'outer;
            }
            // Threads are offset so their samples interleave.
            let time_ns =
                START_NS + step * o.interval_ns + (t as u64 * o.interval_ns) / o.threads as u64;
            let phase = ((time_ns - START_NS) / phase_ns + t as u64) % PHASES as u64;
            let leaf = if i < o.functions as u64 && o.samples >= o.functions as u64 {
                i as u32
            } else {
                // Skewed: the square of a uniform number favours the low leaves.
                let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                ((u * u * o.functions as f64) as u32).min(o.functions - 1)
            };
            let stack = interner.intern_path(&mut p.stacks, [0, 1 + phase as u32, leaf0 + leaf]);
            if let Some(b) = brancher.as_mut() {
                let since = time_ns.saturating_sub(o.interval_ns);
                b.snapshot(
                    &mut p.branches,
                    p.samples.len() as u32,
                    t,
                    since,
                    time_ns,
                    1 + phase as u32,
                    leaf0 + leaf,
                );
            }
            p.samples.push(Sample {
                time_ns,
                thread: t,
                cpu: t % 2,
                stack,
                weight: o.interval_ns,
            });
        }
    }
    if let Some(b) = brancher {
        p.branch_info = Some(BranchInfo {
            depth: o.branch_depth,
            has_cycles: o.branch_cycles,
            filter: SYNTHETIC_FILTER.into(),
            emulated: false,
            overflowed_snapshots: b.overflowed,
            unclassified: 0,
        });
    }
    Ok(p)
}

/// Sizes a u32-indexed profile holds, and a depth the LBR has.
fn check(o: &ScaleOptions) -> Result<()> {
    if o.samples == 0
        || o.samples > u32::MAX as u64
        || o.functions == 0
        || o.threads == 0
        || o.interval_ns == 0
    {
        return Err(Error::InvalidOptions(format!(
            "samples (1 to {}), functions, threads and the interval must be positive; got {} samples, {} functions, {} threads, {} ns",
            u32::MAX,
            o.samples,
            o.functions,
            o.threads,
            o.interval_ns
        )));
    }
    if o.branch_depth > 0 && !DEPTHS.contains(&(o.branch_depth as usize)) {
        return Err(Error::BadDepth(o.branch_depth as usize));
    }
    if o.branch_depth > 0 && o.samples.saturating_mul(u64::from(o.branch_depth)) > u32::MAX as u64 {
        return Err(Error::InvalidOptions(format!(
            "{} samples with {} branch records each exceed the 2^32 records a result holds; use fewer samples or a smaller depth",
            o.samples, o.branch_depth
        )));
    }
    Ok(())
}

/// The module, the frames (`main`, the phases, then the leaves) and the threads; and the
/// index of the first leaf frame.
fn skeleton(o: &ScaleOptions) -> (Profile, u32) {
    let frame = |function: String, address: u64| Frame {
        address,
        module: Some(0),
        module_offset: address - 0x40_0000,
        function,
        file: Some("synthetic.c".into()),
        line: None,
        inline_depth: 0,
        mode: Mode::User,
    };
    let mut p = Profile {
        modules: vec![Module {
            path: "synthetic".into(),
            build_id: String::new(),
        }],
        ..Profile::default()
    };
    p.frames.push(frame("main".into(), 0x40_1000));
    for k in 0..PHASES {
        p.frames
            .push(frame(format!("phase_{k}"), 0x40_2000 + 0x100 * k as u64));
    }
    let leaf0 = p.frames.len() as u32;
    for f in 0..o.functions {
        p.frames
            .push(frame(format!("leaf_{f:06}"), 0x50_0000 + 0x40 * f as u64));
    }
    for t in 0..o.threads {
        p.threads.push(Thread {
            pid: 1000,
            tid: 1000 + t as i32,
            name: format!("worker-{t}"),
            process_name: "synthetic".into(),
        });
    }
    (p, leaf0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_leaf_appears_and_samples_are_time_ordered() {
        let o = ScaleOptions {
            samples: 5000,
            functions: 1000,
            threads: 3,
            ..Default::default()
        };
        let p = synthesize(&o).unwrap_or_default();
        assert_eq!(p.samples.len(), 5000);
        assert!(p.samples.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        let mut leaves = std::collections::HashSet::new();
        for s in &p.samples {
            leaves.insert(p.leaf_frame(s).map(|f| f.function.clone()));
        }
        assert_eq!(leaves.len(), 1000);
        assert!(synthesize(&ScaleOptions { samples: 0, ..o }).is_err());
    }

    #[test]
    fn branch_records_agree_with_the_stacks() {
        let o = ScaleOptions {
            samples: 3000,
            functions: 50,
            threads: 3,
            interval_ns: 100_000,
            phase_ns: 20_000_000,
            ..Default::default()
        };
        let plain = synthesize(&o).unwrap_or_default();
        let p = synthesize(&ScaleOptions {
            branch_depth: 16,
            branch_cycles: true,
            ..o
        })
        .unwrap_or_default();
        // The same samples with or without branch records.
        assert_eq!(p.samples, plain.samples);
        assert!(plain.branches.is_empty() && plain.branch_info.is_none());
        let info = p.branch_info.clone().unwrap_or_default();
        assert_eq!((info.depth, info.has_cycles), (16, true));
        assert!(
            info.overflowed_snapshots > 0 && info.overflowed_snapshots < 300,
            "{}",
            info.overflowed_snapshots
        );
        let name = |f: Option<u32>| {
            f.and_then(|f| p.frames.get(f as usize))
                .map_or("", |f| f.function.as_str())
        };
        let mut per_sample = vec![0usize; p.samples.len()];
        for (k, b) in p.branches.iter().enumerate() {
            per_sample[b.sample as usize] += 1;
            let (from, to) = (name(b.from_frame), name(b.to_frame));
            match b.kind {
                kairos_model::BranchKind::Call => assert!(
                    (from == "main" && to.starts_with("phase_"))
                        || (from.starts_with("phase_") && to.starts_with("leaf_")),
                    "{from} -> {to}"
                ),
                _ => assert!(
                    (from.starts_with("leaf_") && to.starts_with("phase_"))
                        || (from.starts_with("phase_") && to == "main")
                ),
            }
            assert!(b.cycles.is_some_and(|c| c > 0 && c <= crate::MAX_CYCLES));
            if b.position == 0 {
                // The newest record is the call into the sampled leaf, from its caller.
                let s = &p.samples[b.sample as usize];
                let leaf = p.leaf_frame(s).map(|f| f.function.as_str());
                assert_eq!((b.kind, Some(to)), (kairos_model::BranchKind::Call, leaf));
                assert!(b.is_new);
            } else {
                // Newest first, and new records come before old ones.
                let prev = &p.branches[k - 1];
                assert_eq!((prev.sample, prev.position + 1), (b.sample, b.position));
                assert!(prev.is_new || !b.is_new);
            }
        }
        assert!(per_sample.iter().all(|&n| (1..=16).contains(&n)));
        assert!(synthesize(&ScaleOptions {
            branch_depth: 12,
            ..Default::default()
        })
        .is_err());
    }
}
