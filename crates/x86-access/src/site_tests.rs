//! The instruction before the sampled IP, for each pattern of unoptimised code that
//! overwrites its own address register: recovered from the registers that still hold the
//! old value, or refused with the reason. Functions from `gcc -O0` (and a few written in
//! assembly), bytes checked with `objdump -d`.

use crate::*;

const IP: u64 = 0x40_1000;
const FRAME: u64 = 0x7ffe_0000;

/// `void increment(long *counter, long n) { for (long i = 0; i < n; i++) (*counter)++; }`
/// 0: push rbp; 1: mov rbp,rsp; 4: mov [rbp-0x18],rdi; 8: mov [rbp-0x20],rsi;
/// c: mov qword [rbp-8],0; 14: jmp 2d; 16: mov rax,[rbp-0x18]; 1a: mov rax,[rax];
/// 1d: lea rdx,[rax+1]; 21: mov rax,[rbp-0x18]; 25: mov [rax],rdx; 28: add qword [rbp-8],1;
/// 2d: mov rax,[rbp-8]; 31: cmp rax,[rbp-0x20]; 35: jl 16; 37: nop; 38: nop; 39: pop rbp; 3a: ret
const INCREMENT: [u8; 59] = [
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0x7d, 0xe8, 0x48, 0x89, 0x75, 0xe0, 0x48, 0xc7, 0x45, 0xf8,
    0x00, 0x00, 0x00, 0x00, 0xeb, 0x17, 0x48, 0x8b, 0x45, 0xe8, 0x48, 0x8b, 0x00, 0x48, 0x8d, 0x50,
    0x01, 0x48, 0x8b, 0x45, 0xe8, 0x48, 0x89, 0x10, 0x48, 0x83, 0x45, 0xf8, 0x01, 0x48, 0x8b, 0x45,
    0xf8, 0x48, 0x3b, 0x45, 0xe0, 0x7c, 0xdf, 0x90, 0x90, 0x5d, 0xc3,
];

/// `long walk(struct node *p) { long s = 0; while (p) { s += p->v; p = p->next; } return s; }`
/// 0: push rbp; 1: mov rbp,rsp; 4: mov [rbp-0x18],rdi; 8: mov qword [rbp-8],0; 10: jmp 29;
/// 12: mov rax,[rbp-0x18]; 16: mov rax,[rax]; 19: add [rbp-8],rax; 1d: mov rax,[rbp-0x18];
/// 21: mov rax,[rax+8]; 25: mov [rbp-0x18],rax; 29: cmp qword [rbp-0x18],0; 2e: jne 12;
/// 30: mov rax,[rbp-8]; 34: pop rbp; 35: ret
const WALK: [u8; 54] = [
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0x7d, 0xe8, 0x48, 0xc7, 0x45, 0xf8, 0x00, 0x00, 0x00, 0x00,
    0xeb, 0x17, 0x48, 0x8b, 0x45, 0xe8, 0x48, 0x8b, 0x00, 0x48, 0x01, 0x45, 0xf8, 0x48, 0x8b, 0x45,
    0xe8, 0x48, 0x8b, 0x40, 0x08, 0x48, 0x89, 0x45, 0xe8, 0x48, 0x83, 0x7d, 0xe8, 0x00, 0x75, 0xe2,
    0x48, 0x8b, 0x45, 0xf8, 0x5d, 0xc3,
];

/// `long calls(long *p, long n) { long s = 0; for (long i = 0; i < n; i++) { s += *p; f(); } return s; }`
/// 0: push rbp; 1: mov rbp,rsp; 4: sub rsp,0x20; 8: mov [rbp-0x18],rdi; c: mov [rbp-0x20],rsi;
/// 10: mov qword [rbp-8],0; 18: mov qword [rbp-0x10],0; 20: jmp 37; 22: mov rax,[rbp-0x18];
/// 26: mov rax,[rax]; 29: add [rbp-8],rax; 2d: call f; 32: add qword [rbp-0x10],1;
/// 37: mov rax,[rbp-0x10]; 3b: cmp rax,[rbp-0x20]; 3f: jl 22; 41: mov rax,[rbp-8]; 45: leave; 46: ret
const CALLS: [u8; 71] = [
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x20, 0x48, 0x89, 0x7d, 0xe8, 0x48, 0x89, 0x75, 0xe0,
    0x48, 0xc7, 0x45, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x48, 0xc7, 0x45, 0xf0, 0x00, 0x00, 0x00, 0x00,
    0xeb, 0x15, 0x48, 0x8b, 0x45, 0xe8, 0x48, 0x8b, 0x00, 0x48, 0x01, 0x45, 0xf8, 0xe8, 0x00, 0x00,
    0x00, 0x00, 0x48, 0x83, 0x45, 0xf0, 0x01, 0x48, 0x8b, 0x45, 0xf0, 0x48, 0x3b, 0x45, 0xe0, 0x7c,
    0xe1, 0x48, 0x8b, 0x45, 0xf8, 0xc9, 0xc3,
];

