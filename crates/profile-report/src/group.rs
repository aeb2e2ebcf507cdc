//! Grouping of samples: what a row of a hotspot table stands for.
//!
//! A [`Grouper`] turns samples into small integer group ids, memoised per frame, stack
//! and thread so that a large profile costs one hash look-up per sample, not a string
//! build per sample.

use rustc_hash::FxHashMap as HashMap;
use std::fmt;
use std::str::FromStr;

use kairos_model::{Frame, FrameIdx, Profile, Sample, StackIdx, ThreadIdx};
use kairos_report::{Cell, Column};

use crate::Error;

/// What to group samples by. Serialised by its name ([`GroupBy::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// `name (pid)`.
    Process,
    /// The leaf frame's module (full path).
    Module,
    /// Function name + module; unknown frames as `[unknown] (module)`.
    Function,
    /// The whole stack, `root;...;leaf`.
    Callstack,
    /// `name (tid)`.
    Thread,
    /// `cpu N`.
    Cpu,
}

impl GroupBy {
    pub const ALL: [GroupBy; 6] = [
        GroupBy::Process,
        GroupBy::Module,
        GroupBy::Function,
        GroupBy::Callstack,
        GroupBy::Thread,
        GroupBy::Cpu,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Process => "process",
            GroupBy::Module => "module",
            GroupBy::Function => "function",
            GroupBy::Callstack => "callstack",
            GroupBy::Thread => "thread",
            GroupBy::Cpu => "cpu",
        }
    }

    /// Whether a sample can belong to several groups at once (every function or module on
    /// its stack), which is what makes an inclusive "total" meaningful.
    pub fn has_total(self) -> bool {
        matches!(self, GroupBy::Function | GroupBy::Module)
    }

    /// Columns naming a group (Function tables also show the module).
    pub(crate) fn label_columns(self) -> Vec<Column> {
        match self {
            GroupBy::Process => vec![Column::left("Process")],
            GroupBy::Module => vec![Column::left("Module")],
            GroupBy::Function => vec![Column::left("Function"), Column::left("Module")],
            GroupBy::Callstack => vec![Column::left("Callstack")],
            GroupBy::Thread => vec![Column::left("Thread")],
            GroupBy::Cpu => vec![Column::left("CPU")],
        }
    }
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GroupBy {
    type Err = Error;
    fn from_str(s: &str) -> Result<GroupBy, Error> {
        let l = s.trim().to_ascii_lowercase();
        GroupBy::ALL
            .into_iter()
            .find(|g| g.as_str() == l)
            .ok_or_else(|| Error::UnknownGroupBy(s.to_string()))
    }
}

/// Identity of a group. Ordering (labels, then `id`) is the tie-break of every sort.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    /// What the label columns show.
    pub labels: Vec<String>,
    /// Keeps apart groups whose labels coincide (two `libfoo.so` at different paths).
    pub id: Option<u32>,
}

impl Key {
    pub fn cells(&self) -> Vec<Cell> {
        self.labels.iter().map(|l| Cell::text(l.clone())).collect()
    }
    /// One-string name, e.g. for timeline column headers: `main (app)`.
    pub fn name(&self) -> String {
        match self.labels.as_slice() {
            // `[unknown] (libc.so.6)` already names its module.
            [f, m] if !m.is_empty() && !f.ends_with(&format!("({m})")) => format!("{f} ({m})"),
            [f, ..] => f.clone(),
            [] => String::new(),
        }
    }
}

/// Label of samples that carry no call chain.
pub(crate) const NO_STACK: &str = "[no stack]";
const UNKNOWN: &str = "[unknown]";

/// Assigns group ids to samples.
pub(crate) struct Grouper<'p> {
    p: &'p Profile,
    by: GroupBy,
    keys: Vec<Key>,
    index: HashMap<Key, u32>,
    /// Group of each frame index (`u32::MAX` not yet known); `by_frame` holds indices
    /// past the frame table (a damaged profile).
    frame_groups: Vec<u32>,
    by_frame: HashMap<FrameIdx, u32>,
    /// Group by what decides a frame's key (function name unless unknown, module), so
    /// that the many frames of one function build their key once.
    by_identity: HashMap<(Option<&'p str>, Option<u32>), u32>,
    by_stack: HashMap<StackIdx, u32>,
    by_thread: HashMap<ThreadIdx, u32>,
    /// `seen[id] == stamp` marks ids already taken for the current sample (dedupe for
    /// inclusive counts without a per-sample set).
    seen: Vec<u64>,
    stamp: u64,
}

