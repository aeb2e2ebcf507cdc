//! Small synthetic profiles for unit tests.

use std::collections::HashMap;

use kairos_model::{
    Frame, FrameIdx, Mode, Module, ModuleIdx, Profile, Sample, StackInterner, Thread, ThreadIdx,
};

/// 1 ms: the weight of a 1 kHz cpu-clock sample.
pub const MS: u64 = 1_000_000;

pub struct Builder {
    pub p: Profile,
    interner: StackInterner,
    frames: HashMap<(String, Option<ModuleIdx>, u16), FrameIdx>,
}

impl Builder {
    /// A profile with module 0 = `/bin/app`, the module of frames named by [`Builder::sample`].
    pub fn new() -> Builder {
        let mut b = Builder {
            p: Profile::default(),
            interner: StackInterner::default(),
            frames: HashMap::new(),
        };
        b.module("/bin/app");
        b
    }
    pub fn module(&mut self, path: &str) -> ModuleIdx {
        self.p.modules.push(Module {
            path: path.into(),
            build_id: String::new(),
        });
        (self.p.modules.len() - 1) as ModuleIdx
    }
    pub fn thread(&mut self, pid: i32, tid: i32, name: &str) -> ThreadIdx {
        let process_name = self
            .p
            .threads
            .iter()
            .find(|t| t.pid == pid)
            .map_or(name.to_string(), |t| t.process_name.clone());
        self.p.threads.push(Thread {
            pid,
            tid,
            name: name.into(),
            process_name,
        });
        (self.p.threads.len() - 1) as ThreadIdx
    }
    pub fn frame(&mut self, name: &str, module: Option<ModuleIdx>, inline_depth: u16) -> FrameIdx {
        let frames = &mut self.p.frames;
        *self
            .frames
            .entry((name.to_string(), module, inline_depth))
            .or_insert_with(|| {
                frames.push(Frame {
                    address: 0x1000 + frames.len() as u64,
                    module,
                    module_offset: 0,
                    function: name.into(),
                    file: None,
                    line: None,
                    inline_depth,
                    mode: Mode::User,
                });
                (frames.len() - 1) as FrameIdx
            })
    }
    /// A 1 ms sample whose stack is `root_first` (names in `/bin/app`).
    pub fn sample(&mut self, time_ns: u64, thread: ThreadIdx, root_first: &[&str]) {
        let frames: Vec<FrameIdx> = root_first
            .iter()
            .map(|n| self.frame(n, Some(0), 0))
            .collect();
        self.sample_frames(time_ns, thread, &frames, MS);
    }
    pub fn sample_frames(
        &mut self,
        time_ns: u64,
        thread: ThreadIdx,
        root_first: &[FrameIdx],
        weight: u64,
    ) {
        let stack = self
            .interner
            .intern_path(&mut self.p.stacks, root_first.iter().copied());
        self.p.samples.push(Sample {
            time_ns,
            thread,
            cpu: thread % 2,
            stack,
            weight,
        });
    }
    pub fn build(mut self) -> Profile {
        self.p.samples.sort_by_key(|s| s.time_ns);
        self.p
    }
}
