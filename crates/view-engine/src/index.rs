//! What the server computes once per profile so that every request is one pass over the
//! samples it selects: function ids (name + module), a call tree of functions (stack nodes
//! whose frames belong to the same function path merged), and per-lane sample lists.

use std::sync::Arc;

use kairos_model::Profile;
use rustc_hash::FxHashMap;

use crate::samples::Samples;
use crate::totals::Totals;

use crate::ids::NONE;

/// Function table shared by a result and the profiles derived from it (which keep its
/// frames), so ids and colours agree across time-assignment methods.
#[derive(Debug)]
pub struct Functions {
    pub name: Vec<String>,
    pub module: Vec<String>,
    /// Function of each frame.
    pub of_frame: Vec<u32>,
    /// Module of each function, into `modules`.
    pub module_id: Vec<u32>,
    pub modules: Vec<String>,
}

impl Functions {
    pub fn new(p: &Profile) -> Functions {
        let mut ids: FxHashMap<(&str, &str), u32> = FxHashMap::default();
        let (mut name, mut module, mut of_frame) =
            (Vec::new(), Vec::new(), Vec::with_capacity(p.frames.len()));
        for f in &p.frames {
            let m = f
                .module
                .and_then(|m| p.modules.get(m as usize))
                .map_or("", |m| short(&m.path));
            let next = name.len() as u32;
            let id = *ids.entry((f.function.as_str(), m)).or_insert(next);
            if id == next {
                name.push(f.function.clone());
                module.push(m.to_string());
            }
            of_frame.push(id);
        }
        let mut mids: FxHashMap<&str, u32> = FxHashMap::default();
        let mut modules = Vec::new();
        let module_id = module
            .iter()
            .map(|m| {
                *mids.entry(m.as_str()).or_insert_with(|| {
                    modules.push(if m.is_empty() {
                        "[unknown]".to_string()
                    } else {
                        m.clone()
                    });
                    (modules.len() - 1) as u32
                })
            })
            .collect();
        Functions {
            name,
            module,
            of_frame,
            module_id,
            modules,
        }
    }
    pub fn len(&self) -> usize {
        self.name.len()
    }
}

/// Last path component: what reports show as the module.
pub fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

pub use crate::lanes::Lane;

/// One profile (a result's own, or derived by a time-assignment method), indexed.
pub struct Index {
    pub profile: Arc<Profile>,
    pub funcs: Arc<Functions>,
    /// Function-path tree: node parent (NONE for roots) and function; parents precede children.
    pub node_parent: Vec<u32>,
    pub node_func: Vec<u32>,
    /// Tree node of each stack node.
    pub stack_node: Vec<u32>,
    /// Children of each node (CSR), and the roots.
    child_start: Vec<u32>,
    child_list: Vec<u32>,
    pub roots: Vec<u32>,
    /// True when no ancestor of the node has the same function (its outermost occurrence),
    /// so inclusive time counts a recursive function once per sample.
    pub outermost: Vec<bool>,
    /// Nodes of each function (CSR).
    fn_start: Vec<u32>,
    fn_list: Vec<u32>,
    pub thread_lanes: Vec<Lane>,
    /// Built with the index for a result's own profile; for a derived one (several
    /// points per sample: hundreds of megabytes of lanes) when first asked for.
    cpu_lanes: std::sync::OnceLock<Vec<Lane>>,
    /// The samples, as columns (the profile's own vector is moved here, leaving it empty).
    pub samples: Samples,
    /// Function of each stack's leaf (NONE without one): per stack rather than per
    /// sample, so it costs no memory per sample and stays in cache.
    stack_func: Vec<u32>,
    /// Tree aggregates of recent selections.
    pub agg: crate::sums::Cache,
    /// Whole-run sums, for selections of the whole run.
    pub totals: Totals,
    /// Sums at block edges, for selections of most of the run: taken while the samples
    /// were read, or built once by [`Index::build_blocks`] (on a thread of its own);
    /// None inside when the samples are too few.
    blocks: std::sync::OnceLock<Option<crate::blocks::Blocks>>,
}

