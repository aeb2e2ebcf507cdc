//! ELF facts needed while records stream by (build id, load segments), opened once per
//! path; a missing or unreadable file is remembered as missing.

use std::collections::HashMap;
use std::path::PathBuf;

use kairos_symbolize::ElfInfo;

pub struct ElfCache {
    symfs: Option<PathBuf>,
    files: HashMap<String, Option<ElfInfo>>,
}

impl ElfCache {
    pub fn new(symfs: Option<PathBuf>) -> Self {
        ElfCache { symfs, files: HashMap::new() }
    }

    pub fn get(&mut self, path: &str) -> Option<&ElfInfo> {
        let symfs = &self.symfs;
        self.files
            .entry(path.to_string())
            .or_insert_with(|| {
                let p = match symfs {
                    Some(root) => root.join(path.trim_start_matches('/')),
                    None => PathBuf::from(path),
                };
                ElfInfo::open(&p).ok()
            })
            .as_ref()
    }
}
