//! Address-level stacks, interned while records stream by, and their expansion into
//! symbolised model frames (one per inlined function) once every module is symbolised.

use rustc_hash::FxHashMap as HashMap;

use kairos_model::{Frame, FrameIdx, Mode, Module, ModuleIdx, Profile, StackIdx, StackInterner};
use kairos_symbolize::{ModuleKey, SymFrame, Symbolizer};

/// A code location before symbolisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawFrame {
    pub module: Option<ModuleIdx>,
    /// ELF virtual address for files, absolute address otherwise.
    pub module_offset: u64,
    pub address: u64,
    pub mode: Mode,
    /// Return addresses are looked up one byte earlier, inside the call instruction.
    pub is_return_address: bool,
}

/// Key without the process-specific absolute address, so one function of one library
/// is one frame whatever the process and its load address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RawKey {
    module: Option<ModuleIdx>,
    at: u64,
    mode: Mode,
    is_return_address: bool,
}

/// Raw frames, modules and the raw stack tree collected during conversion.
#[derive(Default)]
pub struct RawStacks {
    pub modules: Vec<Module>,
    module_keys: Vec<ModuleKey>,
    module_index: HashMap<(String, String), ModuleIdx>,
    frames: Vec<RawFrame>,
    frame_index: HashMap<RawKey, u32>,
    /// (parent node, raw frame) in insertion order: parents always come first.
    nodes: Vec<kairos_model::Stack>,
    interner: StackInterner,
}

impl RawStacks {
    pub fn module(&mut self, path: &str, build_id: Option<&str>, key: ModuleKey) -> ModuleIdx {
        let id = (path.to_string(), build_id.unwrap_or("").to_string());
        if let Some(&i) = self.module_index.get(&id) {
            return i;
        }
        let i = self.modules.len() as ModuleIdx;
        self.modules.push(Module { path: id.0.clone(), build_id: id.1.clone() });
        self.module_keys.push(key);
        self.module_index.insert(id, i);
        i
    }

    pub fn frame(&mut self, f: RawFrame) -> u32 {
        let key = RawKey {
            module: f.module,
            at: if f.module.is_some() { f.module_offset } else { f.address },
            mode: f.mode,
            is_return_address: f.is_return_address,
        };
        let frames = &mut self.frames;
        *self.frame_index.entry(key).or_insert_with(|| {
            frames.push(f);
            (frames.len() - 1) as u32
        })
    }

    /// Interns a stack given root first; returns its leaf node.
    pub fn stack(&mut self, root_first: impl IntoIterator<Item = u32>) -> Option<StackIdx> {
        self.interner.intern_path(&mut self.nodes, root_first)
    }

    /// Whether a raw frame lies in a known module.
    pub fn has_module(&self, id: u32) -> bool {
        self.frames.get(id as usize).is_some_and(|f| f.module.is_some())
    }

    /// Symbolises every frame and builds the profile's frames and stacks. Returns the
    /// mapping from raw stack node to profile stack node, and for each raw frame of
    /// `leaves` (branch addresses, which belong to no stack) its innermost profile frame:
    /// the function whose code is at the address, inlined or not.
    pub fn finish(self, symbolizer: &mut Symbolizer, profile: &mut Profile, leaves: &[u32]) -> (Vec<StackIdx>, HashMap<u32, FrameIdx>) {
        let symbols = symbolize_all(&self.frames, &self.module_keys, symbolizer);
        let mut frame_index: HashMap<(u32, u16), FrameIdx> = HashMap::default();
        let mut interner = StackInterner::default();
        let mut mapped: Vec<StackIdx> = Vec::with_capacity(self.nodes.len());
        profile.modules = self.modules;
        for node in &self.nodes {
            let mut parent = node.parent.and_then(|p| mapped.get(p as usize).copied());
            let raw = self.frames[node.frame as usize];
            let syms = &symbols[node.frame as usize];
            let count = syms.len().max(1);
            for depth in 0..count {
                let fi = *frame_index.entry((node.frame, depth as u16)).or_insert_with(|| {
                    profile.frames.push(model_frame(&raw, syms.get(depth), depth as u16));
                    (profile.frames.len() - 1) as FrameIdx
                });
                parent = Some(interner.intern(&mut profile.stacks, parent, fi));
            }
            // `count >= 1`, so parent is always set here.
            mapped.push(parent.unwrap_or_default());
        }
        let mut leaf_frames = HashMap::with_capacity_and_hasher(leaves.len(), Default::default());
        for &id in leaves {
            let (Some(raw), Some(syms)) = (self.frames.get(id as usize), symbols.get(id as usize)) else { continue };
            let depth = syms.len().max(1) - 1;
            let fi = *frame_index.entry((id, depth as u16)).or_insert_with(|| {
                profile.frames.push(model_frame(raw, syms.get(depth), depth as u16));
                (profile.frames.len() - 1) as FrameIdx
            });
            leaf_frames.insert(id, fi);
        }
        (mapped, leaf_frames)
    }
}

fn symbolize_all(frames: &[RawFrame], keys: &[ModuleKey], symbolizer: &mut Symbolizer) -> Vec<Vec<SymFrame>> {
    let mut out: Vec<Vec<SymFrame>> = vec![Vec::new(); frames.len()];
    let mut by_module: HashMap<ModuleIdx, Vec<usize>> = HashMap::default();
    for (i, f) in frames.iter().enumerate() {
        if let Some(m) = f.module {
            by_module.entry(m).or_default().push(i);
        }
    }
    let mut modules: Vec<_> = by_module.into_iter().collect();
    modules.sort_by_key(|(m, _)| *m);
    for (m, idxs) in modules {
        let Some(key) = keys.get(m as usize) else { continue };
        let addrs: Vec<u64> = idxs
            .iter()
            .map(|&i| {
                let f = &frames[i];
                f.module_offset.saturating_sub(u64::from(f.is_return_address))
            })
            .collect();
        let results = symbolizer.symbolize(key, &addrs);
        for (i, syms) in idxs.into_iter().zip(results) {
            out[i] = syms;
        }
    }
    out
}

fn model_frame(raw: &RawFrame, sym: Option<&SymFrame>, depth: u16) -> Frame {
    // Like perf, code without a symbol is "[unknown]"; the module column still tells
    // which file it came from, and the address stays in the frame for later.
    let function = sym.map(|s| s.function.clone()).unwrap_or_else(|| "[unknown]".to_string());
    Frame {
        address: raw.address,
        module: raw.module,
        module_offset: raw.module_offset,
        function,
        file: sym.and_then(|s| s.file.clone()),
        line: sym.and_then(|s| s.line),
        inline_depth: depth,
        mode: raw.mode,
    }
}