/// `long g[100]; long get(long i) { return g[i]; }` as a position-independent object, with
/// g at rip+0x2000: 0: push rbp; 1: mov rbp,rsp; 4: mov [rbp-8],rdi; 8: mov rax,[rbp-8];
/// c: lea rdx,[rax*8]; 14: lea rax,[rip+0x2000]; 1b: mov rax,[rdx+rax]; 1f: pop rbp; 20: ret
const GET: [u8; 33] = [
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0x7d, 0xf8, 0x48, 0x8b, 0x45, 0xf8, 0x48, 0x8d, 0x14, 0xc5,
    0x00, 0x00, 0x00, 0x00, 0x48, 0x8d, 0x05, 0x00, 0x20, 0x00, 0x00, 0x48, 0x8b, 0x04, 0x02, 0x5d,
    0xc3,
];

/// samples/three_arrays.c's `read_array` at -O0: four blocks of
/// `mov rax,[rbp-0x28] (+ add rax,K); lea rdx,[rax*8]; mov rax,[rbp-0x38]; add rax,rdx;
/// mov rax,[rax]; add [rbp-8..-0x20],rax`; the first `mov rax,[rax]` at 0x49, the second
/// at 0x67; the loop's head at 0xaf, its branch back at 0xbb.
const READ_ARRAY: [u8; 220] = [
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0x7d, 0xc8, 0x48, 0x89, 0x75, 0xc0, 0x48, 0xc7, 0x45, 0xf8,
    0x00, 0x00, 0x00, 0x00, 0x48, 0xc7, 0x45, 0xf0, 0x00, 0x00, 0x00, 0x00, 0x48, 0xc7, 0x45, 0xe8,
    0x00, 0x00, 0x00, 0x00, 0x48, 0xc7, 0x45, 0xe0, 0x00, 0x00, 0x00, 0x00, 0x48, 0xc7, 0x45, 0xd8,
    0x00, 0x00, 0x00, 0x00, 0xeb, 0x79, 0x48, 0x8b, 0x45, 0xd8, 0x48, 0x8d, 0x14, 0xc5, 0x00, 0x00,
    0x00, 0x00, 0x48, 0x8b, 0x45, 0xc8, 0x48, 0x01, 0xd0, 0x48, 0x8b, 0x00, 0x48, 0x01, 0x45, 0xf8,
    0x48, 0x8b, 0x45, 0xd8, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x8d, 0x14, 0xc5, 0x00, 0x00, 0x00, 0x00,
    0x48, 0x8b, 0x45, 0xc8, 0x48, 0x01, 0xd0, 0x48, 0x8b, 0x00, 0x48, 0x01, 0x45, 0xf0, 0x48, 0x8b,
    0x45, 0xd8, 0x48, 0x83, 0xc0, 0x02, 0x48, 0x8d, 0x14, 0xc5, 0x00, 0x00, 0x00, 0x00, 0x48, 0x8b,
    0x45, 0xc8, 0x48, 0x01, 0xd0, 0x48, 0x8b, 0x00, 0x48, 0x01, 0x45, 0xe8, 0x48, 0x8b, 0x45, 0xd8,
    0x48, 0x83, 0xc0, 0x03, 0x48, 0x8d, 0x14, 0xc5, 0x00, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x45, 0xc8,
    0x48, 0x01, 0xd0, 0x48, 0x8b, 0x00, 0x48, 0x01, 0x45, 0xe0, 0x48, 0x83, 0x45, 0xd8, 0x04, 0x48,
    0x8b, 0x45, 0xd8, 0x48, 0x83, 0xc0, 0x03, 0x48, 0x39, 0x45, 0xc0, 0x0f, 0x8f, 0x75, 0xff, 0xff,
    0xff, 0x48, 0x8b, 0x55, 0xf8, 0x48, 0x8b, 0x45, 0xf0, 0x48, 0x01, 0xc2, 0x48, 0x8b, 0x45, 0xe8,
    0x48, 0x01, 0xc2, 0x48, 0x8b, 0x45, 0xe0, 0x48, 0x01, 0xd0, 0x5d, 0xc3,
];

