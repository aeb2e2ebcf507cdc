//! ELF facts needed while records stream by (build id, load segments), opened once per
//! path; a missing or unreadable file is remembered as missing.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;

use kairos_symbolize::ElfInfo;

pub struct ElfCache {
    symfs: Option<PathBuf>,
    files: HashMap<String, Option<ElfInfo>>,
}

impl ElfCache {
    pub fn new(symfs: Option<PathBuf>) -> Self {
        ElfCache {
            symfs,
            files: HashMap::new(),
        }
    }

    /// Where the recorded `path` is read from: under the symfs root when one is given.
    fn disk_path(&self, path: &str) -> PathBuf {
        match &self.symfs {
            Some(root) => root.join(path.trim_start_matches('/')),
            None => PathBuf::from(path),
        }
    }

    pub fn get(&mut self, path: &str) -> Option<&ElfInfo> {
        if !self.files.contains_key(path) {
            let info = ElfInfo::open(self.disk_path(path)).ok();
            self.files.insert(path.to_string(), info);
        }
        self.files.get(path).and_then(Option::as_ref)
    }

    /// The bytes of the file at the recorded `path` (symfs-aware), mapped read-only, for
    /// callers that need section contents (the DWARF unwinder). Not cached: callers keep
    /// what they extract.
    pub fn map(&self, path: &str) -> Option<memmap2::Mmap> {
        let file = File::open(self.disk_path(path)).ok()?;
        // SAFETY: read-only map. As for ElfInfo::open: binaries are replaced, not rewritten
        // in place, by linkers and package managers, so the bytes do not change under us.
        unsafe { memmap2::Mmap::map(&file) }.ok()
    }
}