impl<'p> Grouper<'p> {
    pub fn new(p: &'p Profile, by: GroupBy) -> Grouper<'p> {
        Grouper {
            p,
            by,
            keys: Vec::new(),
            index: HashMap::default(),
            frame_groups: vec![u32::MAX; p.frames.len()],
            by_frame: HashMap::default(),
            by_identity: HashMap::default(),
            by_stack: HashMap::default(),
            by_thread: HashMap::default(),
            seen: Vec::new(),
            stamp: 0,
        }
    }

    pub fn by(&self) -> GroupBy {
        self.by
    }

    pub fn key(&self, id: u32) -> &Key {
        &self.keys[id as usize]
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    fn intern(&mut self, key: Key) -> u32 {
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = self.keys.len() as u32;
        self.keys.push(key.clone());
        self.index.insert(key, id);
        self.seen.push(0);
        id
    }

    /// The group a sample's own (self) time goes to.
    pub fn self_group(&mut self, s: &Sample) -> u32 {
        match self.by {
            GroupBy::Process | GroupBy::Thread => {
                if let Some(&id) = self.by_thread.get(&s.thread) {
                    return id;
                }
                let label = match (self.p.threads.get(s.thread as usize), self.by) {
                    (Some(t), GroupBy::Process) => format!("{} ({})", t.process_name, t.pid),
                    (Some(t), _) => format!("{} ({})", t.name, t.tid),
                    (None, _) => UNKNOWN.to_string(),
                };
                let id = self.intern(Key {
                    labels: vec![label],
                    id: None,
                });
                self.by_thread.insert(s.thread, id);
                id
            }
            GroupBy::Cpu => self.intern(Key {
                labels: vec![format!("cpu {}", s.cpu)],
                id: None,
            }),
            GroupBy::Callstack => match s.stack {
                Some(st) if self.p.stacks.get(st as usize).is_some() => {
                    if let Some(&id) = self.by_stack.get(&st) {
                        return id;
                    }
                    let mut names: Vec<String> = walk(self.p, Some(st))
                        .map(|f| function_name(self.p, self.p.frames.get(f as usize)))
                        .collect();
                    names.reverse();
                    let id = self.intern(Key {
                        labels: vec![names.join(";")],
                        id: None,
                    });
                    self.by_stack.insert(st, id);
                    id
                }
                _ => self.no_stack(),
            },
            GroupBy::Function | GroupBy::Module => match walk(self.p, s.stack).next() {
                Some(leaf) => self.frame_group(leaf),
                None => self.no_stack(),
            },
        }
    }

    /// Every group the sample counts towards inclusively, each once: all functions
    /// (modules) on its stack for Function (Module), else just the self group.
    pub fn inclusive_groups(&mut self, s: &Sample, out: &mut Vec<u32>) {
        out.clear();
        self.stamp += 1;
        if self.by.has_total() {
            for f in walk(self.p, s.stack) {
                let id = self.frame_group(f);
                if self.seen[id as usize] != self.stamp {
                    self.seen[id as usize] = self.stamp;
                    out.push(id);
                }
            }
        }
        if out.is_empty() {
            out.push(self.self_group(s));
        }
    }

    /// Group of one frame (Function or Module grouping; others fall back to Function).
    pub fn frame_group(&mut self, f: FrameIdx) -> u32 {
        match self.frame_groups.get(f as usize) {
            Some(&id) if id != u32::MAX => return id,
            Some(_) => {}
            None => {
                if let Some(&id) = self.by_frame.get(&f) {
                    return id;
                }
            }
        }
        let p = self.p;
        let frame = p.frames.get(f as usize);
        let module = frame.and_then(|fr| fr.module);
        let identity = match self.by {
            GroupBy::Module => (None, module),
            _ => (
                frame
                    .map(|fr| fr.function.as_str())
                    .filter(|name| !is_unknown(name)),
                module,
            ),
        };
        let id = match self.by_identity.get(&identity) {
            Some(&id) => id,
            None => {
                let key = match self.by {
                    GroupBy::Module => Key {
                        labels: vec![module_path(p, module).to_string()],
                        id: module,
                    },
                    _ => Key {
                        labels: vec![function_name(p, frame), module_base(p, module).to_string()],
                        id: module,
                    },
                };
                let id = self.intern(key);
                self.by_identity.insert(identity, id);
                id
            }
        };
        match self.frame_groups.get_mut(f as usize) {
            Some(slot) => *slot = id,
            None => {
                self.by_frame.insert(f, id);
            }
        }
        id
    }

    pub(crate) fn no_stack(&mut self) -> u32 {
        let labels = match self.by {
            GroupBy::Function => vec![NO_STACK.to_string(), String::new()],
            _ => vec![NO_STACK.to_string()],
        };
        self.intern(Key { labels, id: None })
    }
}

/// Frame indices of a stack, leaf first. Bounded by the number of stack nodes so that a
/// corrupt parent cycle ends instead of looping forever; bad indices end the walk.
pub(crate) fn walk(p: &Profile, stack: Option<StackIdx>) -> impl Iterator<Item = FrameIdx> + '_ {
    let mut next = stack;
    let mut steps = 0usize;
    std::iter::from_fn(move || {
        steps += 1;
        if steps > p.stacks.len() {
            return None;
        }
        let node = p.stacks.get(next? as usize)?;
        next = node.parent;
        Some(node.frame)
    })
}

/// Display name of a frame's function. Unknown frames of one module are merged into
/// `[unknown] (module)`: per-address placeholders would scatter their time over many rows.
pub(crate) fn function_name(p: &Profile, frame: Option<&Frame>) -> String {
    match frame {
        Some(f) if !is_unknown(&f.function) => f.function.clone(),
        Some(f) if f.module.is_some() => format!("{UNKNOWN} ({})", module_base(p, f.module)),
        _ => UNKNOWN.to_string(),
    }
}

fn is_unknown(name: &str) -> bool {
    name.is_empty() || name.starts_with(UNKNOWN)
}

fn module_path(p: &Profile, m: Option<u32>) -> &str {
    match m.and_then(|m| p.modules.get(m as usize)) {
        Some(m) if !m.path.is_empty() => &m.path,
        _ => UNKNOWN,
    }
}

/// File name of a module: enough to tell libraries apart in a function table.
pub(crate) fn module_base(p: &Profile, m: Option<u32>) -> &str {
    let path = module_path(p, m);
    path.rsplit('/')
        .next()
        .filter(|b| !b.is_empty())
        .unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Builder;
    use kairos_model::Stack;

    #[test]
    fn parses_group_by_with_helpful_error() {
        for g in GroupBy::ALL {
            assert_eq!(g.to_string().parse::<GroupBy>(), Ok(g));
        }
        assert_eq!("Function".parse::<GroupBy>(), Ok(GroupBy::Function));
        let e = "symbol"
            .parse::<GroupBy>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(e, "unknown grouping `symbol`; valid values: process, module, function, callstack, thread, cpu");
    }

    #[test]
    fn unknown_frames_merge_per_module() {
        let mut b = Builder::new();
        let libc = b.module("/lib/libc.so.6");
        let t = b.thread(1, 1, "app");
        let u1 = b.frame("[unknown]", Some(libc), 0);
        let u2 = b.frame("", Some(libc), 0);
        let u3 = b.frame("", None, 0);
        b.sample_frames(1, t, &[u1], 1);
        b.sample_frames(2, t, &[u2], 1);
        b.sample_frames(3, t, &[u3], 1);
        let p = b.build();
        let mut g = Grouper::new(&p, GroupBy::Function);
        let ids: Vec<u32> = p.samples.iter().map(|s| g.self_group(s)).collect();
        assert_eq!(ids[0], ids[1]);
        assert_eq!(g.key(ids[0]).labels, ["[unknown] (libc.so.6)", "libc.so.6"]);
        assert_eq!(g.key(ids[2]).labels, ["[unknown]", "[unknown]"]);
        assert_eq!(g.key(ids[0]).name(), "[unknown] (libc.so.6)");
        assert_eq!(g.key(ids[2]).name(), "[unknown] ([unknown])");
    }

    #[test]
    fn walk_survives_cycles_and_bad_indices() {
        let p = Profile {
            stacks: vec![
                Stack {
                    parent: Some(1),
                    frame: 0,
                },
                Stack {
                    parent: Some(0),
                    frame: 7,
                },
            ],
            ..Profile::default()
        };
        assert_eq!(walk(&p, Some(0)).count(), 2);
        assert_eq!(walk(&p, Some(5)).count(), 0);
        assert_eq!(function_name(&p, p.frames.get(7)), "[unknown]");
    }
}
