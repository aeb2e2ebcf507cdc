//! DWARF unwinding of user stacks copied with each sample (stack-unwinding=dwarf).
//!
//! With `-k stack-unwinding=dwarf` each sample carries the user registers and a copy of
//! the top of the user stack, and the kernel call chain holds kernel frames only. The
//! user frames are recovered here with framehop, which follows the CFI (`.eh_frame`, else
//! `.debug_frame`) of the module holding each address and reads saved values from the
//! stack copy; where a module or address has no CFI it falls back to frame pointers.
//!
//! Modules are tracked per process from the MMAP records as they are replayed, so each
//! sample is unwound against the address space of its moment: fork copies the parent's
//! modules, exec drops them, a new mapping replaces what it overlaps.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Module, ModuleSectionInfo, Unwinder};
use kairos_model::Mode;
use kairos_perf_data::Regs;
use kairos_symbolize::ElfInfo;
use object::{Object, ObjectSection};

use crate::callchain::ChainEntry;
use crate::processes::Mapping;
use crate::ElfCache;

/// perf's x86_64 register numbers (arch/x86/include/uapi/asm/perf_regs.h).
const X86_BP: u32 = 6;
const X86_SP: u32 = 7;
const X86_IP: u32 = 8;
/// `PERF_SAMPLE_REGS_ABI_64`; 32-bit tasks (ABI 1) use other registers and CFI.
const REGS_ABI_64: u64 = 2;
/// Bound on frames per sample, so that a cyclic stack copy cannot loop.
const MAX_FRAMES: usize = 1024;
const PF_X: u32 = 1;

/// Section bytes shared by every module made from the same file.
type Bytes = Arc<[u8]>;

/// Per-process unwinders fed by the mapping records.
pub struct DwarfUnwinder {
    /// The recording is of x86_64 code (the only register layout handled).
    x86_64: bool,
    processes: HashMap<i32, Process>,
    /// Unwind sections per recorded path; `None` when unreadable or without CFI.
    files: HashMap<String, Option<UnwindSections>>,
    cache: CacheX86_64,
    /// Used for processes whose mappings were never seen (frame-pointer fallback only).
    empty: UnwinderX86_64<Bytes>,
    samples: u64,
    stopped: u64,
    other_arch: u64,
}

impl Default for DwarfUnwinder {
    fn default() -> Self {
        Self::new(None)
    }
}

/// One executable file mapping registered with the process's unwinder.
#[derive(Clone)]
struct Entry {
    range: Range<u64>,
    base_avma: u64,
    name: String,
    sections: UnwindSections,
}

#[derive(Clone, Default)]
struct Process {
    unwinder: UnwinderX86_64<Bytes>,
    /// Sorted by start, non-overlapping; mirrors the unwinder's modules.
    entries: Vec<Entry>,
}

impl Process {
    /// Drops what `range` overlaps, keeping the parts of older modules outside it, as
    /// mmap(MAP_FIXED) does (ld.so maps a library whole, then its data over the tail).
    fn unmap(&mut self, range: &Range<u64>) {
        let mut kept = Vec::new();
        for e in std::mem::take(&mut self.entries) {
            if e.range.end <= range.start || e.range.start >= range.end {
                kept.push(e);
                continue;
            }
            self.unwinder.remove_module(e.range.start);
            for part in [
                e.range.start..range.start.min(e.range.end),
                range.end.max(e.range.start)..e.range.end,
            ] {
                if part.start < part.end {
                    let piece = Entry {
                        range: part,
                        ..e.clone()
                    };
                    self.unwinder.add_module(piece.module());
                    kept.push(piece);
                }
            }
        }
        kept.sort_by_key(|e| e.range.start);
        self.entries = kept;
    }

    fn add(&mut self, e: Entry) {
        self.unwinder.add_module(e.module());
        let at = self
            .entries
            .partition_point(|o| o.range.start < e.range.start);
        self.entries.insert(at, e);
    }
}

