//! Attribution, line grouping and verdicts on hand-made accesses.

use crate::lines::{lines, Line, Verdict};
use crate::objects::{HeapBlock, ObjectKind, ObjectMap, Region, StaticVar};
use crate::totals::{by_function, by_object};
use crate::{line_bytes, AccessSample, Direction, Source};

fn access(tid: u32, t: u64, addr: u64, direction: Direction) -> AccessSample {
    AccessSample {
        time_ns: t,
        pid: 1,
        tid,
        ip: 0x1000,
        function: tid % 2,
        addr,
        size: 8,
        direction,
        weight: 1000,
        source: Source::Registers,
        sp: Some(0x7ff0_0100),
        level: None,
        hitm: false,
        cpu: 0,
        phys_addr: None,
    }
}

fn map() -> ObjectMap {
    let block = |addr, alloc_ns, free_ns, site: &str| HeapBlock {
        pid: 1,
        addr,
        size: 512,
        alloc_ns,
        free_ns,
        site: site.into(),
    };
    ObjectMap::new(
        vec![
            block(0x10_0000, 10, Some(100), "a.c:5"),
            block(0x10_0000, 100, None, "b.c:9"),
        ],
        vec![StaticVar {
            pid: 1,
            addr: 0x60_0000,
            size: 64,
            name: "table".into(),
        }],
        vec![
            Region {
                pid: 1,
                start: 0x10_0000,
                end: 0x20_0000,
                name: "[heap]".into(),
            },
            Region {
                pid: 1,
                start: 0x7ff0_0000,
                end: 0x7ff1_0000,
                name: "[anon]".into(),
            },
            Region {
                pid: 1,
                start: 0x50_0000,
                end: 0x70_0000,
                name: "/bin/prog".into(),
            },
        ],
    )
}

#[test]
fn objects_by_kind_and_time() {
    let mut m = map();
    let name = |m: &mut ObjectMap, s: &AccessSample| {
        let loc = m.locate(s);
        let o = &m.objects()[loc.object as usize];
        (o.kind, o.name.clone(), loc.offset)
    };
    // The same address belongs to two blocks, one after the other.
    assert_eq!(
        name(&mut m, &access(1, 50, 0x10_0008, Direction::Load)),
        (ObjectKind::Heap, "a.c:5 (512 B)".into(), 8)
    );
    assert_eq!(
        name(&mut m, &access(1, 150, 0x10_0008, Direction::Load)),
        (ObjectKind::Heap, "b.c:9 (512 B)".into(), 8)
    );
    // Before the first allocation: the heap mapping.
    assert_eq!(
        name(&mut m, &access(1, 5, 0x10_0008, Direction::Load)).0,
        ObjectKind::Mapping
    );
    assert_eq!(
        name(&mut m, &access(1, 5, 0x60_0010, Direction::Store)),
        (ObjectKind::Static, "table (64 B)".into(), 16)
    );
    assert_eq!(
        name(&mut m, &access(7, 5, 0x7ff0_0200, Direction::Store)),
        (ObjectKind::Stack, "stack of thread 7".into(), 0x200)
    );
    assert_eq!(
        name(&mut m, &access(1, 5, 0x50_0040, Direction::Load)),
        (ObjectKind::Mapping, "/bin/prog".into(), 0x40)
    );
    assert_eq!(
        name(&mut m, &access(1, 5, 0x9000_0000, Direction::Load)).0,
        ObjectKind::Unknown
    );
}

#[test]
fn line_bytes_clip_at_the_line_end() {
    assert_eq!(line_bytes(0x1000, 8), (0x1000, 0, 7));
    assert_eq!(line_bytes(0x103c, 8), (0x1000, 60, 63));
    assert_eq!(line_bytes(0x1008, 0), (0x1000, 8, 8));
    assert_eq!(line_bytes(u64::MAX, 8), (!63, 63, 63));
}

fn verdict_of(samples: &[AccessSample]) -> Line {
    let mut m = map();
    let located: Vec<_> = samples.iter().map(|s| (s, m.locate(s))).collect();
    let mut l = lines(located);
    assert_eq!(l.len(), 1);
    l.remove(0)
}

