//! From a sample's call chain to a raw stack: the chain cache first (chains.rs), then,
//! for a chain seen for the first time, each address to its module and offset through
//! the process's mappings at that moment (per-process address cache in front).

use rustc_hash::FxHashMap as HashMap;

use kairos_model::Mode;
use kairos_symbolize::ModuleKey;

use crate::callchain::{split_into, ChainEntry};
use crate::elf_cache::ElfCache;
use crate::frames::{RawFrame, RawStacks};
use crate::processes::Mapping;
use crate::{mode_of, State};

/// Second key word of a chain as recorded (then the IP and the raw words) and of a chain
/// unwound with DWARF (then each entry's address and flags), after the process word.
const RAW_CHAIN: u64 = 1 << 16;
const UNWOUND_CHAIN: u64 = 2 << 16;
/// Process key of kernel frames, which are the same in every process.
const KERNEL_FRAMES: u64 = u64::MAX;

impl State {
    /// The raw stack node of a sample's chain: from the chain cache when the same chain
    /// (same words, same process generation) was seen before, else resolved and interned.
    pub(crate) fn stack_of(&mut self, s: &kairos_perf_data::Sample<'_>, pid: i32) -> Option<u32> {
        let process = self.generations.key(pid);
        let ip_mode = mode_of(s.misc);
        let ip = s.ip.unwrap_or(0);
        let callchain = s.callchain.unwrap_or_default();
        match (s.regs_user.as_ref(), s.stack_user) {
            (Some(regs), Some(stack)) => {
                split_into(&mut self.chain, callchain.iter(), ip, ip_mode);
                // Only the first dyn_size bytes were copied; the rest of the buffer is padding.
                let valid = s.stack_user_dyn_size.map_or(stack.len(), |n| {
                    usize::try_from(n).unwrap_or(usize::MAX).min(stack.len())
                });
                self.unwinder
                    .unwind(pid, regs, &stack[..valid], &mut self.chain);
                let key = self.chains.own_key();
                for e in &self.chain {
                    key.extend_from_slice(&e.address.to_le_bytes());
                    key.extend_from_slice(&u64::from(entry_flags(e)).to_le_bytes());
                }
                let head = [process, UNWOUND_CHAIN];
                if let Some(node) = self.chains.get_own(&head) {
                    return node;
                }
                let node = self.intern_chain(pid, process);
                self.chains.insert_own(&head, node);
                node
            }
            _ => {
                // The node depends only on these: the words as recorded suffice as key,
                // hashed and compared where they lie in the record.
                let head = [process, RAW_CHAIN | ip_mode as u64, ip];
                let slot = s.cpu.unwrap_or(0);
                if let Some(node) = self.chains.get_recent(slot, &head, callchain.as_bytes()) {
                    return node;
                }
                split_into(&mut self.chain, callchain.iter(), ip, ip_mode);
                let node = self.intern_chain(pid, process);
                self.chains
                    .insert_recent(slot, &head, callchain.as_bytes(), node);
                node
            }
        }
    }

    /// Interns the chain in `self.chain` (leaf first) as a raw stack.
    fn intern_chain(&mut self, pid: i32, process: u64) -> Option<u32> {
        self.ids.clear();
        for i in (0..self.chain.len()).rev() {
            let e = self.chain[i];
            let id = self.frame_id(pid, process, &e);
            self.ids.push(id);
        }
        Some(self.raw.chain(&self.ids))
    }

    /// [`State::raw_frame`] through the per-process address cache.
    pub(crate) fn frame_id(&mut self, pid: i32, process: u64, e: &ChainEntry) -> u32 {
        let process = if e.mode == Mode::Kernel {
            KERNEL_FRAMES
        } else {
            process
        };
        let flags = entry_flags(e);
        if let Some(id) = self.frame_cache.get(process, e.address, flags) {
            return id;
        }
        let id = self.raw_frame(pid, e);
        self.frame_cache.insert(process, e.address, flags, id);
        id
    }

