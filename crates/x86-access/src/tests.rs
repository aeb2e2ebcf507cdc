//! Hand-assembled instructions (bytes checked with `objdump -d`) against known registers.

use crate::*;

const IP: u64 = 0x40_1000;

/// rax=0x1000, rbx=0x2000, rcx=3, rsi=0x5000, rdi=0x6000, rsp=0x7fff_0000, others absent.
fn regs(index: u32) -> Option<u64> {
    match index {
        0 => Some(0xffff_ffff_0000_1000),
        1 => Some(0x2000),
        2 => Some(3),
        4 => Some(0x5000),
        5 => Some(0x6000),
        7 => Some(0x7fff_0000),
        _ => None,
    }
}

fn one(bytes: &[u8], bitness: Bitness, segments: &SegmentBases) -> Result<Vec<Access>, Unresolved> {
    MemInstr::decode(bytes, IP, bitness)?.resolve(&regs, segments)
}

fn acc(addr: u64, size: u32, direction: Direction) -> Access {
    Access {
        addr,
        size,
        direction,
    }
}

#[test]
fn loads_stores_and_read_modify_write() {
    let none = SegmentBases::default();
    // mov rax, [rdi]
    assert_eq!(
        one(&[0x48, 0x8b, 0x07], Bitness::B64, &none),
        Ok(vec![acc(0x6000, 8, Direction::Load)])
    );
    // mov [rdi], rax
    assert_eq!(
        one(&[0x48, 0x89, 0x07], Bitness::B64, &none),
        Ok(vec![acc(0x6000, 8, Direction::Store)])
    );
    // add qword [rdi+rcx*8], 1
    assert_eq!(
        one(&[0x48, 0x83, 0x04, 0xcf, 0x01], Bitness::B64, &none),
        Ok(vec![acc(0x6018, 8, Direction::LoadStore)])
    );
    // lock add dword [rbx+0x10], 1
    assert_eq!(
        one(&[0xf0, 0x83, 0x43, 0x10, 0x01], Bitness::B64, &none),
        Ok(vec![acc(0x2010, 4, Direction::LoadStore)])
    );
    // movzx eax, byte [rsi-1]
    assert_eq!(
        one(&[0x0f, 0xb6, 0x46, 0xff], Bitness::B64, &none),
        Ok(vec![acc(0x4fff, 1, Direction::Load)])
    );
}

#[test]
fn rip_relative_uses_the_next_instruction() {
    // mov eax, [rip+0x100]: 6 bytes long
    let got = one(
        &[0x8b, 0x05, 0x00, 0x01, 0x00, 0x00],
        Bitness::B64,
        &SegmentBases::default(),
    );
    assert_eq!(got, Ok(vec![acc(IP + 6 + 0x100, 4, Direction::Load)]));
}

#[test]
fn implicit_stack_and_string_operands() {
    let none = SegmentBases::default();
    // push rbx
    assert_eq!(
        one(&[0x53], Bitness::B64, &none),
        Ok(vec![acc(0x7fff_0000 - 8, 8, Direction::Store)])
    );
    // movsb: a load from [rsi] and a store to [rdi]
    let mut got = one(&[0xa4], Bitness::B64, &none).expect("movsb resolves");
    got.sort_by_key(|a| a.addr);
    assert_eq!(
        got,
        vec![
            acc(0x5000, 1, Direction::Load),
            acc(0x6000, 1, Direction::Store)
        ]
    );
}

#[test]
fn no_access_for_lea_and_register_arithmetic() {
    let none = SegmentBases::default();
    let lea = MemInstr::decode(&[0x48, 0x8d, 0x47, 0x08], IP, Bitness::B64).expect("lea decodes");
    assert!(lea.is_empty());
    assert_eq!(lea.len(), 4);
    assert_eq!(
        one(&[0x48, 0x83, 0xc2, 0x01], Bitness::B64, &none),
        Ok(vec![])
    );
}

#[test]
fn thread_local_needs_the_segment_base() {
    // mov rax, fs:[0x10]
    let bytes = [0x64, 0x48, 0x8b, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00];
    assert_eq!(
        one(&bytes, Bitness::B64, &SegmentBases::default()),
        Err(Unresolved::SegmentBase("fs"))
    );
    let fs = SegmentBases {
        fs: Some(0x7000_0000),
        gs: None,
    };
    assert_eq!(
        one(&bytes, Bitness::B64, &fs),
        Ok(vec![acc(0x7000_0010, 8, Direction::Load)])
    );
}

