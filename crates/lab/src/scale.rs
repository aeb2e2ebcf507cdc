//! Synthetic sampled profiles of any size, for measuring the viewer and the reports at
//! scale (`kairos lab synthesize`). They are labelled synthetic everywhere they go: no
//! program ran and nothing was measured.
//!
//! Shape: `threads` threads sampled every `interval_ns` of their own; each sample's stack
//! is `main -> phase_k -> leaf`, where the phase changes every `phase_ns` (so a timeline
//! shows structure) and the leaf is drawn from `functions` leaf functions with a skewed
//! distribution (a few hot ones, a long tail), every leaf appearing at least once when
//! there are at least as many samples as leaves.

use kairos_model::{Frame, Mode, Module, Profile, Sample, StackInterner, Thread};

use crate::synth::Rng;
use crate::{Error, Result};

/// What to make.
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    pub samples: u64,
    pub functions: u32,
    pub threads: u32,
    pub interval_ns: u64,
    pub phase_ns: u64,
    pub seed: u64,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions { samples: 1_000_000, functions: 1000, threads: 4, interval_ns: 1_000_000, phase_ns: 500_000_000, seed: 1 }
    }
}

const PHASES: u32 = 8;
const START_NS: u64 = 1_000_000_000;

/// Builds the profile; sizes beyond what a u32-indexed profile holds are an error.
pub fn synthesize(o: &ScaleOptions) -> Result<Profile> {
    if o.samples == 0 || o.samples > u32::MAX as u64 || o.functions == 0 || o.threads == 0 || o.interval_ns == 0 {
        return Err(Error::InvalidOptions(format!(
            "samples (1 to {}), functions, threads and the interval must be positive; got {} samples, {} functions, {} threads, {} ns",
            u32::MAX,
            o.samples,
            o.functions,
            o.threads,
            o.interval_ns
        )));
    }
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
        modules: vec![Module { path: "synthetic".into(), build_id: String::new() }],
        ..Profile::default()
    };
    p.frames.push(frame("main".into(), 0x40_1000));
    for k in 0..PHASES {
        p.frames.push(frame(format!("phase_{k}"), 0x40_2000 + 0x100 * k as u64));
    }
    let leaf0 = p.frames.len() as u32;
    for f in 0..o.functions {
        p.frames.push(frame(format!("leaf_{f:06}"), 0x50_0000 + 0x40 * f as u64));
    }
    for t in 0..o.threads {
        p.threads.push(Thread { pid: 1000, tid: 1000 + t as i32, name: format!("worker-{t}"), process_name: "synthetic".into() });
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
            let time_ns = START_NS + step * o.interval_ns + (t as u64 * o.interval_ns) / o.threads as u64;
            let phase = ((time_ns - START_NS) / phase_ns + t as u64) % PHASES as u64;
            let leaf = if i < o.functions as u64 && o.samples >= o.functions as u64 {
                i as u32
            } else {
                // Skewed: the square of a uniform number favours the low leaves.
                let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                ((u * u * o.functions as f64) as u32).min(o.functions - 1)
            };
            let stack = interner.intern_path(&mut p.stacks, [0, 1 + phase as u32, leaf0 + leaf]);
            p.samples.push(Sample { time_ns, thread: t, cpu: t % 2, stack, weight: o.interval_ns });
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_leaf_appears_and_samples_are_time_ordered() {
        let o = ScaleOptions { samples: 5000, functions: 1000, threads: 3, ..Default::default() };
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
}