#[test]
fn disjoint_writers_at_the_same_time_are_false_sharing() {
    let s = [
        access(1, 150, 0x10_0000, Direction::LoadStore),
        access(2, 160, 0x10_0008, Direction::Store),
        access(1, 170, 0x10_0000, Direction::Load),
    ];
    let l = verdict_of(&s);
    assert_eq!(l.verdict, Verdict::FalseSharing);
    assert_eq!(l.threads.len(), 2);
    assert_eq!(l.object_offset, 0);
    let fix = l.fix(ObjectKind::Heap).expect("a fix for false sharing");
    assert!(
        fix.contains("bytes 0..7 (thread 1); bytes 8..15 (thread 2)"),
        "{fix}"
    );
}

#[test]
fn one_after_the_other_is_no_sharing() {
    let s = [
        access(1, 150, 0x10_0000, Direction::Store),
        access(1, 151, 0x10_0000, Direction::Store),
        access(2, 160, 0x10_0008, Direction::Store),
    ];
    assert_eq!(verdict_of(&s).verdict, Verdict::None);
}

#[test]
fn a_byte_written_by_two_threads_is_true_sharing() {
    let s = [
        access(1, 150, 0x10_0000, Direction::LoadStore),
        access(2, 150, 0x10_0004, Direction::Load),
    ];
    assert_eq!(verdict_of(&s).verdict, Verdict::TrueSharing);
    let reads = [
        access(1, 150, 0x10_0000, Direction::Load),
        access(2, 150, 0x10_0000, Direction::Load),
    ];
    assert_eq!(
        verdict_of(&reads).verdict,
        Verdict::None,
        "read-only sharing costs nothing"
    );
}

#[test]
fn reading_what_others_wrote_after_they_ended_is_not_sharing() {
    // Two workers on their own counters at the same time, then the main thread reads both
    // totals after joining them: false sharing between the workers, no true sharing.
    let s = [
        access(2, 150, 0x10_0000, Direction::LoadStore),
        access(3, 160, 0x10_0008, Direction::LoadStore),
        access(2, 170, 0x10_0000, Direction::LoadStore),
        access(3, 180, 0x10_0008, Direction::LoadStore),
        access(1, 500, 0x10_0000, Direction::Load),
        access(1, 510, 0x10_0008, Direction::Load),
    ];
    let l = verdict_of(&s);
    assert_eq!(l.verdict, Verdict::FalseSharing);
    // The fix is about the workers; the main thread came after them.
    let fix = l.fix(ObjectKind::Heap).unwrap();
    assert!(
        fix.contains("(thread 2)") && fix.contains("(thread 3)") && !fix.contains("(thread 1)"),
        "{fix}"
    );
    // The same read while a worker still writes is true sharing.
    let during = [
        access(2, 150, 0x10_0000, Direction::LoadStore),
        access(1, 155, 0x10_0000, Direction::Load),
        access(2, 170, 0x10_0000, Direction::LoadStore),
    ];
    assert_eq!(verdict_of(&during).verdict, Verdict::TrueSharing);
}

#[test]
fn ranges_merge_adjacent_bytes() {
    assert_eq!(Line::ranges(0xff), vec![(0, 7)]);
    assert_eq!(Line::ranges(0xff00_0000_0000_00ff), vec![(0, 7), (56, 63)]);
    assert_eq!(Line::ranges(0), vec![]);
}

#[test]
fn totals_per_object_and_function() {
    let mut m = map();
    let s = [
        access(1, 150, 0x10_0000, Direction::LoadStore),
        access(2, 150, 0x10_0008, Direction::Store),
        access(3, 5, 0x60_0000, Direction::Load),
    ];
    let located: Vec<_> = s.iter().map(|s| (s, m.locate(s))).collect();
    let objects = by_object(located.iter().map(|(s, l)| (*s, *l)));
    assert_eq!(objects.len(), 2);
    let (heap, t) = &objects[0];
    assert_eq!(m.objects()[*heap as usize].name, "b.c:9 (512 B)");
    assert_eq!(
        (t.samples, t.loads, t.stores, t.threads.len()),
        (2, 1, 2, 2)
    );
    let functions = by_function(located.iter().map(|(s, l)| (*s, *l)));
    assert_eq!(functions.len(), 3, "three (function, object) pairs");
}

