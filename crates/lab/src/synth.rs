//! Synthetic exact traces of the sample programs, modelled on their C sources: the same
//! functions, call structure and durations. They make the benchmark and the tests
//! independent of a tracer and of the machine's speed; a real trace from
//! `kairos collect trace` is preferred where there is one.

use kairos_model::{Call, Frame, FrameIdx, Mode, Profile, Thread};

/// A tiny deterministic generator (xorshift64*), the one `spikes` itself uses.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x2545_F491_4F6C_DD1D);
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
        let thread = Thread { pid: 1, tid: 1, name: process.into(), process_name: process.into() };
        Builder { p: Profile { threads: vec![thread], frames, ..Default::default() }, depth: 0 }
    }
    /// Records a leaf call of `f` at `t` lasting `d`; returns its end.
    fn leaf(&mut self, f: FrameIdx, t: u64, d: u64) -> u64 {
        self.p.calls.push(Call { thread: 0, frame: f, start_ns: t, end_ns: t + d, depth: self.depth });
        t + d
    }
    /// Opens a call of `f` at `t`; [`Builder::close`] sets its end.
    fn open(&mut self, f: FrameIdx, t: u64) -> usize {
        self.p.calls.push(Call { thread: 0, frame: f, start_ns: t, end_ns: t, depth: self.depth });
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

/// Cost of a small traced helper call (now_ns, rnd, ...).
const HELPER_NS: u64 = 25;

/// `spikes OUT SECONDS SEED`: `service_work` units of 10-50 us with `rnd_range`/`rnd`
/// and `now_ns` calls around them, and every ~25 ms (exponential gaps) a `rare_delay` of
/// 50-195 us that calls `now_ns` about once a microsecond. Returns the trace and the
/// true delay intervals.
pub fn spikes(seconds: f64, seed: u64) -> (Profile, Vec<(u64, u64)>) {
    const MAIN: u32 = 0;
    const WORK: u32 = 1;
    const DELAY: u32 = 2;
    const NOW: u32 = 3;
    const RANGE: u32 = 4;
    const RND: u32 = 5;
    const UNIT: u32 = 6;
    let mut b = Builder::new("spikes", &["main", "service_work", "rare_delay", "now_ns", "rnd_range", "rnd", "rnd_unit"]);
    let mut rng = Rng::new(seed);
    let begin = 1_000_000u64;
    let stop = begin + (seconds.max(0.0) * 1e9) as u64;
    let main = b.open(MAIN, begin);
    let gap = |rng: &mut Rng| (-rng.unit().ln() * 25_000_000.0) as u64;
    let mut next_delay = begin + gap(&mut rng);
    let mut delays = Vec::new();
    let mut t = begin + 100;
    // One rnd_range -> rnd pair: the random draw before each unit or delay.
    let draw = |b: &mut Builder, t: u64| {
        let r = b.open(RANGE, t);
        let e = b.leaf(RND, t + 5, HELPER_NS);
        b.close(r, e + 5)
    };
    while t < stop {
        t = draw(&mut b, t);
        let us = rng.range(10, 50);
        t = b.leaf(WORK, t + 5, us * 1000) + 5;
        t = b.leaf(NOW, t, HELPER_NS) + 5;
        if t >= next_delay && t < stop {
            t = draw(&mut b, t);
            let us = rng.range(50, 195);
            let d = b.open(DELAY, t + 5);
            let start = b.leaf(NOW, t + 10, HELPER_NS);
            let mut c = start;
            while c < start + us * 1000 {
                c = b.leaf(NOW, c + 1000, HELPER_NS);
            }
            delays.push((start, c));
            t = b.close(d, c + 5) + 5;
            t = b.leaf(NOW, t, HELPER_NS) + 5;
            let u = b.open(UNIT, t);
            let e = b.leaf(RND, t + 5, HELPER_NS);
            t = b.close(u, e + 5) + 5;
            next_delay = t + gap(&mut rng);
        }
    }
    b.close(main, t + 100);
    (b.finish(), delays)
}

/// `transitions ITER`: per iteration `p3` (100 loops of p3_A -> p3_f1 -> p3_f2 -> (p3_B
/// ~1 us, p3_C ~2 us), ~300 us in all) then F1, F2, F3 of 60, 180 and 60 us.
pub fn transitions(iterations: u32) -> Profile {
    let names = ["main", "p3", "p3_A", "p3_f1", "p3_f2", "p3_B", "p3_C", "F1", "F2", "F3"];
    let mut b = Builder::new("transitions", &names);
    let main = b.open(0, 1_000_000);
    let mut t = 1_000_100;
    for _ in 0..iterations {
        let p3 = b.open(1, t);
        t += 5;
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
        for (f, us) in [(7u32, 60u64), (8, 180), (9, 60)] {
            t = b.leaf(f, t, us * 1000) + 5;
        }
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
        let delay_calls = p.calls.iter().filter(|c| c.frame == 2).count();
        assert_eq!(delay_calls, delays.len());
        assert!(delays.iter().all(|&(a, b)| (50_000..=200_000).contains(&(b - a))));
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
