//! Memory objects: what held a sampled address at the sampled moment. In order of
//! precedence: a heap block alive at that time (from the allocation tracker), a static
//! variable (ELF symbol in .data/.bss), the sampled thread's stack, a mapping, unknown.

use std::collections::HashMap;

use crate::AccessSample;

/// Heap blocks are indexed by the 4 KiB pages they cover; larger ones by the 2 MiB spans
/// they cover (a lookup per page of a large program must not scan every large block).
const PAGE: u64 = 4096;
const INDEXED_PAGES: u64 = 256;
const SPAN: u64 = 2 << 20;
/// 2 TiB of spans: beyond it a block is scanned rather than indexed.
const MAX_SPANS: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    Heap,
    Static,
    Stack,
    Mapping,
    Unknown,
}

impl ObjectKind {
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::Heap => "heap",
            ObjectKind::Static => "static",
            ObjectKind::Stack => "stack",
            ObjectKind::Mapping => "mapping",
            ObjectKind::Unknown => "unknown",
        }
    }
}

/// A memory object as reports name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub kind: ObjectKind,
    /// `file:line (512 B)` for heap, `name (8 B)` for statics, `stack of thread T`, a path.
    pub name: String,
    /// Bytes of one instance (0 when unknown).
    pub size: u64,
}

/// One heap block with its lifetime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapBlock {
    pub pid: u32,
    pub addr: u64,
    pub size: u64,
    pub alloc_ns: u64,
    /// None: still allocated at the end.
    pub free_ns: Option<u64>,
    /// The allocation site, `file:line` (or the function when the line is unknown).
    pub site: String,
}

/// A static variable at its run-time address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticVar {
    pub pid: u32,
    pub addr: u64,
    pub size: u64,
    pub name: String,
}

/// A mapping of a process: a file path, `[heap]`, `[stack]`, `[anon]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub pid: u32,
    pub start: u64,
    pub end: u64,
    pub name: String,
}

/// Where an address lies: the object and the offset from the start of its instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub object: u32,
    pub offset: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Heap(String, u64),
    Static(String),
    Stack(u32),
    Mapping(String),
    Unknown,
}

/// Finds the object of each access; built once per result.
#[derive(Debug, Default)]
pub struct ObjectMap {
    objects: Vec<Object>,
    keys: HashMap<Key, u32>,
    heap: Vec<(HeapBlock, u32)>,
    heap_pages: HashMap<(u32, u64), Vec<u32>>,
    /// (pid, address / SPAN) -> large blocks covering part of that span.
    big_blocks: HashMap<(u32, u64), Vec<u32>>,
    vast_blocks: Vec<u32>,
    /// Per process, sorted by address: (start, end, object).
    statics: HashMap<u32, Vec<(u64, u64, u32)>>,
    regions: HashMap<u32, Vec<Region>>,
}

impl ObjectMap {
    pub fn new(heap: Vec<HeapBlock>, statics: Vec<StaticVar>, regions: Vec<Region>) -> ObjectMap {
        let mut m = ObjectMap::default();
        for b in heap {
            let object = m.intern(Key::Heap(b.site.clone(), b.size), || Object {
                kind: ObjectKind::Heap,
                name: format!("{} ({})", b.site, bytes(b.size)),
                size: b.size,
            });
            let i = m.heap.len() as u32;
            let (first, last) = (
                b.addr / PAGE,
                b.addr.saturating_add(b.size.max(1) - 1) / PAGE,
            );
            if last - first < INDEXED_PAGES {
                for p in first..=last {
                    m.heap_pages.entry((b.pid, p)).or_default().push(i);
                }
            } else {
                let (first, last) = (
                    b.addr / SPAN,
                    b.addr.saturating_add(b.size.max(1) - 1) / SPAN,
                );
                if last - first < MAX_SPANS {
                    for span in first..=last {
                        m.big_blocks.entry((b.pid, span)).or_default().push(i);
                    }
                } else {
                    // A size no program maps (a damaged record): scanned, never indexed.
                    m.vast_blocks.push(i);
                }
            }
            m.heap.push((b, object));
        }
        for v in statics {
            let object = m.intern(Key::Static(v.name.clone()), || Object {
                kind: ObjectKind::Static,
                name: format!("{} ({})", v.name, bytes(v.size)),
                size: v.size,
            });
            m.statics.entry(v.pid).or_default().push((
                v.addr,
                v.addr.saturating_add(v.size.max(1)),
                object,
            ));
        }
        for list in m.statics.values_mut() {
            list.sort_unstable();
        }
        for r in regions {
            m.regions.entry(r.pid).or_default().push(r);
        }
        for list in m.regions.values_mut() {
            list.sort_by_key(|r| r.start);
        }
        m
    }

    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    /// The object holding `s.addr` at `s.time_ns`.
    pub fn locate(&mut self, s: &AccessSample) -> Location {
        if let Some((b, object)) = self.heap_block(s.pid, s.addr, s.time_ns) {
            return Location {
                object,
                offset: s.addr - b,
            };
        }
        if let Some(list) = self.statics.get(&s.pid) {
            let i = list.partition_point(|&(start, _, _)| start <= s.addr);
            if let Some(&(start, end, object)) = i.checked_sub(1).and_then(|i| list.get(i)) {
                if s.addr < end {
                    return Location {
                        object,
                        offset: s.addr - start,
                    };
                }
            }
        }
        let region = self
            .region(s.pid, s.addr)
            .map(|r| (r.start, r.end, r.name.clone()));
        match region {
            Some((start, end, name)) => {
                // A thread's stack: the mapping its stack pointer was in, or the main one.
                let own_stack = s.sp.is_some_and(|sp| (start..end).contains(&sp));
                let key = if own_stack || name == "[stack]" {
                    Key::Stack(s.tid)
                } else {
                    Key::Mapping(name.clone())
                };
                let object = self.intern(key.clone(), || match key {
                    Key::Stack(tid) => Object {
                        kind: ObjectKind::Stack,
                        name: format!("stack of thread {tid}"),
                        size: 0,
                    },
                    _ => Object {
                        kind: ObjectKind::Mapping,
                        name,
                        size: end - start,
                    },
                });
                Location {
                    object,
                    offset: s.addr - start,
                }
            }
            None => {
                let object = self.intern(Key::Unknown, || Object {
                    kind: ObjectKind::Unknown,
                    name: "[unknown]".into(),
                    size: 0,
                });
                Location {
                    object,
                    offset: s.addr,
                }
            }
        }
    }

