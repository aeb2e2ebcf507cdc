//! What Kairos needs to know about one ELF file, read once: build id, PT_LOAD segments,
//! whether it carries symbols and DWARF, and its `.gnu_debuglink`.

use std::fs::File;
use std::path::Path;

use object::elf;
use object::read::elf::{ElfFile, FileHeader, ProgramHeader};
use object::{FileKind, Object, ObjectSection, ObjectSymbol, SectionKind};

use crate::SymbolizeError;

/// One `PT_LOAD` program header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    /// `PF_X`/`PF_W`/`PF_R` bits.
    pub flags: u32,
}

/// Facts about one ELF file, cached so the file need not stay open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElfInfo {
    /// GNU build id (`NT_GNU_BUILD_ID` note), lowercase hex.
    pub build_id: Option<String>,
    /// `PT_LOAD` segments in file order.
    pub load_segments: Vec<LoadSegment>,
    /// A `.symtab` with at least one defined symbol.
    pub has_symtab: bool,
    /// A `.dynsym` with at least one defined symbol.
    pub has_dynsym: bool,
    /// `.debug_info` with contents (not a NOBITS placeholder as in stripped files).
    pub has_debug_info: bool,
    /// `.gnu_debuglink`: file name and CRC-32 of the debug file.
    pub debuglink: Option<(String, u32)>,
}

impl ElfInfo {
    /// Read the facts from the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SymbolizeError> {
        let path = path.as_ref();
        let io_err = |source| SymbolizeError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        // SAFETY: the map is read-only and dropped before returning. A file truncated by
        // another process meanwhile could fault; binaries under analysis are not rewritten
        // in place by linkers or package managers (they replace them), so we accept it.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io_err)?;
        Self::parse(&map).map_err(|reason| SymbolizeError::BadElf {
            path: path.display().to_string(),
            reason,
        })
    }

    /// Read the facts from an ELF image in memory.
    pub fn parse(data: &[u8]) -> Result<Self, String> {
        match FileKind::parse(data).map_err(|e| e.to_string())? {
            FileKind::Elf32 => parse_elf::<elf::FileHeader32<object::Endianness>>(data),
            FileKind::Elf64 => parse_elf::<elf::FileHeader64<object::Endianness>>(data),
            other => Err(format!("not ELF but {other:?}")),
        }
    }

    /// Whether any symbol table (static or dynamic) is present.
    pub fn has_symbols(&self) -> bool {
        self.has_symtab || self.has_dynsym
    }
}

fn parse_elf<H: FileHeader<Endian = object::Endianness>>(data: &[u8]) -> Result<ElfInfo, String> {
    let file = ElfFile::<H>::parse(data).map_err(|e| e.to_string())?;
    let endian = file.endian();
    let load_segments = file
        .elf_program_headers()
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .map(|ph| LoadSegment {
            offset: ph.p_offset(endian).into(),
            vaddr: ph.p_vaddr(endian).into(),
            filesz: ph.p_filesz(endian).into(),
            memsz: ph.p_memsz(endian).into(),
            flags: ph.p_flags(endian).0,
        })
        .collect();
    // A corrupt note or link section only loses that fact; the rest stays usable.
    let build_id = file.build_id().ok().flatten().map(hex);
    let debuglink = file
        .gnu_debuglink()
        .ok()
        .flatten()
        .map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc));
    let has_debug_info = [".debug_info", ".zdebug_info"].iter().any(|name| {
        file.section_by_name(name)
            .is_some_and(|s| s.kind() != SectionKind::UninitializedData && s.size() > 0)
    });
    Ok(ElfInfo {
        build_id,
        load_segments,
        // Undefined entries (imports) name nothing at our addresses.
        has_symtab: file.symbols().any(|s| !s.is_undefined()),
        has_dynsym: file.dynamic_symbols().any(|s| !s.is_undefined()),
        has_debug_info,
        debuglink,
    })
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// ELF virtual address of a file offset, through the `PT_LOAD` segment holding it.
///
/// The converter computes `file_offset = addr - mapping.start + mapping.pgoff`. An offset
/// in a segment's file bytes maps to `vaddr + (offset - p_offset)`. Offsets past
/// `p_filesz` but within `p_memsz` (the zero-filled tail on the last file page, e.g. the
/// start of .bss) are accepted too, because the kernel maps them from the same page.
pub fn file_offset_to_elf_vaddr(elf: &ElfInfo, file_offset: u64) -> Option<u64> {
    let inside =
        |seg: &&LoadSegment, len: u64| file_offset >= seg.offset && file_offset - seg.offset < len;
    let seg = elf
        .load_segments
        .iter()
        .find(|s| inside(s, s.filesz))
        .or_else(|| elf.load_segments.iter().find(|s| inside(s, s.memsz)))?;
    seg.vaddr.checked_add(file_offset - seg.offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(segs: &[(u64, u64, u64, u64)]) -> ElfInfo {
        ElfInfo {
            load_segments: segs
                .iter()
                .map(|&(offset, vaddr, filesz, memsz)| LoadSegment {
                    offset,
                    vaddr,
                    filesz,
                    memsz,
                    flags: 0,
                })
                .collect(),
            ..ElfInfo::default()
        }
    }

    #[test]
    fn maps_offsets_through_pt_load() {
        // Typical PIE: r--, r-x, rw- with a bss tail.
        let e = info(&[
            (0, 0, 0x600, 0x600),
            (0x1000, 0x1000, 0x200, 0x200),
            (0x2df0, 0x3df0, 0x228, 0x240),
        ]);
        assert_eq!(file_offset_to_elf_vaddr(&e, 0x1139), Some(0x1139));
        assert_eq!(file_offset_to_elf_vaddr(&e, 0x2e00), Some(0x3e00));
        assert_eq!(
            file_offset_to_elf_vaddr(&e, 0x2df0 + 0x230),
            Some(0x3df0 + 0x230)
        ); // bss tail
        assert_eq!(file_offset_to_elf_vaddr(&e, 0x900), None); // gap between segments
        assert_eq!(file_offset_to_elf_vaddr(&e, u64::MAX), None);
        // Non-PIE executables load at 0x400000.
        let e = info(&[(0, 0x400000, 0x1000, 0x1000)]);
        assert_eq!(file_offset_to_elf_vaddr(&e, 0x540), Some(0x400540));
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert!(ElfInfo::parse(b"").is_err());
        assert!(ElfInfo::parse(b"\x7fELF\x02\x01\x01garbage").is_err());
        let mut junk = vec![0u8; 4096];
        junk[..4].copy_from_slice(b"\x7fELF");
        junk[4] = 2;
        junk[5] = 1;
        let _ = ElfInfo::parse(&junk);
        assert!(matches!(
            ElfInfo::open("/nonexistent/x"),
            Err(SymbolizeError::Io { .. })
        ));
    }
}
