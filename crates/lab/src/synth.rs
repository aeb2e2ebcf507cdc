//! Synthetic exact traces of the sample programs, modelled on their C sources: the same
//! functions, call structure and durations. They make the benchmark and the tests
//! independent of a tracer and of the machine's speed; a real trace from
//! `kairos collect trace` is preferred where there is one.

use kairos_model::{Call, Frame, FrameIdx, Mode, Profile, Thread};

/// A tiny deterministic generator (xorshift64*), the one `spikes` itself uses.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let s = seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x2545_F491_4F6C_DD1D);
        Rng(if s == 0 { 1 } else { s })
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(2_685_821_657_736_338_717)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / 9_007_199_254_740_992.0
    }
}

/// Builds a one-thread profile while the caller walks the program.
struct Builder {
    p: Profile,
    depth: u16,
}

impl Builder {
    fn new(process: &str, names: &[&str]) -> Self {
        let frames = names
            .iter()
            .enumerate()
            .map(|(i, n)| Frame {
                address: 0x40_1000 + 0x100 * i as u64,
                module: None,
                module_offset: 0x1000 + 0x100 * i as u64,
                function: (*n).to_string(),
                file: None,
                line: None,
                inline_depth: 0,
                mode: Mode::User,
            })
            .collect();
        let thread = Thread {
            pid: 1,
            tid: 1,
            name: process.into(),
            process_name: process.into(),
        };
        Builder {
            p: Profile {
                threads: vec![thread],
                frames,
                ..Default::default()
            },
            depth: 0,
        }
    }
    /// Records a leaf call of `f` at `t` lasting `d`; returns its end.
    fn leaf(&mut self, f: FrameIdx, t: u64, d: u64) -> u64 {
        self.p.calls.push(Call {
            thread: 0,
            frame: f,
            start_ns: t,
            end_ns: t + d,
            depth: self.depth,
        });
        t + d
    }
    /// Opens a call of `f` at `t`; [`Builder::close`] sets its end.
    fn open(&mut self, f: FrameIdx, t: u64) -> usize {
        self.p.calls.push(Call {
            thread: 0,
            frame: f,
            start_ns: t,
            end_ns: t,
            depth: self.depth,
        });
        self.depth += 1;
        self.p.calls.len() - 1
    }
    fn close(&mut self, i: usize, t: u64) -> u64 {
        self.depth = self.depth.saturating_sub(1);
        if let Some(c) = self.p.calls.get_mut(i) {
            c.end_ns = t;
        }
        t
    }
    fn finish(mut self) -> Profile {
        self.p.calls.sort_by_key(|c| (c.start_ns, c.depth));
        self.p
    }
}

/// Time between two calls of a loop in its caller (loop control, argument set-up).
const GLUE_NS: u64 = 20;

/// `spikes OUT SECONDS SEED` (samples/spikes.c): `main` calls `service_work` for units
/// of 100-300 us and, at exponential gaps of mean 25 ms, `rare_delay`, which spins for
/// 50-195 us. The clock and the random draws are inlined in the program (no calls), so
/// these are the only calls. Returns the trace and the true delay intervals (what the
/// program writes: from its first to its last clock read inside `rare_delay`).
pub fn spikes(seconds: f64, seed: u64) -> (Profile, Vec<(u64, u64)>) {
    const WORK: u32 = 1;
    const DELAY: u32 = 2;
    let mut b = Builder::new("spikes", &["main", "service_work", "rare_delay"]);
    let mut rng = Rng::new(seed);
    let begin = 1_000_000u64;
    let stop = begin + (seconds.max(0.0) * 1e9) as u64;
    let main = b.open(0, begin);
    let gap = |rng: &mut Rng| (-rng.unit().ln() * 25_000_000.0) as u64;
    let mut next_delay = begin + gap(&mut rng);
    let mut delays = Vec::new();
    let mut t = begin + 100;
    while t < stop {
        let us = rng.range(100, 300);
        t = b.leaf(WORK, t, us * 1000) + GLUE_NS;
        if t >= next_delay && t < stop {
            let us = rng.range(50, 195);
            // The spin reads the clock every ~quarter microsecond until the deadline.
            let (start, end) = (t + 10, t + 10 + us * 1000 + 250);
            t = b.leaf(DELAY, t, end + 10 - t) + GLUE_NS;
            delays.push((start, end));
            next_delay = t + gap(&mut rng);
        }
    }
    b.close(main, t + 100);
    (b.finish(), delays)
}

/// `transitions ITER` (samples/transitions.c): per iteration `fig10` calls `p3` (100
/// loops of p3_A -> p3_f1 -> p3_f2 -> (p3_B ~1 us, p3_C ~2 us), ~300 us in all), then
/// `fig8` calls F1, F2, F3 for 60, 180 and 60 us.
pub fn transitions(iterations: u32) -> Profile {
    let names = [
        "main", "p3", "p3_A", "p3_f1", "p3_f2", "p3_B", "p3_C", "F1", "F2", "F3", "fig10", "fig8",
    ];
    let mut b = Builder::new("transitions", &names);
    let main = b.open(0, 1_000_000);
    let mut t = 1_000_100;
    for _ in 0..iterations {
        let fig10 = b.open(10, t);
        let p3 = b.open(1, t + GLUE_NS);
        t += 2 * GLUE_NS;
        for _ in 0..100 {
            let a = b.open(2, t);
            let f1 = b.open(3, t + 5);
            let f2 = b.open(4, t + 10);
            let e = b.leaf(5, t + 15, 1000);
            let e = b.leaf(6, e + 5, 1_950);
            let e = b.close(f2, e + 5);
            let e = b.close(f1, e + 5);
            t = b.close(a, e + 5) + 5;
        }
        t = b.close(p3, t) + 5;
        t = b.close(fig10, t) + GLUE_NS;
        let fig8 = b.open(11, t);
        t += GLUE_NS;
        for (f, us) in [(7u32, 60u64), (8, 180), (9, 60)] {
            t = b.leaf(f, t, us * 1000) + GLUE_NS;
        }
        t = b.close(fig8, t) + GLUE_NS;
    }
    b.close(main, t + 100);
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spikes_has_delays_as_calls() {
        let (p, delays) = spikes(0.5, 1);
        assert!(delays.len() > 5, "{}", delays.len());
        let delay_calls: Vec<_> = p.calls.iter().filter(|c| c.frame == 2).collect();
        assert_eq!(delay_calls.len(), delays.len());
        assert!(delays
            .iter()
            .all(|&(a, b)| (50_000..=200_000).contains(&(b - a))));
        // Each delay lies inside its call.
        assert!(delay_calls
            .iter()
            .zip(&delays)
            .all(|(c, &(a, b))| c.start_ns <= a && b <= c.end_ns));
        // Only main, service_work and rare_delay: the program's only calls.
        assert!(p.calls.iter().all(|c| c.frame <= 2));
        assert!(crate::timeline::thread_events(&p).is_ok_and(|t| t[0].clamped_calls == 0));
    }

    #[test]
    fn transitions_shares_are_about_right() {
        let p = transitions(10);
        let te = crate::timeline::thread_events(&p).expect("valid");
        let mut by = vec![0u64; p.frames.len()];
        for (a, e, f) in te[0].segments() {
            if let Some(f) = f {
                by[f as usize] += e - a;
            }
        }
        let total: u64 = by.iter().sum();
        let f2 = by[8] as f64 / total as f64;
        assert!((0.27..0.33).contains(&f2), "{f2}");
    }
}
