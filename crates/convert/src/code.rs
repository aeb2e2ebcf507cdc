//! Instruction bytes read from the mapped binaries on disk, one read-only map per file.
//! Only offsets inside the file-backed part of a loaded segment are read: anything else
//! means the mapping and the file on disk disagree (the binary was replaced).

use rustc_hash::FxHashMap as HashMap;

use crate::elf_cache::ElfCache;

/// ELF `e_machine` of x86-64 and i386.
pub const EM_X86_64: u16 = 62;
pub const EM_386: u16 = 3;

/// Bytes at an offset of a binary, with what the ELF header says about the code.
#[derive(Debug, Clone, Copy)]
pub struct Code<'a> {
    pub bytes: &'a [u8],
    /// ELFCLASS64 (else 32-bit).
    pub class64: bool,
    pub machine: u16,
}

#[derive(Default)]
pub struct CodeReader {
    files: HashMap<String, Option<memmap2::Mmap>>,
}

impl CodeReader {
    /// Up to `len` bytes at `offset` of the file recorded as `path`.
    pub fn bytes_at(
        &mut self,
        elves: &mut ElfCache,
        path: &str,
        offset: u64,
        len: usize,
    ) -> Option<Code<'_>> {
        let in_segment = elves.get(path).is_some_and(|i| {
            i.load_segments
                .iter()
                .any(|s| offset >= s.offset && offset < s.offset.saturating_add(s.filesz))
        });
        if !in_segment {
            return None;
        }
        if !self.files.contains_key(path) {
            let m = elves.map(path);
            self.files.insert(path.to_string(), m);
        }
        let map = self.files.get(path)?.as_ref()?;
        let start = usize::try_from(offset).ok()?;
        let bytes = map.get(start..start.saturating_add(len).min(map.len()))?;
        let machine = map
            .get(18..20)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
        // EI_CLASS: 1 = 32-bit, 2 = 64-bit.
        Some(Code {
            bytes,
            class64: map.get(4) != Some(&1),
            machine,
        })
    }

    /// The whole mapped file (for symbol tables), if it could be opened.
    pub fn file(&mut self, elves: &ElfCache, path: &str) -> Option<&[u8]> {
        if !self.files.contains_key(path) {
            let m = elves.map(path);
            self.files.insert(path.to_string(), m);
        }
        self.files.get(path)?.as_deref()
    }
}
