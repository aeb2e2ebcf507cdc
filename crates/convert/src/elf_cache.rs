//! ELF facts needed while records stream by (build id, load segments), found once per
//! binary through the symboliser's [`Locator`]: `--symfs`, the process's own root while
//! it runs (a container's binaries), the path, the build-id caches, debuginfod. A binary
//! that is found nowhere is remembered as missing.
//!
//! A mapping's binary is keyed by its recorded path, its build id (recorded, or from the
//! file's header table of a perf recording) and, for a process that still runs here with
//! a mount namespace or root of its own, that view: the same path in two containers may
//! be two files. Callers that only have a path get the first binary found for it.

use std::collections::HashMap;
use std::fs::File;

use kairos_perf_data::PerfFile;
use kairos_symbolize::{
    ElfInfo, Located, Locator, ModuleKey, Origin, ProcessMapping, SymbolizerOptions,
};

use crate::processes::Mapping;

type Key = (String, Option<String>, Option<String>);

pub struct ElfCache {
    locator: Locator,
    /// Build ids of the perf.data header (perf record writes those of the binaries with
    /// samples), for MMAP records without one; paths recorded with two ids are left out.
    header_ids: HashMap<String, Option<String>>,
    files: Vec<Located>,
    by_key: HashMap<Key, Option<usize>>,
    by_path: HashMap<String, Option<usize>>,
    notes: Vec<String>,
}

impl ElfCache {
    pub fn new(opts: &SymbolizerOptions, file: Option<&PerfFile>) -> Self {
        let mut header_ids: HashMap<String, Option<String>> = HashMap::new();
        for e in file
            .map(|f| f.features().build_ids.as_slice())
            .unwrap_or(&[])
        {
            if e.build_id.is_empty() || !e.filename.starts_with('/') {
                continue;
            }
            let id = hex(&e.build_id);
            header_ids
                .entry(e.filename.clone())
                .and_modify(|known| {
                    if known.as_deref() != Some(id.as_str()) {
                        *known = None;
                    }
                })
                .or_insert(Some(id));
        }
        ElfCache {
            locator: Locator::new(opts),
            header_ids,
            files: Vec::new(),
            by_key: HashMap::new(),
            by_path: HashMap::new(),
            notes: Vec::new(),
        }
    }

    /// The build id of a mapping: recorded in its MMAP2 record, else in the header.
    pub fn build_id_of(&self, m: &Mapping) -> Option<String> {
        m.build_id
            .clone()
            .or_else(|| self.header_ids.get(&m.path).cloned().flatten())
    }

    /// The binary of mapping `m` of process `pid`.
    pub fn located(&mut self, pid: i32, m: &Mapping) -> Option<&Located> {
        let build_id = self.build_id_of(m);
        let view = self.locator.view(pid).filter(|v| v.foreign).map(|v| v.id);
        let key = (m.path.clone(), build_id.clone(), view);
        let slot = match self.by_key.get(&key) {
            Some(slot) => *slot,
            None => {
                let process = ProcessMapping {
                    pid,
                    start: m.start,
                };
                let slot = self.locate(&m.path, build_id.as_deref(), Some(process));
                self.by_key.insert(key, slot);
                slot
            }
        };
        self.by_path.entry(m.path.clone()).or_insert(slot);
        slot.and_then(|i| self.files.get(i))
    }

    fn locate(
        &mut self,
        path: &str,
        build_id: Option<&str>,
        process: Option<ProcessMapping>,
    ) -> Option<usize> {
        match self.locator.binary(path, build_id, process) {
            Ok(found) => {
                if !found.skipped.is_empty() {
                    self.notes.push(format!(
                        "{path}: read {} {}; skipped {}",
                        found.file.display(),
                        found.origin,
                        found.skipped.join("; ")
                    ));
                }
                self.files.push(found);
                Some(self.files.len() - 1)
            }
            // The symboliser says why once the module has samples.
            Err(_) => None,
        }
    }

    /// The first binary found for the recorded `path` (by [`ElfCache::located`], else
    /// looked up without a process or build id).
    fn by_path(&mut self, path: &str) -> Option<&Located> {
        if !self.by_path.contains_key(path) {
            let id = self.header_ids.get(path).cloned().flatten();
            let slot = self.locate(path, id.as_deref(), None);
            self.by_path.insert(path.to_string(), slot);
        }
        self.by_path
            .get(path)
            .copied()
            .flatten()
            .and_then(|i| self.files.get(i))
    }

    pub fn get(&mut self, path: &str) -> Option<&ElfInfo> {
        self.by_path(path).map(|l| &l.info)
    }

    /// The bytes of the binary found for the recorded `path` (by an earlier
    /// [`ElfCache::get`] or [`ElfCache::located`]), mapped read-only, for callers that
    /// need section contents (the DWARF unwinder). Not cached: callers keep what they
    /// extract.
    pub fn map(&self, path: &str) -> Option<memmap2::Mmap> {
        let i = self.by_path.get(path).copied().flatten()?;
        map_file(self.files.get(i)?)
    }

    /// Remarks on binaries found elsewhere than a file that was there (another build at
    /// the path...), since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

/// The bytes of a binary found, mapped read-only.
pub fn map_file(located: &Located) -> Option<memmap2::Mmap> {
    let file = File::open(&located.file).ok()?;
    // SAFETY: read-only map. As for ElfInfo::open: binaries are replaced, not rewritten
    // in place, by linkers and package managers, so the bytes do not change under us.
    unsafe { memmap2::Mmap::map(&file) }.ok()
}

/// The symboliser's key for a binary found at `located`, recorded as `path`: the plain
/// key where the symboliser would find the same file itself, else the file found.
pub fn module_key(path: &str, build_id: Option<String>, located: Option<&Located>) -> ModuleKey {
    match located {
        Some(l) if !matches!(l.origin, Origin::Path | Origin::Symfs) => ModuleKey::ElfAt {
            path: path.to_string(),
            build_id,
            file: l.file.clone(),
            root: l.root.clone(),
        },
        _ => ModuleKey::Elf {
            path: path.to_string(),
            build_id,
        },
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