impl Entry {
    fn module(&self) -> Module<Bytes> {
        Module::new(
            self.name.clone(),
            self.range.clone(),
            self.base_avma,
            self.sections.clone(),
        )
    }
}

impl DwarfUnwinder {
    /// `arch` is the recording's `uname -m` (perf.data HEADER_ARCH); without it the
    /// recording is assumed to come from this machine's architecture.
    pub fn new(arch: Option<&str>) -> Self {
        let x86_64 = match arch {
            Some(a) => a == "x86_64",
            None => cfg!(target_arch = "x86_64"),
        };
        DwarfUnwinder {
            x86_64,
            processes: HashMap::new(),
            files: HashMap::new(),
            cache: CacheX86_64::new(),
            empty: UnwinderX86_64::new(),
            samples: 0,
            stopped: 0,
            other_arch: 0,
        }
    }

    /// A new process (not a thread) starts with its parent's address space.
    pub fn fork(&mut self, pid: i32, ppid: i32) {
        if pid == ppid {
            return;
        }
        match self.processes.get(&ppid).cloned() {
            Some(parent) => self.processes.insert(pid, parent),
            None => self.processes.remove(&pid),
        };
    }

    /// exec replaces the address space; the new image's mappings follow.
    pub fn exec(&mut self, pid: i32) {
        self.processes.remove(&pid);
    }

    /// A user-space mapping of process `pid`; `executable` as the record says (PROT_EXEC,
    /// or no MMAP_DATA flag for records without protection bits).
    pub fn mmap(&mut self, pid: i32, executable: bool, mapping: &Mapping, elves: &mut ElfCache) {
        if !self.x86_64 || pid <= 0 || mapping.end <= mapping.start {
            return;
        }
        let range = mapping.start..mapping.end;
        if let Some(p) = self.processes.get_mut(&pid) {
            p.unmap(&range);
        }
        // Only file-backed code has unwind sections to read; anonymous code (JITs, vdso)
        // is walked with frame pointers by framehop's fallback.
        if !executable || !mapping.path.starts_with('/') || mapping.path.starts_with("/memfd:") {
            return;
        }
        let Some(found) = elves.located(pid, mapping).cloned() else {
            return;
        };
        let info = &found.info;
        if let (Some(recorded), Some(on_disk)) = (&mapping.build_id, &info.build_id) {
            if recorded != on_disk {
                // Another build than the one that ran: its CFI would describe other code.
                return;
            }
        }
        let Some(base_avma) = base_avma(info, mapping) else {
            return;
        };
        // Keyed by the file found: one path may name two files (two containers).
        let sections = self
            .files
            .entry(found.file.display().to_string())
            .or_insert_with(|| {
                crate::elf_cache::map_file(&found).and_then(|bytes| UnwindSections::read(&bytes))
            })
            .clone();
        let Some(sections) = sections else { return };
        let entry = Entry {
            range,
            base_avma,
            name: mapping.path.clone(),
            sections,
        };
        self.processes.entry(pid).or_default().add(entry);
    }