#[test]
fn a_damaged_block_size_is_scanned_not_indexed() {
    let vast = HeapBlock {
        pid: 1,
        addr: 0x1000,
        size: u64::MAX / 2,
        alloc_ns: 0,
        free_ns: None,
        site: "bad.c:1".into(),
    };
    let mut m = ObjectMap::new(vec![vast], vec![], vec![]);
    let loc = m.locate(&access(1, 5, 0x7fff_0000_0000, Direction::Load));
    assert_eq!(
        m.objects()[loc.object as usize].name,
        format!("bad.c:1 ({} B)", u64::MAX / 2)
    );
    let mut out = Vec::new();
    m.owners(1, 0x2000, 0x3000, (0, 10), &mut out);
    assert_eq!(out, vec![loc.object]);
}

/// A line where thread `a` writes `ra` and thread `b` writes `rb` (line bytes) at the same
/// time, in an object whose first byte is `object_offset` bytes before the line's.
fn shared_line(object_offset: i64, ra: (u8, u8), rb: (u8, u8)) -> Line {
    let mask = |(x, y): (u8, u8)| (x..=y).fold(0u64, |m, i| m | 1 << i);
    let user = |tid, r| crate::lines::ThreadUse {
        tid,
        write_mask: mask(r),
        stores: 10,
        first_ns: 100,
        last_ns: 200,
        ..Default::default()
    };
    Line {
        addr: 0x10_0040,
        object: 0,
        object_offset,
        threads: vec![user(1, ra), user(2, rb)],
        functions: Default::default(),
        samples: 20,
        weight: 20,
        hitm: 0,
        verdict: Verdict::FalseSharing,
        watch: Vec::new(),
        watch_hits: 0,
        confirmed: None,
    }
}

/// phoenix's linear_regression: 64-byte per-thread structs in a calloc'd block that starts
/// 32 bytes into a line. The line at block offsets 32..95 holds thread 1's bytes 32..63 and
/// thread 2's 64..95: their data is already a line apart, the block's start is the cause,
/// and padding would change nothing.
#[test]
fn a_block_that_starts_inside_a_line_is_fixed_by_aligning_the_allocation() {
    let l = shared_line(32, (0, 31), (32, 63));
    assert_eq!(l.object_misalignment(), 32);
    assert!(l.sharing_from_alignment());
    let fix = l.fix(ObjectKind::Heap).unwrap();
    assert!(
        fix.contains("starts 32 bytes into a cache line")
            && fix.contains("aligned_alloc(64, size)")
            && fix.contains("posix_memalign")
            && fix.contains("bytes 32..63 (thread 1); bytes 64..95 (thread 2)"),
        "{fix}"
    );
    assert!(!fix.contains("pad each"), "{fix}");
    let fix = l.fix(ObjectKind::Static).unwrap();
    assert!(
        fix.contains("alignas(64)") && !fix.contains("aligned_alloc"),
        "{fix}"
    );
}

/// Threads 8 bytes apart: their data shares a line whatever the start; padding is the
/// fix, and a heap block also needs an aligned allocation when it starts inside a line.
#[test]
fn interleaved_data_is_fixed_by_padding_and_a_heap_block_by_alignment_too() {
    let l = shared_line(0, (0, 7), (8, 15));
    assert!(!l.sharing_from_alignment());
    let fix = l.fix(ObjectKind::Static).unwrap();
    assert!(
        fix.contains("pad to 64 bytes or align with alignas(64)"),
        "{fix}"
    );
    let l = shared_line(32, (0, 7), (8, 15));
    assert!(!l.sharing_from_alignment());
    let fix = l.fix(ObjectKind::Heap).unwrap();
    assert!(
        fix.contains("pad each thread's part")
            && fix.contains("starts 32 bytes into a line")
            && fix.contains("aligned_alloc(64, size)"),
        "{fix}"
    );
}