    fn raw_frame(&mut self, pid: i32, e: &ChainEntry) -> u32 {
        let kernel = e.mode == Mode::Kernel;
        let mut f = RawFrame {
            module: None,
            module_offset: e.address,
            address: e.address,
            mode: e.mode,
            is_return_address: e.is_return_address,
        };
        if kernel {
            let key = if self.kernel_symbols {
                ModuleKey::Kernel
            } else {
                ModuleKey::Anonymous
            };
            let m = *self
                .kernel_module
                .get_or_insert_with(|| self.raw.module("[kernel.kallsyms]", None, key));
            f.module = Some(m);
        } else if let Some(map) = self
            .table
            .find(pid, false, e.address)
            .filter(|m| m.executable)
        {
            let (module, offset) = resolve_user(
                &mut self.raw,
                &mut self.elves,
                &mut self.perf_maps,
                pid,
                map,
                e.address,
            );
            f.module = Some(module);
            f.module_offset = offset;
            self.notes.extend(self.elves.take_notes());
        }
        self.raw.frame(f)
    }
}

/// Maps a user address to its module and ELF virtual address (or absolute address for
/// code covered by a perf map: JIT code in anonymous memory, and binaries that are gone
/// when a perf-PID.map describes the process instead).
fn resolve_user(
    raw: &mut RawStacks,
    elves: &mut ElfCache,
    perf_maps: &mut PerfMaps,
    pid: i32,
    map: &Mapping,
    addr: u64,
) -> (u32, u64) {
    let path = map.path.as_str();
    if is_anonymous(path) {
        let name = format!("[perf-{pid}.map]");
        let m = raw.module(&name, None, ModuleKey::PerfMap { pid });
        return (m, addr);
    }
    let file_offset = addr.wrapping_sub(map.start).wrapping_add(map.pgoff);
    let recorded_id = elves.build_id_of(map);
    let found = if path.starts_with('[') {
        None
    } else {
        elves.located(pid, map)
    };
    if found.is_none() && !path.starts_with('[') && perf_maps.exists(pid) {
        let name = format!("{path} [perf-{pid}.map]");
        return (raw.module(&name, None, ModuleKey::PerfMap { pid }), addr);
    }
    let info = found.map(|l| &l.info);
    let build_id = recorded_id.or_else(|| info.and_then(|i| i.build_id.clone()));
    let vaddr = info
        .and_then(|i| kairos_symbolize::file_offset_to_elf_vaddr(i, file_offset))
        .unwrap_or(file_offset);
    let key = if path.starts_with('[') {
        ModuleKey::Anonymous
    } else {
        crate::elf_cache::module_key(path, build_id.clone(), found)
    };
    (raw.module(path, build_id.as_deref(), key), vaddr)
}

/// Which processes have a perf map file, asked once per pid.
pub(crate) struct PerfMaps {
    dirs: Vec<std::path::PathBuf>,
    known: HashMap<i32, bool>,
}

impl PerfMaps {
    pub(crate) fn new(dirs: Vec<std::path::PathBuf>) -> Self {
        PerfMaps {
            dirs,
            known: HashMap::default(),
        }
    }

    fn exists(&mut self, pid: i32) -> bool {
        let dirs = &self.dirs;
        *self.known.entry(pid).or_insert_with(|| {
            dirs.iter()
                .any(|d| d.join(format!("perf-{pid}.map")).is_file())
        })
    }
}

/// Mode and return flag of a chain entry, for cache keys.
pub(crate) fn entry_flags(e: &ChainEntry) -> u16 {
    e.mode as u16 | (u16::from(e.is_return_address) << 8)
}

pub(crate) fn is_anonymous(path: &str) -> bool {
    path.is_empty()
        || path.starts_with("//anon")
        || path.starts_with("[anon")
        || path.starts_with("/memfd:")
        || path == "[heap]"
        || path == "[stack]"
}