fn csr(n: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; n + 1];
    for (k, _) in pairs.clone() {
        start[k as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut list = vec![0u32; start[n] as usize];
    for (k, v) in pairs {
        list[fill[k as usize] as usize] = v;
        fill[k as usize] += 1;
    }
    (start, list)
}

impl Index {
    /// Indexes `profile`, taking its samples over into columns.
    pub fn new(mut profile: Profile, funcs: Arc<Functions>) -> Index {
        let samples = crate::samples::take(&mut profile.samples);
        let totals = Totals::of(&samples, profile.threads.len(), profile.stacks.len());
        Index::with_samples(profile, samples, totals, funcs)
    }

    /// Indexes `profile`, whose samples are `samples` (its own vector is not read), with
    /// the totals of those samples.
    pub fn with_samples(
        profile: Profile,
        samples: Samples,
        totals: Totals,
        funcs: Arc<Functions>,
    ) -> Index {
        Index::build(profile, samples, totals, funcs, true)
    }

    /// [`Index::with_samples`] for a profile derived by a time-assignment method: its CPU
    /// lanes are built when first asked for, not with the index.
    pub fn derived(
        profile: Profile,
        samples: Samples,
        totals: Totals,
        funcs: Arc<Functions>,
    ) -> Index {
        Index::build(profile, samples, totals, funcs, false)
    }

    fn build(
        profile: Profile,
        samples: Samples,
        totals: Totals,
        funcs: Arc<Functions>,
        cpu_lanes_now: bool,
    ) -> Index {
        let p = &profile;
        let mut node_of: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let (mut node_parent, mut node_func) = (Vec::new(), Vec::new());
        let mut stack_node = Vec::with_capacity(p.stacks.len());
        for s in &p.stacks {
            // Parents precede children in the stack table; a forward reference is damage
            // and makes the node a root rather than a panic.
            let parent = s
                .parent
                .and_then(|q| stack_node.get(q as usize).copied())
                .unwrap_or(NONE);
            let func = funcs
                .of_frame
                .get(s.frame as usize)
                .copied()
                .unwrap_or(NONE);
            let next = node_parent.len() as u32;
            let id = *node_of.entry((parent, func)).or_insert(next);
            if id == next {
                node_parent.push(parent);
                node_func.push(func);
            }
            stack_node.push(id);
        }
        let n = node_parent.len();
        let (child_start, child_list) = csr(
            n,
            (0..n as u32)
                .filter(|&c| node_parent[c as usize] != NONE)
                .map(|c| (node_parent[c as usize], c)),
        );
        let roots: Vec<u32> = (0..n as u32)
            .filter(|&c| node_parent[c as usize] == NONE)
            .collect();
        let nf = funcs.len() + 1;
        let fkey = |f: u32| if f == NONE { funcs.len() as u32 } else { f };
        let (fn_start, fn_list) = csr(nf, (0..n as u32).map(|c| (fkey(node_func[c as usize]), c)));
        // Outermost occurrence: depth-first walk keeping a count per function on the path.
        let mut outermost = vec![true; n];
        let mut on_path = vec![0u32; nf];
        let mut stack: Vec<(u32, bool)> = roots.iter().rev().map(|&r| (r, false)).collect();
        while let Some((v, leaving)) = stack.pop() {
            let f = fkey(node_func[v as usize]) as usize;
            if leaving {
                on_path[f] -= 1;
                continue;
            }
            outermost[v as usize] = on_path[f] == 0;
            on_path[f] += 1;
            stack.push((v, true));
            let (a, b) = (
                child_start[v as usize] as usize,
                child_start[v as usize + 1] as usize,
            );
            stack.extend(child_list[a..b].iter().rev().map(|&c| (c, false)));
        }
        let stack_func: Vec<u32> = stack_node
            .iter()
            .map(|&n| node_func.get(n as usize).copied().unwrap_or(NONE))
            .collect();
        let cpu_lanes = std::sync::OnceLock::new();
        let thread_lanes = if cpu_lanes_now {
            let (threads, cpus) =
                crate::lanes::build(p, &samples, &totals, &stack_func, funcs.len());
            let _ = cpu_lanes.set(cpus);
            threads
        } else {
            crate::lanes::threads(p, &samples, &totals, &stack_func, funcs.len())
        };
        Index {
            profile: Arc::new(profile),
            funcs,
            node_parent,
            node_func,
            stack_node,
            child_start,
            child_list,
            roots,
            outermost,
            fn_start,
            fn_list,
            thread_lanes,
            cpu_lanes,
            samples,
            stack_func,
            agg: Default::default(),
            totals,
            blocks: std::sync::OnceLock::new(),
        }
    }

    /// Builds the sums at block edges unless they are there (see [`crate::blocks`]).
    pub fn build_blocks(&self) {
        self.blocks.get_or_init(|| {
            let cpus = self.totals.cpu.as_ref().map(|c| c.c.len());
            crate::blocks::Blocks::of(
                &self.samples,
                self.totals.stack_slots() - 2,
                self.totals.thread_slots() - 1,
                cpus,
            )
        });
    }

    /// Keeps `b`, the sums at block edges made while the samples were read.
    pub fn set_blocks(&self, b: crate::blocks::Blocks) {
        // Only before any are built: a second set would be of the same samples.
        let _ = self.blocks.set(Some(b));
    }

    /// [`Index::build_blocks`] with blocks of `size` samples (tests).
    #[cfg(test)]
    pub fn build_blocks_of(&self, size: usize) {
        self.blocks.get_or_init(|| {
            let cpus = self.totals.cpu.as_ref().map(|c| c.c.len());
            Some(crate::blocks::Blocks::with_size(
                &self.samples,
                self.totals.stack_slots() - 2,
                self.totals.thread_slots() - 1,
                cpus,
                size,
            ))
        });
    }

    /// The sums at block edges, once built.
    pub fn blocks(&self) -> Option<&crate::blocks::Blocks> {
        self.blocks.get().and_then(|b| b.as_ref())
    }

    /// Builds the sums at block edges of `ix` on a thread of its own: requests answer by
    /// scanning meanwhile.
    pub fn build_blocks_later(ix: &Arc<Index>) {
        let ix = ix.clone();
        // Without a thread requests go on scanning: the same answers, more slowly.
        let _ = std::thread::Builder::new()
            .name("view-blocks".into())
            .spawn(move || ix.build_blocks());
    }

    pub fn children(&self, node: u32) -> &[u32] {
        let i = node as usize;
        match (self.child_start.get(i), self.child_start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.child_list[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Tree nodes whose function is `f`.
    pub fn nodes_of(&self, f: u32) -> &[u32] {
        let i = f as usize;
        match (self.fn_start.get(i), self.fn_start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.fn_list[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Tree node of a sample's leaf, NONE without a stack.
    pub fn leaf_node(&self, sample: usize) -> u32 {
        match self.samples.stack.get(sample) {
            Some(&s) if s != NONE => self.stack_node.get(s as usize).copied().unwrap_or(NONE),
            _ => NONE,
        }
    }

    /// Function of a sample's leaf, NONE without a stack: the same as
    /// `func_of_node(leaf_node(i))` in one lookup.
    #[inline]
    pub fn leaf_func(&self, sample: usize) -> u32 {
        match self.samples.stack.get(sample) {
            Some(&s) if s != NONE => self.stack_func.get(s as usize).copied().unwrap_or(NONE),
            _ => NONE,
        }
    }

    /// Function of stack `s`'s leaf, NONE for an unknown stack.
    pub fn stack_func(&self, s: u32) -> u32 {
        self.stack_func.get(s as usize).copied().unwrap_or(NONE)
    }

    /// Sample times, ascending (absolute ns).
    pub fn times(&self) -> &[u64] {
        &self.samples.time
    }

    pub fn func_of_node(&self, node: u32) -> u32 {
        self.node_func.get(node as usize).copied().unwrap_or(NONE)
    }

    /// Samples with time in `[from, to)` (absolute ns), as an index range.
    pub fn range(&self, from: u64, to: u64) -> std::ops::Range<usize> {
        let a = self.samples.time.partition_point(|&t| t < from);
        let b = self.samples.time.partition_point(|&t| t < to);
        a..b.max(a)
    }

    pub fn lanes(&self, by_cpu: bool) -> &[Lane] {
        if by_cpu {
            self.cpu_lanes()
        } else {
            &self.thread_lanes
        }
    }

    /// The CPU lanes, built on first use for a derived profile.
    pub fn cpu_lanes(&self) -> &[Lane] {
        self.cpu_lanes.get_or_init(|| {
            crate::lanes::cpus(
                &self.samples,
                &self.totals,
                &self.stack_func,
                self.funcs.len(),
            )
        })
    }
}
