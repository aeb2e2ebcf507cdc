//! Address-level stacks, interned while records stream by, and their expansion into
//! symbolised model frames (one per inlined function) once every module is symbolised.

use rustc_hash::FxHashMap as HashMap;

use kairos_model::{Frame, FrameIdx, Mode, Module, ModuleIdx, Profile, StackIdx};
use kairos_symbolize::{ModuleKey, SymFrame};

use crate::background::Batch;
use crate::tree::Chains;

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
    /// Distinct chains; the tree is made of them at the end (tree.rs).
    chains: Chains,
    /// The tree made of `chains`, and each chain's leaf node in it.
    nodes: Vec<kairos_model::Stack>,
    chain_leaves: Vec<Option<StackIdx>>,
    built: bool,
    /// Modules and frames already handed out by [`RawStacks::take_batch`].
    keys_sent: usize,
    frames_sent: usize,
}

impl RawStacks {
    pub fn module(&mut self, path: &str, build_id: Option<&str>, key: ModuleKey) -> ModuleIdx {
        let id = (path.to_string(), build_id.unwrap_or("").to_string());
        if let Some(&i) = self.module_index.get(&id) {
            return i;
        }
        let i = self.modules.len() as ModuleIdx;
        self.modules.push(Module {
            path: id.0.clone(),
            build_id: id.1.clone(),
        });
        self.module_keys.push(key);
        self.module_index.insert(id, i);
        i
    }

    pub fn frame(&mut self, f: RawFrame) -> u32 {
        let key = RawKey {
            module: f.module,
            at: if f.module.is_some() {
                f.module_offset
            } else {
                f.address
            },
            mode: f.mode,
            is_return_address: f.is_return_address,
        };
        let frames = &mut self.frames;
        *self.frame_index.entry(key).or_insert_with(|| {
            frames.push(f);
            (frames.len() - 1) as u32
        })
    }

    /// Frames made since the last batch.
    pub fn unsent_frames(&self) -> usize {
        self.frames.len() - self.frames_sent
    }

    /// The modules and frames made since the last batch, for the symboliser. Return
    /// addresses are looked up one byte earlier, inside the call instruction.
    pub fn take_batch(&mut self) -> Batch {
        let keys = self
            .module_keys
            .get(self.keys_sent..)
            .unwrap_or(&[])
            .to_vec();
        let frames = self.frames_from(self.frames_sent);
        self.keys_sent = self.module_keys.len();
        self.frames_sent = self.frames.len();
        Batch { keys, frames }
    }

    /// Every module and frame, as one batch.
    pub fn all_frames(&self) -> Batch {
        Batch {
            keys: self.module_keys.clone(),
            frames: self.frames_from(0),
        }
    }

    /// Adds a chain of raw frames given root first; returns its number, which
    /// [`RawStacks::finish`] turns into a stack.
    pub fn chain(&mut self, root_first: &[u32]) -> u32 {
        self.chains.push(root_first)
    }

    /// Whether a raw frame lies in a known module.
    pub fn has_module(&self, id: u32) -> bool {
        self.frames
            .get(id as usize)
            .is_some_and(|f| f.module.is_some())
    }

    fn frames_from(&self, first: usize) -> Vec<(u32, ModuleIdx, u64)> {
        (first..self.frames.len())
            .filter_map(|i| {
                let f = &self.frames[i];
                Some((
                    i as u32,
                    f.module?,
                    f.module_offset
                        .saturating_sub(u64::from(f.is_return_address)),
                ))
            })
            .collect()
    }

    /// Builds the raw stack tree: before [`RawStacks::finish`], on the decoding thread while
    /// the other one symbolises.
    pub fn build_tree(&mut self) {
        if !self.built {
            (self.nodes, self.chain_leaves) = std::mem::take(&mut self.chains).build();
            self.built = true;
        }
    }

    /// `symbols` holds each raw frame's symbols (see [`crate::background`]). Returns the
    /// profile stack of each chain, and for each raw frame of `leaves` (branch
    /// addresses, which belong to no stack) its innermost profile frame: the function
    /// whose code is at the address, inlined or not.
    pub fn finish(
        mut self,
        symbols: &[Vec<SymFrame>],
        profile: &mut Profile,
        leaves: &[u32],
    ) -> (Vec<Option<StackIdx>>, HashMap<u32, FrameIdx>) {
        self.build_tree();
        const NONE: &Vec<SymFrame> = &Vec::new();
        let symbols_of = |f: usize| symbols.get(f).unwrap_or(NONE);
        profile.modules = self.modules;
        // A raw frame becomes one model frame per inline depth, made together the first
        // time a node uses it: `first[f] + depth`.
        let mut first: Vec<FrameIdx> = vec![FrameIdx::MAX; self.frames.len()];
        let mut mapped: Vec<StackIdx> = Vec::with_capacity(self.nodes.len());
        profile.stacks.reserve(self.nodes.len());
        for node in &self.nodes {
            let mut parent = node.parent.and_then(|p| mapped.get(p as usize).copied());
            let f = node.frame as usize;
            let (Some(&raw), syms) = (self.frames.get(f), symbols_of(f)) else {
                // Unreachable (nodes only name frames made before them); keeps indices aligned.
                mapped.push(parent.unwrap_or_default());
                continue;
            };
            let count = syms.len().max(1);
            if first[f] == FrameIdx::MAX {
                first[f] = profile.frames.len() as FrameIdx;
                profile.frames.extend(
                    (0..count).map(|depth| model_frame(&raw, syms.get(depth), depth as u16)),
                );
            }
            // Raw nodes are unique (parent, frame) pairs and each raw frame has model
            // frames of its own, so every model node made here is new: no interning.
            for depth in 0..count {
                profile.stacks.push(kairos_model::Stack {
                    parent,
                    frame: first[f] + depth as FrameIdx,
                });
                parent = Some((profile.stacks.len() - 1) as StackIdx);
            }
            // `count >= 1`, so parent is always set here.
            mapped.push(parent.unwrap_or_default());
        }
        let mut leaf_only: HashMap<u32, FrameIdx> = HashMap::default();
        let mut leaf_frames = HashMap::with_capacity_and_hasher(leaves.len(), Default::default());
        for &id in leaves {
            let (Some(raw), syms) = (self.frames.get(id as usize), symbols_of(id as usize)) else {
                continue;
            };
            let depth = syms.len().max(1) - 1;
            let fi = match first[id as usize] {
                FrameIdx::MAX => *leaf_only.entry(id).or_insert_with(|| {
                    profile
                        .frames
                        .push(model_frame(raw, syms.get(depth), depth as u16));
                    (profile.frames.len() - 1) as FrameIdx
                }),
                base => base + depth as FrameIdx,
            };
            leaf_frames.insert(id, fi);
        }
        let stacks = self
            .chain_leaves
            .iter()
            .map(|leaf| leaf.and_then(|n| mapped.get(n as usize).copied()))
            .collect();
        (stacks, leaf_frames)
    }
}

fn model_frame(raw: &RawFrame, sym: Option<&SymFrame>, depth: u16) -> Frame {
    // Like perf, code without a symbol is "[unknown]"; the module column still tells
    // which file it came from, and the address stays in the frame for later.
    let function = sym
        .map(|s| s.function.clone())
        .unwrap_or_else(|| "[unknown]".to_string());
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