    /// The object holding `addr` of thread `tid` at `t`, for an address that is not a
    /// sampled access (a page fault): as [`ObjectMap::locate`] without a stack pointer.
    pub fn locate_addr(&mut self, pid: u32, tid: u32, addr: u64, t: u64) -> Location {
        let s = AccessSample {
            time_ns: t,
            pid,
            tid,
            ip: 0,
            function: 0,
            addr,
            size: 0,
            direction: crate::Direction::Load,
            weight: 0,
            source: crate::Source::Registers,
            sp: None,
            level: None,
            hitm: false,
            cpu: 0,
            phys_addr: None,
        };
        self.locate(&s)
    }

    /// More mappings (from placement queries), for pages no sample touched.
    pub fn add_regions(&mut self, regions: Vec<Region>) {
        for r in regions {
            let list = self.regions.entry(r.pid).or_default();
            if !list.iter().any(|x| x.start == r.start && x.end == r.end) {
                list.push(r);
            }
        }
        for list in self.regions.values_mut() {
            list.sort_by_key(|r| r.start);
        }
    }

    /// Every object holding a byte of `[lo, hi)` of `pid` at some time of `[t0, t1]`, into
    /// `out`: the heap blocks alive then, else the static variables, else the mapping (a
    /// page of small blocks belongs to each of them).
    pub fn owners(&mut self, pid: u32, lo: u64, hi: u64, (t0, t1): (u64, u64), out: &mut Vec<u32>) {
        out.clear();
        let alive = |b: &HeapBlock| {
            b.pid == pid
                && b.addr < hi
                && lo < b.addr.saturating_add(b.size.max(1))
                && b.alloc_ns <= t1
                && b.free_ns.is_none_or(|f| t0 < f)
        };
        let pages = (lo / PAGE..=hi.saturating_sub(1) / PAGE)
            .flat_map(|p| self.heap_pages.get(&(pid, p)).into_iter().flatten());
        let spans = (lo / SPAN..=hi.saturating_sub(1) / SPAN)
            .flat_map(|sp| self.big_blocks.get(&(pid, sp)).into_iter().flatten());
        for &i in pages.chain(spans).chain(self.vast_blocks.iter()) {
            let (b, object) = &self.heap[i as usize];
            if alive(b) && !out.contains(object) {
                out.push(*object);
            }
        }
        if !out.is_empty() {
            return;
        }
        if let Some(list) = self.statics.get(&pid) {
            // Statics do not overlap: the one holding `lo`, then those starting inside.
            let first = list
                .partition_point(|&(start, _, _)| start <= lo)
                .saturating_sub(1);
            for &(start, end, object) in list
                .iter()
                .skip(first)
                .take_while(|&&(start, _, _)| start < hi)
            {
                if start < hi && lo < end && !out.contains(&object) {
                    out.push(object);
                }
            }
        }
        if out.is_empty() {
            out.push(self.locate_addr(pid, pid, lo, t1).object);
        }
    }

    fn heap_block(&self, pid: u32, addr: u64, t: u64) -> Option<(u64, u32)> {
        let alive = |i: &u32| {
            let (b, _) = &self.heap[*i as usize];
            b.pid == pid
                && b.addr <= addr
                && addr - b.addr < b.size.max(1)
                && b.alloc_ns <= t
                && b.free_ns.is_none_or(|f| t < f)
        };
        let page = self
            .heap_pages
            .get(&(pid, addr / PAGE))
            .into_iter()
            .flatten();
        let span = self
            .big_blocks
            .get(&(pid, addr / SPAN))
            .into_iter()
            .flatten();
        page.chain(span)
            .chain(self.vast_blocks.iter())
            .find(|i| alive(i))
            .map(|&i| {
                let (b, object) = &self.heap[i as usize];
                (b.addr, *object)
            })
    }

    fn region(&self, pid: u32, addr: u64) -> Option<&Region> {
        let list = self.regions.get(&pid)?;
        let i = list.partition_point(|r| r.start <= addr);
        list[..i].iter().rev().take(4).find(|r| addr < r.end)
    }

    fn intern(&mut self, key: Key, make: impl FnOnce() -> Object) -> u32 {
        if let Some(&i) = self.keys.get(&key) {
            return i;
        }
        let i = self.objects.len() as u32;
        self.objects.push(make());
        self.keys.insert(key, i);
        i
    }
}

/// `512 B`, `64 KiB`, `3 MiB`: sizes as object names show them.
pub fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}
