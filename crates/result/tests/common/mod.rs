//! Profiles for tests and the benchmark example (shared with `examples/` via `#[path]`).
#![allow(dead_code)]

use kairos_model::{Frame, LossCounts, Mode, Module, Profile, Sample, StackInterner, Thread};

/// xorshift64*: deterministic, dependency-free randomness for generated profiles.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A small hand-written profile touching every field, including the optional ones.
pub fn small_profile() -> Profile {
    let frame = |name: &str, module, file: Option<&str>, line, depth, mode| Frame {
        address: 0x40_1000 + name.len() as u64 * 16,
        module,
        module_offset: 0x1000 + name.len() as u64,
        function: name.into(),
        file: file.map(Into::into),
        line,
        inline_depth: depth,
        mode,
    };
    let mut p = Profile {
        threads: vec![
            Thread {
                pid: 100,
                tid: 100,
                name: "app".into(),
                process_name: "app".into(),
            },
            Thread {
                pid: 100,
                tid: 101,
                name: "wörker ☃".into(),
                process_name: "app".into(),
            },
        ],
        modules: vec![
            Module {
                path: "/usr/bin/app".into(),
                build_id: "abcdef0123".into(),
            },
            Module {
                path: "[kernel.kallsyms]".into(),
                build_id: String::new(),
            },
        ],
        frames: vec![
            frame(
                "main",
                Some(0),
                Some("src/main.rs"),
                Some(10),
                0,
                Mode::User,
            ),
            frame(
                "compute",
                Some(0),
                Some("src/main.rs"),
                Some(20),
                0,
                Mode::User,
            ),
            frame(
                "inlined_helper",
                Some(0),
                Some("src/helper.rs"),
                Some(3),
                1,
                Mode::User,
            ),
            frame("do_syscall_64", Some(1), None, None, 0, Mode::Kernel),
            frame("[unknown]", None, None, None, 0, Mode::Unknown),
            frame(
                "hv_call",
                None,
                None,
                Some(u32::MAX),
                u16::MAX,
                Mode::Hypervisor,
            ),
        ],
        losses: LossCounts {
            lost_records: 1,
            lost_samples: 2,
            throttled: 3,
            undecodable_records: 4,
        },
        ..Default::default()
    };
    let mut i = StackInterner::default();
    let s_main = i.intern_path(&mut p.stacks, [0]);
    let s_compute = i.intern_path(&mut p.stacks, [0, 1]);
    let s_inl = i.intern_path(&mut p.stacks, [0, 1, 2]);
    let s_sys = i.intern_path(&mut p.stacks, [0, 1, 3]);
    let s_unk = i.intern_path(&mut p.stacks, [4]);
    let s_hv = i.intern_path(&mut p.stacks, [5]);
    let stacks = [
        s_inl, s_inl, s_inl, s_compute, s_compute, s_sys, s_main, s_unk, None, s_hv,
    ];
    p.samples = stacks
        .iter()
        .enumerate()
        .map(|(n, &stack)| Sample {
            time_ns: 1_000_000 + n as u64 * 1_000_000,
            thread: (n % 2) as u32,
            cpu: (n % 3) as u32,
            stack,
            weight: if n == 9 { u64::MAX } else { 1_000_000 },
        })
        .collect();
    p
}

/// A generated profile of `n` samples with realistic shape: a few threads, tens of
/// modules, thousands of frames, deep stacks sharing prefixes, times increasing.
pub fn generated_profile(n: usize, seed: u64) -> Profile {
    let mut r = Rng::new(seed);
    let mut p = Profile::default();
    for t in 0..8 {
        p.threads.push(Thread {
            pid: 4000,
            tid: 4000 + t,
            name: format!("worker-{t}"),
            process_name: "bench".into(),
        });
    }
    for m in 0..20 {
        p.modules.push(Module {
            path: format!("/usr/lib/libm{m}.so"),
            build_id: format!("{:040x}", r.next()),
        });
    }
    for f in 0..5000u64 {
        let module = (f % 17 != 0).then_some((f % 20) as u32);
        p.frames.push(Frame {
            address: 0x7f00_0000_0000 + f * 64,
            module,
            module_offset: f * 64,
            function: format!("ns::function_{}<T>", f % 3000),
            file: (f % 5 != 0).then(|| format!("src/file_{}.cc", f % 200)),
            line: (f % 7 != 0).then_some((f % 1000) as u32),
            inline_depth: (f % 4) as u16,
            mode: if f % 50 == 0 {
                Mode::Kernel
            } else {
                Mode::User
            },
        });
    }
    // A pool of call paths, each a random walk of depth 1..40.
    let mut interner = StackInterner::default();
    let mut leaves = Vec::new();
    for _ in 0..2000 {
        let depth = 1 + r.below(40) as usize;
        let root = r.below(10) as u32;
        let path: Vec<u32> = std::iter::once(root)
            .chain((1..depth).map(|_| r.below(5000) as u32))
            .collect();
        leaves.push(interner.intern_path(&mut p.stacks, path));
    }
    let mut t = 1_000_000_000u64;
    p.samples.reserve(n);
    for i in 0..n {
        t += 1 + r.below(200_000);
        p.samples.push(Sample {
            time_ns: t,
            thread: r.below(8) as u32,
            cpu: r.below(64) as u32,
            stack: if i % 1000 == 999 {
                None
            } else {
                leaves[r.below(leaves.len() as u64) as usize]
            },
            weight: if i % 10 == 0 {
                1 + r.below(5_000_000)
            } else {
                1_000_000
            },
        });
    }
    p.losses = LossCounts {
        lost_records: 7,
        lost_samples: 70,
        throttled: 0,
        undecodable_records: 2,
    };
    p
}