    /// Replaces the user frames of `chain` (kernel frames first, leaf first) by the frames
    /// unwound from the sampled user registers and stack copy.
    pub fn unwind(&mut self, pid: i32, regs: &Regs, stack: &[u8], chain: &mut Vec<ChainEntry>) {
        if regs.abi == 0 {
            // No user context (a kernel thread): nothing to unwind.
            return;
        }
        if !self.x86_64 {
            self.other_arch += 1;
            return;
        }
        self.samples += 1;
        let Some((ip, sp, bp)) = x86_64_regs(regs) else {
            self.stopped += 1;
            return;
        };
        let unwinder = self
            .processes
            .get(&pid)
            .map_or(&self.empty, |p| &p.unwinder);
        let mut read_stack = |addr| read_stack_word(stack, sp, addr);
        let mut frames = unwinder.iter_frames(
            ip,
            UnwindRegsX86_64::new(ip, sp, bp),
            &mut self.cache,
            &mut read_stack,
        );
        chain.retain(|e| e.mode != Mode::User);
        let mut complete = false;
        for _ in 0..MAX_FRAMES {
            match frames.next() {
                Ok(Some(frame)) => {
                    let is_return_address = !chain.is_empty();
                    chain.push(ChainEntry {
                        address: frame.address(),
                        mode: Mode::User,
                        is_return_address,
                    });
                }
                Ok(None) => {
                    complete = true;
                    break;
                }
                // Usually the stack copy ended before the outermost frame.
                Err(_) => break,
            }
        }
        if !complete {
            self.stopped += 1;
        }
    }

    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.stopped > 0 {
            notes.push(format!(
                "dwarf unwinding stopped early in {} of {} samples (stack copy too small, or code without unwind information or frame pointers)",
                self.stopped, self.samples
            ));
        }
        if self.other_arch > 0 {
            notes.push(format!(
                "dwarf unwinding handles x86_64 recordings only; the user stacks of {} samples were not unwound",
                self.other_arch
            ));
        }
        notes
    }
}

/// IP, SP and BP from the sampled user registers, which perf stores in ascending order of
/// their bits in the attr's mask (`Regs::get` maps the register number through it).
fn x86_64_regs(regs: &Regs) -> Option<(u64, u64, u64)> {
    if regs.abi != REGS_ABI_64 {
        return None;
    }
    Some((regs.get(X86_IP)?, regs.get(X86_SP)?, regs.get(X86_BP)?))
}

/// The 8-byte word at address `addr` of the sampled stack, whose copy starts at `sp`.
fn read_stack_word(stack: &[u8], sp: u64, addr: u64) -> Result<u64, ()> {
    let offset = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
    let bytes = stack
        .get(offset..offset.checked_add(8).ok_or(())?)
        .ok_or(())?;
    Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
}

/// The address at which ELF virtual address 0 of `mapping`'s file is loaded (the load
/// bias), from the executable `PT_LOAD` segment the mapping comes from. ld.so maps a
/// segment from its page-aligned offset, so `start - pgoff = bias + p_vaddr - p_offset`.
fn base_avma(info: &ElfInfo, mapping: &Mapping) -> Option<u64> {
    const PAGE: u64 = 4096;
    let seg = info
        .load_segments
        .iter()
        .filter(|s| s.flags & PF_X != 0)
        .find(|s| {
            s.offset & !(PAGE - 1) <= mapping.pgoff
                && mapping.pgoff < s.offset.saturating_add(s.filesz)
        })?;
    mapping
        .start
        .checked_sub(mapping.pgoff)?
        .checked_add(seg.offset)?
        .checked_sub(seg.vaddr)
}

/// The sections framehop asks for, copied out of an ELF file: addresses for `.text` and
/// `.got` (bases of DW_EH_PE_textrel/datarel pointers), bytes for the CFI.
#[derive(Clone, Default)]
struct UnwindSections {
    sections: Vec<(&'static str, Range<u64>, Option<Bytes>)>,
}

impl UnwindSections {
    fn read(file: &[u8]) -> Option<Self> {
        let elf = object::File::parse(file).ok()?;
        let mut out = UnwindSections::default();
        for (name, with_data) in [
            (".text", false),
            (".got", false),
            (".eh_frame", true),
            (".eh_frame_hdr", true),
            (".debug_frame", true),
        ] {
            let Some(s) = elf.section_by_name(name) else {
                continue;
            };
            // NOBITS sections (as in separate debug files) read as empty: no data then.
            let data = with_data
                .then(|| s.uncompressed_data().ok())
                .flatten()
                .filter(|d| !d.is_empty())
                .map(|d| Bytes::from(&*d));
            out.sections.push((
                name,
                s.address()..s.address().saturating_add(s.size()),
                data,
            ));
        }
        let has_cfi = out
            .sections
            .iter()
            .any(|(n, _, d)| d.is_some() && (*n == ".eh_frame" || *n == ".debug_frame"));
        has_cfi.then_some(out)
    }