/// 0: mov [rsp-8],rbx; 5: call 0; a: mov rax,[rsp-8]; f: mov rax,[rax]; 12: nop
/// (the call's return address lands where rbx was kept).
const REDZONE: [u8; 19] = [
    0x48, 0x89, 0x5c, 0x24, 0xf8, 0xe8, 0xf6, 0xff, 0xff, 0xff, 0x48, 0x8b, 0x44, 0x24, 0xf8, 0x48,
    0x8b, 0x00, 0x90,
];

/// 0: push rbp; 1: mov rbp,rsp; 4: mov [rbp-0x10],rdi; 8: mov [rsi],rdx;
/// b: mov rax,[rbp-0x10]; f: mov rax,[rax]; 12: nop; 13: pop rbp; 14: ret
const KEPT: [u8; 21] = [
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0x7d, 0xf0, 0x48, 0x89, 0x16, 0x48, 0x8b, 0x45, 0xf0, 0x48,
    0x8b, 0x00, 0x90, 0x5d, 0xc3,
];

/// KEPT with the slot's address taken first: 0: push rbp; 1: mov rbp,rsp;
/// 4: lea rcx,[rbp-0x10]; 8: mov [rbp-0x10],rdi; c: mov [rsi],rdx; f: mov rax,[rbp-0x10];
/// 13: mov rax,[rax]; 16: nop; 17: pop rbp; 18: ret
const ESCAPED: [u8; 25] = [
    0x55, 0x48, 0x89, 0xe5, 0x48, 0x8d, 0x4d, 0xf0, 0x48, 0x89, 0x7d, 0xf0, 0x48, 0x89, 0x16, 0x48,
    0x8b, 0x45, 0xf0, 0x48, 0x8b, 0x00, 0x90, 0x5d, 0xc3,
];

/// 0: mov rcx,rdi; 3: mov rax,rcx; 6: mov rcx,[rcx+8]; a: mov rax,[rax]; d: nop;
/// e: test rcx,rcx; 11: jne 3; 13: ret (rcx holds rdi on the first pass only)
const REGLOOP: [u8; 20] = [
    0x48, 0x89, 0xf9, 0x48, 0x89, 0xc8, 0x48, 0x8b, 0x49, 0x08, 0x48, 0x8b, 0x00, 0x90, 0x48, 0x85,
    0xc9, 0x75, 0xf0, 0xc3,
];

/// 0: mov [rsp-8],rbx; 5: add rsp,0x100; c: sub rsp,0x100; 13: mov rax,[rsp-8];
/// 18: mov rax,[rax]; 1b: nop (the slot was 0x100 bytes below rsp for a while)
const BELOW_RED_ZONE: [u8; 28] = [
    0x48, 0x89, 0x5c, 0x24, 0xf8, 0x48, 0x81, 0xc4, 0x00, 0x01, 0x00, 0x00, 0x48, 0x81, 0xec, 0x00,
    0x01, 0x00, 0x00, 0x48, 0x8b, 0x44, 0x24, 0xf8, 0x48, 0x8b, 0x00, 0x90,
];

/// 0: mov rax,[rdi]; 3: mov rax,[rax]; 6: nop; 7: jmp rsi
const INDIRECT: [u8; 9] = [0x48, 0x8b, 0x07, 0x48, 0x8b, 0x00, 0x90, 0xff, 0xe6];

/// 0: mov rax,[rbp-8]; 4: mov [rax],edx; 6: mov rdx,[rax+8]; a: nop; b: ret
const KEEPS: [u8; 12] = [
    0x48, 0x8b, 0x45, 0xf8, 0x89, 0x10, 0x48, 0x8b, 0x50, 0x08, 0x90, 0xc3,
];

/// perf register numbers
const AX: u32 = 0;
const DX: u32 = 3;
const SI: u32 = 4;
const DI: u32 = 5;
const BP: u32 = 6;
const SP: u32 = 7;
const BX: u32 = 1;

fn with(list: &[(u32, u64)]) -> impl Fn(u32) -> Option<u64> + '_ {
    move |i| list.iter().find(|(r, _)| *r == i).map(|&(_, v)| v)
}

fn at(code: &[u8], off: u64, regs: &dyn Registers) -> Result<(Vec<Access>, Which), Unresolved> {
    Site::decode(code, IP, code.len() as u64, IP + off, Bitness::B64)?
        .resolve(regs, &SegmentBases::default())
}

fn acc(addr: u64, size: u32, direction: Direction) -> Access {
    Access {
        addr,
        size,
        direction,
    }
}

