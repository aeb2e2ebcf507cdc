//! Small synthetic profiles for the tests.
#![allow(dead_code)]

use kairos_model::{
    BranchInfo, BranchKind, BranchRecord, Frame, FrameIdx, Mode, Module, Profile, Sample, Stack,
    StackIdx, Thread,
};

pub const MS: u64 = 1_000_000;

pub struct B {
    pub p: Profile,
}

/// One record of a snapshot as the tests write it: (from, to, kind, cycles, new).
pub type R = (
    Option<FrameIdx>,
    Option<FrameIdx>,
    BranchKind,
    Option<u32>,
    bool,
);

impl B {
    pub fn new(depth: u32, has_cycles: bool) -> B {
        let mut p = Profile::default();
        p.modules.push(Module {
            path: "/bin/app".into(),
            build_id: String::new(),
        });
        p.threads.push(Thread {
            pid: 1,
            tid: 1,
            name: "app".into(),
            process_name: "app".into(),
        });
        p.threads.push(Thread {
            pid: 1,
            tid: 2,
            name: "worker".into(),
            process_name: "app".into(),
        });
        p.branch_info = Some(BranchInfo {
            depth,
            has_cycles,
            filter: "user call+return".into(),
            ..Default::default()
        });
        B { p }
    }
    pub fn frame(&mut self, name: &str) -> FrameIdx {
        if let Some(i) = self.p.frames.iter().position(|f| f.function == name) {
            return i as FrameIdx;
        }
        self.p.frames.push(Frame {
            address: 0x1000 + self.p.frames.len() as u64 * 0x100,
            module: Some(0),
            module_offset: 0,
            function: name.into(),
            file: None,
            line: None,
            inline_depth: 0,
            mode: Mode::User,
        });
        (self.p.frames.len() - 1) as FrameIdx
    }
    pub fn stack(&mut self, leaf: FrameIdx) -> StackIdx {
        if let Some(i) = self
            .p
            .stacks
            .iter()
            .position(|s| s.parent.is_none() && s.frame == leaf)
        {
            return i as StackIdx;
        }
        self.p.stacks.push(Stack {
            parent: None,
            frame: leaf,
        });
        (self.p.stacks.len() - 1) as StackIdx
    }
    /// Adds a sample with its snapshot given oldest first.
    pub fn sample(
        &mut self,
        t: u64,
        thread: u32,
        leaf: Option<FrameIdx>,
        weight: u64,
        snap_oldest_first: &[R],
    ) {
        let stack = leaf.map(|l| self.stack(l));
        let si = self.p.samples.len() as u32;
        self.p.samples.push(Sample {
            time_ns: t,
            thread,
            cpu: thread,
            stack,
            weight,
        });
        let n = snap_oldest_first.len();
        for (k, &(from, to, kind, cycles, is_new)) in snap_oldest_first.iter().enumerate() {
            self.p.branches.push(BranchRecord {
                sample: si,
                position: (n - 1 - k) as u16,
                from_address: 0,
                to_address: 0,
                from_frame: from,
                to_frame: to,
                kind,
                cycles,
                mispredicted: false,
                is_new,
            });
        }
    }
}

/// The paper's figure 8: F1, F2, F3 run in turn, shares 10%:30%:10% (main has the other
/// 50%). Ten 1 ms samples; the last, in F3 at 10 ms, carries two new records: the
/// returns from F1 and from F2 (oldest first). Returns (profile, [F1, F2, F3]).
pub fn figure8() -> (Profile, [FrameIdx; 3]) {
    let mut b = B::new(16, false);
    let main = b.frame("main");
    let f = [b.frame("F1"), b.frame("F2"), b.frame("F3")];
    let leaves = [main, main, main, main, main, f[0], f[1], f[1], f[1]];
    for (i, &l) in leaves.iter().enumerate() {
        b.sample((i as u64 + 1) * MS, 0, Some(l), MS, &[]);
    }
    b.sample(
        10 * MS,
        0,
        Some(f[2]),
        MS,
        &[
            (Some(f[0]), Some(main), BranchKind::Return, None, true),
            (Some(f[1]), Some(main), BranchKind::Return, None, true),
        ],
    );
    (b.p, f)
}