    fn find(&self, name: &[u8]) -> Option<&(&'static str, Range<u64>, Option<Bytes>)> {
        self.sections.iter().find(|(n, _, _)| n.as_bytes() == name)
    }
}

impl ModuleSectionInfo<Bytes> for UnwindSections {
    fn base_svma(&self) -> u64 {
        // ELF addresses are absolute: the stated base is 0 and AVMA = SVMA + load bias.
        0
    }

    fn section_svma_range(&mut self, name: &[u8]) -> Option<Range<u64>> {
        self.find(name).map(|(_, r, _)| r.clone())
    }

    fn section_data(&mut self, name: &[u8]) -> Option<Bytes> {
        self.find(name).and_then(|(_, _, d)| d.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mask perf uses for dwarf unwinding on x86_64: AX..R15 without DS, ES, FS, GS.
    const MASK: u64 = 0xff0fff;

    /// Register values of `MASK` in bit order, each set to 0x1000 + its register number,
    /// with IP, SP and BP as given.
    fn regs(ip: u64, sp: u64, bp: u64) -> Regs {
        let values = (0..64u32)
            .filter(|r| MASK & (1 << r) != 0)
            .map(|r| match r {
                X86_IP => ip,
                X86_SP => sp,
                X86_BP => bp,
                r => 0x1000 + u64::from(r),
            })
            .collect();
        Regs {
            abi: REGS_ABI_64,
            mask: MASK,
            values,
        }
    }

    fn stack(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn registers_are_found_through_the_mask() {
        assert_eq!(
            x86_64_regs(&regs(0x401000, 0x7ff0, 0x7ff8)),
            Some((0x401000, 0x7ff0, 0x7ff8))
        );
        // R8 sits at bit 16 but at index 12, after the four skipped segment registers.
        assert_eq!(regs(1, 2, 3).get(16), Some(0x1010));
        assert_eq!(
            x86_64_regs(&Regs {
                abi: 1,
                ..regs(1, 2, 3)
            }),
            None
        );
        assert_eq!(
            x86_64_regs(&Regs {
                abi: REGS_ABI_64,
                mask: MASK,
                values: vec![1, 2]
            }),
            None
        );
    }

    #[test]
    fn stack_words_are_read_relative_to_sp() {
        let s = stack(&[0x11, 0x22, 0x33]);
        assert_eq!(read_stack_word(&s, 0x1000, 0x1000), Ok(0x11));
        assert_eq!(read_stack_word(&s, 0x1000, 0x1010), Ok(0x33));
        assert_eq!(read_stack_word(&s, 0x1000, 0x1014), Err(()));
        assert_eq!(read_stack_word(&s, 0x1000, 0x0ff8), Err(()));
        assert_eq!(read_stack_word(&s, 0x1000, u64::MAX), Err(()));
        assert_eq!(read_stack_word(&s, u64::MAX, 0), Err(()));
    }

    /// Without any module, framehop walks the frame-pointer chain laid out in the copy:
    /// this checks that IP/SP/BP and the stack words reach it as they should.
    #[test]
    fn walks_a_handcrafted_frame_pointer_chain() {
        let sp = 0x7fff_0000;
        // [sp]: junk; frame 1 at sp+8: saved bp -> frame 2, return 0x401234;
        // frame 2 at sp+24: saved bp 0 (outermost), return 0x405678.
        let s = stack(&[0xdead, sp + 24, 0x401234, 0, 0x405678]);
        let mut chain = vec![
            ChainEntry {
                address: 0xffff_ffff_8100_0000,
                mode: Mode::Kernel,
                is_return_address: false,
            },
            ChainEntry {
                address: 0x400100,
                mode: Mode::User,
                is_return_address: true,
            },
        ];
        let mut u = DwarfUnwinder::new(Some("x86_64"));
        u.unwind(42, &regs(0x400100, sp, sp + 8), &s, &mut chain);
        let got: Vec<_> = chain
            .iter()
            .map(|e| (e.address, e.mode, e.is_return_address))
            .collect();
        assert_eq!(
            got,
            [
                (0xffff_ffff_8100_0000, Mode::Kernel, false),
                (0x400100, Mode::User, true),
                (0x401234, Mode::User, true),
                (0x405678, Mode::User, true),
            ]
        );
        assert!(u.notes().is_empty(), "{:?}", u.notes());

        // A user-only sample: the sampled IP is the leaf, not a return address.
        let mut chain = Vec::new();
        u.unwind(42, &regs(0x400100, sp, sp + 8), &s, &mut chain);
        assert_eq!(chain.len(), 3);
        assert!(!chain[0].is_return_address && chain[1].is_return_address);
    }

    #[test]
    fn truncated_copies_and_garbage_are_counted_not_fatal() {
        let sp = 0x7fff_0000;
        let mut u = DwarfUnwinder::new(Some("x86_64"));
        // The chain leads out of the copy.
        let mut chain = Vec::new();
        u.unwind(
            1,
            &regs(0x400100, sp, sp + 0x10000),
            &stack(&[1, 2]),
            &mut chain,
        );
        assert_eq!(chain.len(), 1);
        // Extreme register values and an odd-sized copy.
        for (ip, sp, bp) in [
            (u64::MAX, u64::MAX, u64::MAX),
            (0, 0, 0),
            (1, u64::MAX - 4, 3),
        ] {
            u.unwind(1, &regs(ip, sp, bp), &[0xff; 13], &mut Vec::new());
        }
        // No registers at all (kernel thread) is not a sample to unwind.
        u.unwind(
            1,
            &Regs {
                abi: 0,
                mask: MASK,
                values: vec![],
            },
            &[],
            &mut Vec::new(),
        );
        assert_eq!((u.samples, u.stopped >= 2), (4, true));
        assert!(u.notes()[0].starts_with("dwarf unwinding stopped early in"));
    }

    #[test]
    fn other_architectures_are_left_alone() {
        let mut u = DwarfUnwinder::new(Some("aarch64"));
        let mut chain = vec![ChainEntry {
            address: 0x400100,
            mode: Mode::User,
            is_return_address: false,
        }];
        u.unwind(1, &regs(0x400100, 0x1000, 0), &[0; 64], &mut chain);
        assert_eq!(chain.len(), 1);
        assert_eq!(u.notes().len(), 1);
    }

    #[test]
    fn load_bias_from_the_executable_segment() {
        let seg = |offset, vaddr, flags| kairos_symbolize::LoadSegment {
            offset,
            vaddr,
            filesz: 0x5000,
            memsz: 0x5000,
            flags,
        };
        // A PIE with separate code: r-- at 0, r-x at file 0x1000 / vaddr 0x1000.
        let info = ElfInfo {
            load_segments: vec![seg(0, 0, 4), seg(0x1000, 0x1000, 5)],
            ..ElfInfo::default()
        };
        let m = Mapping {
            start: 0x5555_5555_5000,
            end: 0x5555_5555_6000,
            pgoff: 0x1000,
            path: "/a".into(),
            build_id: None,
            executable: true,
        };
        assert_eq!(base_avma(&info, &m), Some(0x5555_5555_4000));
        // A segment whose vaddr and offset differ (non-PIE layout, offset not page aligned).
        let info = ElfInfo {
            load_segments: vec![seg(0x1234, 0x401234, 5)],
            ..ElfInfo::default()
        };
        let m = Mapping {
            start: 0x401000,
            end: 0x406000,
            pgoff: 0x1000,
            path: "/a".into(),
            build_id: None,
            executable: true,
        };
        assert_eq!(base_avma(&info, &m), Some(0));
        // A mapping of no executable segment.
        let m = Mapping { pgoff: 0x9000, ..m };
        assert_eq!(base_avma(&info, &m), None);
    }
}