#[test]
fn a_pointer_reloaded_from_its_slot_is_found_in_the_register_it_came_from() {
    // After `mov rax,[rax]`: rax holds the counter's value; the pointer came from the
    // slot that `mov [rbp-0x18],rdi` filled, and rdi is never written.
    let r = [
        (AX, 41),
        (DX, 40),
        (SI, 1000),
        (DI, 0x6000),
        (BP, FRAME),
        (SP, FRAME),
    ];
    assert_eq!(
        at(&INCREMENT, 0x1d, &with(&r)),
        Ok((
            vec![acc(0x6000, 8, Direction::Load)],
            Which::PreviousRecovered
        ))
    );
    // After the store `mov [rax],rdx`: rax is unchanged, nothing to recover.
    let r = [
        (AX, 0x6000),
        (DX, 42),
        (DI, 0x6000),
        (BP, FRAME),
        (SP, FRAME),
    ];
    assert_eq!(
        at(&INCREMENT, 0x28, &with(&r)),
        Ok((vec![acc(0x6000, 8, Direction::Store)], Which::Previous))
    );
}

#[test]
fn an_array_element_is_the_reloaded_base_plus_the_index_still_in_its_register() {
    // rax = [rbp-0x38] + rdx, then `mov rax,[rax]`: the base is rdi's entry value, the
    // scaled index is still in rdx.
    let r = [
        (AX, 7),
        (DX, 0x40),
        (SI, 1024),
        (DI, 0x10_0000),
        (BP, FRAME),
        (SP, FRAME),
    ];
    for off in [0x4c, 0x6a] {
        assert_eq!(
            at(&READ_ARRAY, off, &with(&r)),
            Ok((
                vec![acc(0x10_0040, 8, Direction::Load)],
                Which::PreviousRecovered
            )),
            "sampled at {off:#x}"
        );
    }
}

#[test]
fn a_global_array_through_rip_is_a_constant_plus_the_index() {
    // `lea rax,[rip+0x2000]` (g) then `mov rax,[rdx+rax]`: rax was a constant.
    let r = [(AX, 7), (DX, 0x28), (DI, 5), (BP, FRAME), (SP, FRAME)];
    let g = IP + 0x1b + 0x2000;
    assert_eq!(
        at(&GET, 0x1f, &with(&r)),
        Ok((
            vec![acc(g + 0x28, 8, Direction::Load)],
            Which::PreviousRecovered
        ))
    );
}

#[test]
fn push_pop_and_leave_move_rsp_by_a_known_amount() {
    let sp = FRAME - 0x30;
    let r = [(AX, 1), (BP, sp), (SP, sp)];
    // After `push rbp`: the store went where rsp points now.
    assert_eq!(
        at(&INCREMENT, 1, &with(&r)),
        Ok((vec![acc(sp, 8, Direction::Store)], Which::PreviousRecovered))
    );
    // After `pop rbp`: the load came from just below rsp.
    assert_eq!(
        at(&INCREMENT, 0x3a, &with(&r)),
        Ok((
            vec![acc(sp - 8, 8, Direction::Load)],
            Which::PreviousRecovered
        ))
    );
    // After `leave` (rsp = rbp + 8, rbp = [old rbp]): the load came from rsp - 8.
    assert_eq!(
        at(&CALLS, 0x46, &with(&r)),
        Ok((
            vec![acc(sp - 8, 8, Direction::Load)],
            Which::PreviousRecovered
        ))
    );
}

#[test]
fn a_pointer_that_changes_around_a_loop_is_not_taken_from_the_entry_register() {
    // `p = p->next`: the slot holds rdi only on the first pass, so no register holds the
    // pointer `mov rax,[rax]` and `mov rax,[rax+8]` read.
    let r = [(AX, 9), (DI, 0x6000), (BP, FRAME), (SP, FRAME)];
    for off in [0x19, 0x25] {
        assert_eq!(
            at(&WALK, off, &with(&r)),
            Err(Unresolved::AddressOverwritten),
            "sampled at {off:#x}"
        );
    }
}

#[test]
fn a_register_that_changes_around_a_loop_is_not_taken_from_its_first_pass() {
    let r = [(AX, 9), (2, 0x7000), (DI, 0x6000), (SP, FRAME)];
    assert_eq!(
        at(&REGLOOP, 0xd, &with(&r)),
        Err(Unresolved::AddressOverwritten)
    );
}

