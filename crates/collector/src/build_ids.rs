//! Build ids of the files a recording maps executable, read by us from each file when its
//! mapping is first seen, and written as the perf.data header's BUILD_ID table (perf record
//! does the same at its end for the files with samples). With them a recording names
//! exactly which build ran, so symbols are found in build-id caches and debuginfod after
//! the binary is gone, and another build at the path is refused.
//!
//! The kernel can put build ids in MMAP2 records itself (`attr.build_id`, 5.12+), but not
//! without harm to others: on a 6.18 kernel, with one such event open, a `perf record`
//! running at the same time got MMAP2 records it could not read and aborted (build-id.c).
//! A profiler must not break the one next to it, so the ids are read here from the files.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

use kairos_perf_data::{PERF_RECORD_MISC_MMAP_BUILD_ID, PERF_RECORD_MMAP2};

use crate::bytes::{u32_at, u64_at};

/// Build ids found so far, one per mapped path.
#[derive(Default)]
pub(crate) struct BuildIds {
    seen: HashSet<Vec<u8>>,
    found: Vec<(Vec<u8>, String)>,
}

impl BuildIds {
    /// Looks at one record; an executable file mapping not seen before has its file read.
    pub(crate) fn offer(&mut self, rec: &[u8]) {
        let misc = rec
            .get(4..6)
            .map_or(0, |m| u16::from_le_bytes([m[0], m[1]]));
        if u32_at(rec, 0) != PERF_RECORD_MMAP2 || misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
            return;
        }
        // MMAP2: header, pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot,
        // flags, filename.
        let (pid, ino, prot) = (u32_at(rec, 8), u64_at(rec, 48), u32_at(rec, 64));
        let Some(name) = rec.get(72..) else { return };
        let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
        if prot & libc::PROT_EXEC as u32 == 0 || !name.starts_with(b"/") {
            return;
        }
        if !self.seen.insert(name.to_vec()) {
            return;
        }
        let path = String::from_utf8_lossy(name).into_owned();
        // The process's own view first (a container's root), then ours; the inode must be
        // the one mapped, or the file at the path is another one.
        let candidates = [format!("/proc/{pid}/root{path}"), path.clone()];
        if let Some(id) = candidates.iter().find_map(|p| read_build_id(p, ino)) {
            self.found.push((id, path));
        }
    }

    /// (build id, path) of every file read.
    pub(crate) fn entries(&self) -> &[(Vec<u8>, String)] {
        &self.found
    }
}

/// The GNU build id of the ELF file at `path`, if its inode is `ino` (0: not known).
fn read_build_id(path: &str, ino: u64) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || (ino != 0 && meta.ino() != ino) {
        return None;
    }
    // SAFETY: a read-only private mapping; a file truncated meanwhile can fault, as for
    // every reader of mapped binaries (perf's and the symbolisers' too).
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let elf = object::File::parse(&*map).ok()?;
    use object::Object;
    let id = elf.build_id().ok()??;
    (!id.is_empty()).then(|| id.to_vec())
}

#[cfg(test)]
#[path = "build_ids_tests.rs"]
mod tests;