#[test]
fn thirty_two_bit_code_cuts_registers() {
    // mov ecx, [eax] in 32-bit code: rax's upper half is not part of the address.
    assert_eq!(
        one(&[0x8b, 0x08], Bitness::B32, &SegmentBases::default()),
        Ok(vec![acc(0x1000, 4, Direction::Load)])
    );
}

#[test]
fn what_cannot_be_resolved_says_why() {
    let none = SegmentBases::default();
    // push es does not exist in 64-bit code.
    assert_eq!(
        MemInstr::decode(&[0x06], IP, Bitness::B64).err(),
        Some(Unresolved::Undecodable)
    );
    assert_eq!(
        MemInstr::decode(&[], IP, Bitness::B64).err(),
        Some(Unresolved::Undecodable)
    );
    // mov rax, [r12]: r12 was not sampled.
    assert_eq!(
        one(&[0x49, 0x8b, 0x04, 0x24], Bitness::B64, &none),
        Err(Unresolved::MissingRegister("r12"))
    );
    // vgatherdps xmm0, [rax+xmm1*4], xmm2
    assert_eq!(
        one(&[0xc4, 0xe2, 0x69, 0x92, 0x04, 0x88], Bitness::B64, &none),
        Err(Unresolved::VectorIndex)
    );
}

#[test]
fn never_panics_on_any_bytes() {
    // Every 3-byte prefix of a cheap pseudo-random stream, both bitnesses.
    let mut x: u32 = 0x1234_5678;
    for _ in 0..20_000 {
        let mut b = [0u8; 15];
        for v in &mut b {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *v = x as u8;
        }
        for bitness in [Bitness::B32, Bitness::B64] {
            if let Ok(m) = MemInstr::decode(&b, IP, bitness) {
                let _ = m.resolve(
                    &regs,
                    &SegmentBases {
                        fs: Some(0),
                        gs: Some(0),
                    },
                );
            }
        }
    }
}

#[test]
fn the_mask_asks_for_every_address_register() {
    for i in [0u32, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 19, 20, 21, 22, 23] {
        assert!(SAMPLE_REGS_MASK & (1 << i) != 0, "register {i}");
    }
    assert_eq!(
        SAMPLE_REGS_MASK & (0xf << 12),
        0,
        "a 64-bit kernel refuses ds/es/fs/gs"
    );
}

/// A function laid out as the false_sharing sample's loop (bytes from `objdump -d`):
/// 0: test rsi,rsi; 3: jle 0x23; 5: xor edx,edx; 7: nop word [rax+rax]; 0x10: mov rax,[rdi];
/// 0x13: add rdx,1; 0x17: add rax,1; 0x1b: mov [rdi],rax; 0x1e: cmp rsi,rdx; 0x21: jne 0x10; 0x23: ret
const LOOP: [u8; 36] = [
    0x48, 0x85, 0xf6, 0x7e, 0x1e, 0x31, 0xd2, 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x48, 0x8b, 0x07, 0x48, 0x83, 0xc2, 0x01, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0x07, 0x48, 0x39,
    0xd6, 0x75, 0xed, 0xc3,
];

#[test]
fn time_after_a_load_belongs_to_the_load() {
    let none = SegmentBases::default();
    let at = |off: u64| {
        Site::decode(&LOOP, IP, LOOP.len() as u64, IP + off, Bitness::B64)
            .expect("decodes")
            .resolve(&regs, &none)
    };
    // Sampled at `add rdx,1`: the load before it.
    assert_eq!(
        at(0x13),
        Ok((vec![acc(0x6000, 8, Direction::Load)], Which::Previous))
    );
    // Sampled at `add rax,1`: nothing before it touched memory; neither does it.
    assert_eq!(at(0x17), Ok((vec![], Which::Current)));
    // Sampled at `cmp`: the store before it.
    assert_eq!(
        at(0x1e),
        Ok((vec![acc(0x6000, 8, Direction::Store)], Which::Previous))
    );
    // The loop head is a jump target: only the instruction at it counts.
    assert_eq!(
        at(0x10),
        Ok((vec![acc(0x6000, 8, Direction::Load)], Which::Current))
    );
    assert!(Site::decode(&LOOP, IP, LOOP.len() as u64, IP + 0x100, Bitness::B64).is_err());
}

#[test]
fn a_load_that_overwrote_its_address_register_is_refused() {
    // mov rax,[rax]; nop: pointer chasing leaves the old pointer nowhere.
    let f = [0x48, 0x8b, 0x00, 0x90];
    let got = Site::decode(&f, IP, f.len() as u64, IP + 3, Bitness::B64)
        .expect("decodes")
        .resolve(&regs, &SegmentBases::default());
    assert_eq!(got, Err(Unresolved::AddressOverwritten));
}