#[test]
fn a_slot_left_below_the_red_zone_is_forgotten() {
    // A signal may be delivered there while rsp is above it.
    let r = [(AX, 9), (BX, 0x6000), (SP, FRAME)];
    assert_eq!(
        at(&BELOW_RED_ZONE, 0x1b, &with(&r)),
        Err(Unresolved::AddressOverwritten)
    );
}

#[test]
fn a_call_forgets_the_stack_and_the_registers_it_may_change() {
    // The return address overwrote the red-zone slot that held rbx.
    let r = [(AX, 9), (BX, 0x6000), (SP, FRAME)];
    assert_eq!(
        at(&REDZONE, 0x12, &with(&r)),
        Err(Unresolved::AddressOverwritten)
    );
    // rdi, where the pointer came from, is not kept across `call f`.
    let r = [(AX, 9), (DI, 0x6000), (BP, FRAME), (SP, FRAME - 0x20)];
    assert_eq!(
        at(&CALLS, 0x29, &with(&r)),
        Err(Unresolved::AddressOverwritten)
    );
}

#[test]
fn a_store_through_a_pointer_forgets_the_frame_only_once_its_address_is_taken() {
    let r = [
        (AX, 9),
        (DX, 3),
        (SI, 0x9000),
        (DI, 0x6000),
        (BP, FRAME),
        (SP, FRAME),
    ];
    assert_eq!(
        at(&KEPT, 0x12, &with(&r)),
        Ok((
            vec![acc(0x6000, 8, Direction::Load)],
            Which::PreviousRecovered
        ))
    );
    // rcx = rbp-0x10: the store through rsi may have changed the slot.
    assert_eq!(
        at(&ESCAPED, 0x16, &with(&r)),
        Err(Unresolved::AddressOverwritten)
    );
}

#[test]
fn what_cannot_be_followed_says_why() {
    let r = [(AX, 9), (DI, 0x6000), (BP, FRAME), (SP, FRAME)];
    let why = |code: &[u8], size: u64, off: u64, bitness: Bitness| {
        Site::decode(code, IP, size, IP + off, bitness)
            .and_then(|s| s.resolve(&with(&r), &SegmentBases::default()))
    };
    assert!(matches!(
        why(&INDIRECT, INDIRECT.len() as u64, 6, Bitness::B64),
        Err(Unresolved::AddressUntraced(w)) if w.contains("indirect jump")
    ));
    // No symbol size, or a size past the code that could be read.
    assert!(matches!(
        why(&INCREMENT, 0, 0x1d, Bitness::B64),
        Err(Unresolved::AddressUntraced(w)) if w.contains("size")
    ));
    assert!(matches!(
        why(&INCREMENT[..0x30], INCREMENT.len() as u64, 0x1d, Bitness::B64),
        Err(Unresolved::AddressUntraced(w)) if w.contains("readable")
    ));
    // mov eax,[eax]; nop in 32-bit code
    assert_eq!(
        why(&[0x8b, 0x00, 0x90], 3, 2, Bitness::B32),
        Err(Unresolved::AddressUntraced("32-bit code is not followed"))
    );
}

#[test]
fn accesses_whose_registers_survive_are_taken_as_before() {
    // `mov rax,[rbp-8]; mov [rax],edx`: at the store, the load of the pointer just ran.
    let r = [(AX, 0x6000), (DX, 0x20), (BP, FRAME), (SP, FRAME)];
    assert_eq!(
        at(&KEEPS, 4, &with(&r)),
        Ok((vec![acc(FRAME - 8, 8, Direction::Load)], Which::Previous))
    );
    // After the store: rax is its address still.
    assert_eq!(
        at(&KEEPS, 6, &with(&r)),
        Ok((vec![acc(0x6000, 4, Direction::Store)], Which::Previous))
    );
    // After `mov rdx,[rax+8]`: it overwrote rdx, not its address.
    assert_eq!(
        at(&KEEPS, 0xa, &with(&r)),
        Ok((vec![acc(0x6008, 8, Direction::Load)], Which::Previous))
    );
}

#[test]
fn never_panics_on_any_function() {
    let mut x: u32 = 0x9e37_79b9;
    let r = [(AX, 1), (DX, 2), (DI, 3), (BP, FRAME), (SP, FRAME)];
    for _ in 0..3_000 {
        let mut f = [0u8; 48];
        for v in &mut f {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *v = x as u8;
        }
        for off in 0..f.len() as u64 {
            for size in [0, 32, f.len() as u64, 1 << 20] {
                if let Ok(s) = Site::decode(&f, IP, size, IP + off, Bitness::B64) {
                    let _ = s.resolve(&with(&r), &SegmentBases::default());
                }
            }
        }
    }
}
