//! Telling calls from returns when the recording did not save the branch type: decode the
//! instruction at FROM (LBR FROM is the address of the branch instruction itself) from the
//! binary on disk, with iced-x86.

use std::collections::HashMap;

use iced_x86::{Decoder, DecoderOptions, Mnemonic};
use kairos_model::BranchKind;
use kairos_perf_data::BranchType;

use crate::code::CodeReader;
use crate::elf_cache::ElfCache;

/// The longest x86 instruction.
const MAX_INSN: usize = 15;

/// The kind the kernel saved (PERF_SAMPLE_BRANCH_TYPE_SAVE), or None when it says nothing.
pub fn from_type(t: BranchType) -> Option<BranchKind> {
    Some(match t {
        BranchType::Call | BranchType::IndCall | BranchType::CondCall => BranchKind::Call,
        BranchType::Ret | BranchType::CondRet => BranchKind::Return,
        BranchType::Unknown => return None,
        _ => BranchKind::Other,
    })
}

/// Classifies one instruction's bytes; `bitness` 64 or 32.
pub fn decode_kind(bytes: &[u8], bitness: u32, ip: u64) -> BranchKind {
    let mut d = Decoder::with_ip(bitness, bytes, ip, DecoderOptions::NONE);
    if !d.can_decode() {
        return BranchKind::Unknown;
    }
    let insn = d.decode();
    if insn.is_invalid() {
        return BranchKind::Unknown;
    }
    match insn.mnemonic() {
        Mnemonic::Call => BranchKind::Call,
        Mnemonic::Ret | Mnemonic::Retf => BranchKind::Return,
        // Jumps, conditional branches, syscalls, interrupts; also a non-branch
        // instruction, which an LBR entry of an interrupt or fault points at.
        _ => BranchKind::Other,
    }
}

/// Kinds of the branches at file offsets, each decoded once from the binary on disk.
#[derive(Default)]
pub struct Classifier {
    code: CodeReader,
    cache: HashMap<(String, u64), BranchKind>,
}

impl Classifier {
    /// Kind of the branch at `file_offset` of the file mapped from `path`; Unknown when
    /// the file is missing or the offset is not in a loaded segment of it.
    pub fn classify(&mut self, elves: &mut ElfCache, path: &str, file_offset: u64) -> BranchKind {
        if let Some(&k) = self.cache.get(&(path.to_string(), file_offset)) {
            return k;
        }
        let kind = match self.code.bytes_at(elves, path, file_offset, MAX_INSN) {
            Some(c) => decode_kind(c.bytes, if c.class64 { 64 } else { 32 }, file_offset),
            None => BranchKind::Unknown,
        };
        self.cache.insert((path.to_string(), file_offset), kind);
        kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handcrafted_instructions() {
        // call rel32
        assert_eq!(
            decode_kind(&[0xe8, 0x10, 0, 0, 0], 64, 0x1000),
            BranchKind::Call
        );
        // call qword ptr [rax] (FF /2) and call rax
        assert_eq!(decode_kind(&[0xff, 0x10], 64, 0), BranchKind::Call);
        assert_eq!(decode_kind(&[0xff, 0xd0], 64, 0), BranchKind::Call);
        // ret, ret imm16
        assert_eq!(decode_kind(&[0xc3], 64, 0), BranchKind::Return);
        assert_eq!(decode_kind(&[0xc2, 0x08, 0x00], 64, 0), BranchKind::Return);
        // jmp rel8, jmp rel32, jne rel8, jmp rax
        assert_eq!(decode_kind(&[0xeb, 0xfe], 64, 0), BranchKind::Other);
        assert_eq!(decode_kind(&[0xe9, 0, 0, 0, 0], 64, 0), BranchKind::Other);
        assert_eq!(decode_kind(&[0x75, 0x02], 64, 0), BranchKind::Other);
        assert_eq!(decode_kind(&[0xff, 0xe0], 64, 0), BranchKind::Other);
        // Truncated and empty input never panic.
        assert_eq!(decode_kind(&[0xe8, 0x10], 64, 0), BranchKind::Unknown);
        assert_eq!(decode_kind(&[], 64, 0), BranchKind::Unknown);
    }

    #[test]
    fn saved_types() {
        assert_eq!(from_type(BranchType::IndCall), Some(BranchKind::Call));
        assert_eq!(from_type(BranchType::Ret), Some(BranchKind::Return));
        assert_eq!(from_type(BranchType::Cond), Some(BranchKind::Other));
        assert_eq!(from_type(BranchType::Unknown), None);
    }
}
