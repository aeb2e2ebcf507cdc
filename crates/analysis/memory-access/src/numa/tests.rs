//! The NUMA attribution and its sentences on a constructed two-node triad: three arrays,
//! `a` initialised by the main thread alone (all on node 0), `b` in parallel with the
//! compute loop's distribution (half on each node), `c` in parallel with the opposite one;
//! eight threads, four on each node, read each array's half that is theirs.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};

use kairos_model::{Frame, Mode, Profile, Stack, Thread};
use kairos_platform::numa::{Node, Topology};

use super::attribute::{attribute, Inputs, NumaData, ObjectNuma};
use super::faults::{Fault, Faults};
use super::placement::{Placement, SnapshotInfo};
use super::problems::{problems, Kind};
use super::query::Vma;
use super::{HUGE, PAGE};
use crate::build::Built;
use crate::objects::{HeapBlock, ObjectMap, Region};
use crate::{AccessSample, Direction, Source};

const PID: u32 = 10;
const PAGES: u64 = 1024;
const A: u64 = 0x7f00_0000_0000;
const B: u64 = A + (8 << 20);
const C: u64 = B + (8 << 20);
const QUERY_NS: u64 = 50_000;

fn topology(nodes: u32) -> Topology {
    let per = 8 / nodes;
    Topology {
        nodes: (0..nodes)
            .map(|n| Node {
                id: n,
                cpus: (n * per..(n + 1) * per).collect(),
                mem_total_kb: None,
                distances: vec![],
            })
            .collect(),
        source: "test".into(),
    }
}

/// Frames 0 `init_arrays`, 1 `main`, 2 `init_part`; stacks 0 init_arrays <- main, 1 init_part.
fn profile() -> Profile {
    let frame = |f: &str, line| Frame {
        address: 0,
        module: None,
        module_offset: 0,
        function: f.into(),
        file: Some("/src/triad.c".into()),
        line: Some(line),
        inline_depth: 0,
        mode: Mode::User,
    };
    Profile {
        threads: (10..=18)
            .map(|t| Thread {
                pid: PID as i32,
                tid: t,
                name: "triad".into(),
                process_name: "triad".into(),
            })
            .collect(),
        frames: vec![
            frame("init_arrays", 40),
            frame("main", 90),
            frame("init_part", 50),
        ],
        stacks: vec![
            Stack {
                parent: Some(2),
                frame: 0,
            },
            Stack {
                parent: None,
                frame: 2,
            },
            Stack {
                parent: None,
                frame: 1,
            },
        ],
        ..Profile::default()
    }
}

fn heap() -> Vec<HeapBlock> {
    [("triad.c:31", A), ("triad.c:32", B), ("triad.c:33", C)]
        .iter()
        .map(|&(site, addr)| HeapBlock {
            pid: PID,
            addr,
            size: PAGES * PAGE,
            alloc_ns: 100,
            free_ns: None,
            site: site.into(),
        })
        .collect()
}

/// CPU of thread `tid` (11..=18): the first four on node 0 (CPUs 0-3), the others on node 1.
fn cpu(tid: u32) -> u32 {
    tid - 11
}

/// Which half of an array thread `tid` works on in the compute loop.
fn half(tid: u32) -> u64 {
    u64::from(tid >= 15)
}

fn fault(t: u64, tid: u32, cpu: u32, addr: u64, write: bool, stack: u32) -> Fault {
    Fault {
        time_ns: t,
        pid: PID,
        tid,
        cpu,
        addr,
        write: Some(write),
        stack: Some(stack),
    }
}

struct Case {
    faults: Faults,
    placement: Placement,
    samples: Vec<AccessSample>,
}

fn triad() -> Case {
    let mut faults = Vec::new();
    let mut placement = Placement {
        stride: 1,
        ..Placement::default()
    };
    let runs = placement.runs.entry(PID).or_default();
    let mut t = 200;
    for p in 0..PAGES {
        // a: the main thread, on CPU 0, in init_arrays.
        faults.push(fault(t, 10, 0, A + p * PAGE + 8, true, 0));
        // b: the thread of that half, as the compute loop will use it.
        let (bt, ct) = (
            11 + 4 * (p * 2 / PAGES) as u32 + (p % 4) as u32,
            15 - 4 * (p * 2 / PAGES) as u32 + (p % 4) as u32,
        );
        faults.push(fault(t + 1, bt, cpu(bt), B + p * PAGE, true, 1));
        // c: the opposite half's threads.
        faults.push(fault(t + 2, ct, cpu(ct), C + p * PAGE, true, 1));
        t += 3;
    }
    runs.insert(A, A + PAGES * PAGE, 0, QUERY_NS);
    runs.insert(B, B + PAGES / 2 * PAGE, 0, QUERY_NS);
    runs.insert(B + PAGES / 2 * PAGE, B + PAGES * PAGE, 1, QUERY_NS);
    runs.insert(C, C + PAGES / 2 * PAGE, 1, QUERY_NS);
    runs.insert(C + PAGES / 2 * PAGE, C + PAGES * PAGE, 0, QUERY_NS);
    placement.snapshots.push(SnapshotInfo {
        time_ns: QUERY_NS,
        by_node: BTreeMap::new(),
        cost_ns: 1,
    });
    placement.vmas.insert(
        (PID, A),
        Vma {
            pid: PID,
            start: A,
            end: C + PAGES * PAGE,
            name: "[anon]".into(),
            policy: "default".into(),
            anon_huge_kb: 0,
        },
    );
    // The main thread's stores while it initialises a: it writes a, it does not read it.
    let mut samples: Vec<AccessSample> = (0..30)
        .map(|i| AccessSample {
            direction: Direction::Store,
            ..sample(300 + i, 10, 0, A + i * PAGE)
        })
        .collect();
    for tid in 11..=18u32 {
        for i in 0..40u64 {
            for base in [A, B, C] {
                let addr = base + (half(tid) * PAGES / 2 + i) * PAGE + 16;
                samples.push(sample(60_000 + i, tid, cpu(tid), addr));
            }
        }
    }
    Case {
        faults: Faults {
            faults,
            events: vec!["exceptions:page_fault_user".into()],
            recording_faults: 0,
            notes: vec![],
        },
        placement,
        samples,
    }
}

fn sample(t: u64, tid: u32, cpu: u32, addr: u64) -> AccessSample {
    AccessSample {
        time_ns: t,
        pid: PID,
        tid,
        ip: 0x1000,
        function: 0,
        addr,
        size: 8,
        direction: Direction::Load,
        weight: 250_000,
        source: Source::Registers,
        sp: None,
        level: None,
        hitm: false,
        cpu,
        phys_addr: None,
    }
}

fn run(case: &Case, nodes: u32) -> (NumaData, ObjectMap, Built) {
    let mut map = ObjectMap::new(
        heap(),
        vec![],
        vec![Region {
            pid: PID,
            start: A,
            end: C + PAGES * PAGE,
            name: "[anon]".into(),
        }],
    );
    let locations = case.samples.iter().map(|s| map.locate(s)).collect();
    let mut built = Built {
        samples: case.samples.clone(),
        locations,
        objects: vec![],
        functions: vec!["triad".into()],
        skipped: 0,
    };
    let topo = topology(nodes);
    let p = profile();
    let sources = HashMap::new();
    let inp = Inputs {
        built: &built,
        profile: &p,
        placement: Some(&case.placement),
        faults: &case.faults,
        topology: Some(&topo),
        sources: &sources,
    };
    let data = attribute(&inp, &mut map);
    built.objects = map.objects().to_vec();
    (data, map, built)
}

fn object(built: &Built, name: &str) -> u32 {
    built
        .objects
        .iter()
        .position(|o| o.name.starts_with(name))
        .unwrap_or(usize::MAX) as u32
}

/// `case` attributed over `map` on two nodes without address samples: the record of the
/// object whose name starts with `name` (which must exist), if it has one.
fn placed(case: &Case, map: &mut ObjectMap, name: &str) -> Option<ObjectNuma> {
    let built = Built::default();
    let (topo, p, sources) = (topology(2), profile(), HashMap::new());
    let inp = Inputs {
        built: &built,
        profile: &p,
        placement: Some(&case.placement),
        faults: &case.faults,
        topology: Some(&topo),
        sources: &sources,
    };
    let data = attribute(&inp, map);
    let id = map
        .objects()
        .iter()
        .position(|o| o.name.starts_with(name))
        .unwrap_or_else(|| panic!("no object {name}")) as u32;
    data.objects.into_iter().find(|o| o.object == id)
}

#[test]
fn serial_initialisation_is_one_problem_with_the_recipes_sentence() {
    let case = triad();
    let (data, _, built) = run(&case, 2);
    let a = data
        .objects
        .iter()
        .find(|o| o.object == object(&built, "triad.c:31"))
        .unwrap();
    assert_eq!(a.pages, BTreeMap::from([(0, PAGES)]));
    assert_eq!(a.first_touch, BTreeMap::from([(0, PAGES)]));
    assert_eq!(
        a.threads,
        BTreeMap::from([(0, 5), (1, 4)]),
        "the main thread and the workers"
    );
    assert_eq!(a.readers, BTreeMap::from([(0, 4), (1, 4)]), "the workers");
    assert_eq!((a.with_node, a.remote), (350, 160));
    let t = data.touchers.iter().find(|t| t.object == a.object).unwrap();
    assert_eq!(
        (t.tid, t.node, t.pages, t.function.as_str()),
        (10, 0, PAGES, "init_arrays")
    );
    assert_eq!(t.stack, "init_arrays (triad.c:40) <- main (triad.c:90)");
    let found = problems(&data, &built.objects, 2);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].kind, Kind::OneNode);
    assert_eq!(
        found[0].sentence,
        "`triad.c:31` (4 MiB): all pages on node 0, first touched by thread 10 (the main thread) in `init_arrays`; 4 of 8 threads that read it run on node 1 (an estimated 46% of its sampled accesses are remote): initialise it in parallel with the same distribution as the compute loop, or interleave it"
    );
    // b matches the compute loop: no problem. c is spread the other way round: all remote.
    let c = object(&built, "triad.c:33");
    assert_eq!(found[1].object, c);
    assert_eq!(found[1].kind, Kind::Mismatched);
    assert!(
        found[1].sentence.contains(
            "nodes 0 (50%) and 1 (50%), yet an estimated 100% of its sampled accesses are remote"
        ),
        "{}",
        found[1].sentence
    );
    let b = data
        .objects
        .iter()
        .find(|o| o.object == object(&built, "triad.c:32"))
        .unwrap();
    assert_eq!((b.remote, b.pages.get(&1).copied()), (0, Some(PAGES / 2)));
    assert_eq!(b.touching_threads, 8);
}

#[test]
fn one_node_has_no_remote_access_and_no_problem() {
    let mut case = triad();
    for r in case.placement.runs.values_mut() {
        let all: Vec<_> = r.iter().collect();
        for x in all {
            r.insert(x.start, x.end, 0, x.seen_ns);
        }
    }
    let (data, _, built) = run(&case, 1);
    assert!(
        data.objects.iter().all(|o| o.remote == 0),
        "every access is local"
    );
    assert!(problems(&data, &built.objects, 1).is_empty());
    // First touch is still there.
    assert!(data.touchers.iter().any(|t| t.function == "init_arrays"));
}

#[test]
fn a_read_before_the_write_does_not_place_the_page() {
    let mut case = triad();
    // Thread 18 reads a's first page before the main thread writes it: the zero page.
    case.faults
        .faults
        .insert(0, fault(150, 18, 7, A + 64, false, 1));
    let (data, _, built) = run(&case, 2);
    let a = object(&built, "triad.c:31");
    assert!(
        data.touchers
            .iter()
            .filter(|t| t.object == a)
            .all(|t| t.tid == 10),
        "{:?}",
        data.touchers
    );
}

#[test]
fn a_huge_page_is_placed_by_one_fault_per_2_mib() {
    let mut case = triad();
    // a in huge pages: one fault per 2 MiB block, the other pages placed with it.
    case.faults
        .faults
        .retain(|f| f.addr < A || f.addr >= A + PAGES * PAGE || (f.addr - A) % HUGE < PAGE);
    if let Some(v) = case.placement.vmas.get_mut(&(PID, A)) {
        v.anon_huge_kb = PAGES * PAGE / 1024;
    }
    let (data, _, built) = run(&case, 2);
    let a = data
        .objects
        .iter()
        .find(|o| o.object == object(&built, "triad.c:31"))
        .unwrap();
    let blocks = PAGES * PAGE / HUGE;
    assert_eq!(
        a.huge_pages,
        PAGES - blocks,
        "all but the faulting page of each block"
    );
    assert_eq!(a.first_touch.get(&0), Some(&PAGES));
    assert_eq!(a.untouched, 0);
    // Without transparent huge pages in the mapping the same pages have no first touch.
    if let Some(v) = case.placement.vmas.get_mut(&(PID, A)) {
        v.anon_huge_kb = 0;
    }
    let (data, _, built) = run(&case, 2);
    let a = data
        .objects
        .iter()
        .find(|o| o.object == object(&built, "triad.c:31"))
        .unwrap();
    assert_eq!((a.huge_pages, a.untouched), (0, PAGES - blocks));
}

#[test]
fn pages_touched_after_the_last_query_are_placed_by_their_toucher() {
    let mut case = triad();
    // A fourth array touched after the query, by a thread on node 1.
    let d = C + (8 << 20);
    for p in 0..8 {
        case.faults
            .faults
            .push(fault(QUERY_NS + 10 + p, 16, 5, d + p * PAGE, true, 1));
    }
    let mut map_heap = heap();
    map_heap.push(HeapBlock {
        pid: PID,
        addr: d,
        size: 8 * PAGE,
        alloc_ns: QUERY_NS + 5,
        free_ns: None,
        site: "triad.c:34".into(),
    });
    let mut map = ObjectMap::new(map_heap, vec![], vec![]);
    let o = placed(&case, &mut map, "triad.c:34").unwrap();
    assert_eq!(o.estimated, BTreeMap::from([(1, 8)]));
    assert!(o.pages.is_empty());
}

#[test]
fn a_block_freed_before_the_last_query_keeps_the_pages_it_had() {
    let mut case = triad();
    // A second query after the arrays were freed: the pages are still there (freed memory
    // a program keeps), on the same node.
    let runs = case.placement.runs.entry(PID).or_default();
    for r in runs.clone().iter() {
        runs.insert(r.start, r.end, r.node, QUERY_NS + 1_000);
    }
    let mut heap = heap();
    for b in &mut heap {
        b.free_ns = Some(QUERY_NS + 500);
    }
    let mut map = ObjectMap::new(
        heap,
        vec![],
        vec![Region {
            pid: PID,
            start: A,
            end: C + PAGES * PAGE,
            name: "[anon]".into(),
        }],
    );
    let a = placed(&case, &mut map, "triad.c:31").unwrap();
    assert_eq!(
        a.pages,
        BTreeMap::from([(0, PAGES)]),
        "seen while alive, at the first query"
    );
    // Freed before any query saw them: the mapping holds those pages, not the block.
    let mut late = triad();
    let runs = late.placement.runs.entry(PID).or_default();
    for r in runs.clone().iter() {
        runs.insert(r.start, r.end, r.node + 1, QUERY_NS + 1_000);
    }
    let map2_heap: Vec<HeapBlock> = heap_freed_at(QUERY_NS - 1);
    let mut map = ObjectMap::new(
        map2_heap,
        vec![],
        vec![Region {
            pid: PID,
            start: A,
            end: C + PAGES * PAGE,
            name: "[anon]".into(),
        }],
    );
    assert_eq!(
        placed(&late, &mut map, "[anon]").map(|o| o.total_pages()),
        Some(3 * PAGES)
    );
}

fn heap_freed_at(t: u64) -> Vec<HeapBlock> {
    heap()
        .into_iter()
        .map(|b| HeapBlock {
            free_ns: Some(t),
            ..b
        })
        .collect()
}

#[test]
fn a_huge_page_touched_after_the_last_query_counts_whole() {
    let mut case = triad();
    // A fourth array in a mapping with huge pages, touched after the last query: one fault
    // per 2 MiB block, the first by the main thread, the second by a thread on node 1.
    let d = C + (16 << 20);
    case.faults
        .faults
        .push(fault(QUERY_NS + 10, 10, 0, d + 64, true, 0));
    case.faults
        .faults
        .push(fault(QUERY_NS + 11, 16, 5, d + HUGE + 64, true, 1));
    // And a block with two faults of its own: 4 KiB pages, each counted once.
    case.faults
        .faults
        .push(fault(QUERY_NS + 12, 16, 5, d + 2 * HUGE, true, 1));
    case.faults
        .faults
        .push(fault(QUERY_NS + 13, 16, 5, d + 2 * HUGE + PAGE, true, 1));
    case.placement.vmas.insert(
        (PID, d),
        Vma {
            pid: PID,
            start: d,
            end: d + 3 * HUGE,
            name: "[anon]".into(),
            policy: "default".into(),
            anon_huge_kb: 2048,
        },
    );
    let mut heap = heap();
    heap.push(HeapBlock {
        pid: PID,
        addr: d,
        size: 3 * HUGE,
        alloc_ns: QUERY_NS + 5,
        free_ns: None,
        site: "triad.c:34".into(),
    });
    let mut map = ObjectMap::new(heap, vec![], vec![]);
    let o = placed(&case, &mut map, "triad.c:34").unwrap();
    let huge = HUGE / PAGE;
    assert_eq!(o.estimated, BTreeMap::from([(0, huge), (1, huge + 2)]));
    assert_eq!(o.huge_pages, 2 * (huge - 1));
    assert_eq!(o.first_touch.values().sum::<u64>(), 2 * huge + 2);
}

#[test]
fn an_object_too_little_sampled_is_said_not_judged() {
    let mut case = triad();
    // Keep a's samples from the main thread only (its initialisation), 10 of them.
    case.samples.retain(|s| {
        !(s.addr >= A && s.addr < A + PAGES * PAGE) || (s.tid == 10 && s.time_ns < 310)
    });
    let (data, _, built) = run(&case, 2);
    let a = object(&built, "triad.c:31");
    assert!(!problems(&data, &built.objects, 2)
        .iter()
        .any(|p| p.object == a));
    let not = super::problems::unjudged(&data, &built.objects, 2);
    assert_eq!(not.len(), 1, "{not:?}");
    assert_eq!(
        not[0].1,
        "`triad.c:31` (4 MiB): all pages on node 0, first touched by thread 10 (the main thread) in `init_arrays`; only 10 sampled accesses, too few to tell which nodes the threads that use it run on: sample longer or more often (-k sampling-interval-us)"
    );
    assert!(
        super::problems::unjudged(&data, &built.objects, 1).is_empty(),
        "one node: nothing to judge"
    );
}

#[test]
fn without_placement_the_report_says_why_and_counts_first_touches() {
    let case = triad();
    let rec = super::Recorded {
        placement: Some(Placement {
            missing: Some(kairos_platform::numa::query_error_sentence(libc::ENOSYS, 7)),
            ..Placement::default()
        }),
        topology: Some(topology(2)),
        ..Default::default()
    };
    let mut map = ObjectMap::new(heap(), vec![], vec![]);
    let locations = case.samples.iter().map(|s| map.locate(s)).collect();
    let built = Built {
        samples: case.samples.clone(),
        locations,
        objects: map.objects().to_vec(),
        functions: vec![],
        skipped: 0,
    };
    let (data, s) = super::analyse(
        &rec,
        &case.faults,
        &built,
        &mut map,
        &profile(),
        &HashMap::new(),
        0,
        100_000,
    );
    assert!(s
        .placement_missing
        .as_deref()
        .is_some_and(|m| m.contains("ENOSYS")));
    assert!(
        s.notes
            .iter()
            .any(|n| n.starts_with("page placement: this kernel has no move_pages(2) (ENOSYS")),
        "{:?}",
        s.notes
    );
    // Every faulted page is still counted, on the node of the CPU that touched it.
    let a = map
        .objects()
        .iter()
        .position(|o| o.name.starts_with("triad.c:31"))
        .unwrap() as u32;
    assert_eq!(
        data.objects
            .iter()
            .find(|o| o.object == a)
            .map(|o| o.estimated.clone()),
        Some(BTreeMap::from([(0, PAGES)]))
    );
    let sec = super::report::section(&s, "NUMA");
    let placement = sec
        .entries
        .iter()
        .find(|(k, _)| k == "Placement")
        .map(|(_, v)| v.clone());
    assert_eq!(
        placement,
        Some(kairos_report::Cell::text(
            "not queried (see the notes): pages placed by first touch"
        ))
    );
    assert_eq!(
        s.problems, 2,
        "judged from first touch and samples all the same"
    );
}

/// The `numa` report of the constructed triad, as text and JSON golden files next to the
/// command's (a mismatch writes `<golden>.actual`; bless with `KAIROS_BLESS=1`).
#[test]
fn the_two_node_report_matches_its_goldens() {
    let case = triad();
    // The allocation sites' source, so that the arrays are named by their variables.
    let src = std::env::temp_dir().join(format!("kairos-numa-golden-{}", std::process::id()));
    std::fs::create_dir_all(&src).unwrap();
    let file = src.join("triad.c");
    let mut text: Vec<String> = (1..=30).map(|i| format!("/* line {i} */")).collect();
    text.extend([
        "    a = malloc(bytes);".into(),
        "    b = malloc(bytes);".into(),
        "    c = malloc(bytes);".into(),
    ]);
    std::fs::write(&file, text.join("\n")).unwrap();
    let sources: HashMap<String, String> = (31..=33)
        .map(|l| (format!("triad.c:{l}"), format!("{}:{l}", file.display())))
        .collect();
    let rec = super::Recorded {
        placement: Some(case.placement.clone()),
        topology: Some(topology(2)),
        ..Default::default()
    };
    let mut map = ObjectMap::new(
        heap(),
        vec![],
        vec![Region {
            pid: PID,
            start: A,
            end: C + PAGES * PAGE,
            name: "[anon]".into(),
        }],
    );
    let locations = case.samples.iter().map(|s| map.locate(s)).collect();
    let mut built = Built {
        samples: case.samples.clone(),
        locations,
        objects: vec![],
        functions: vec![],
        skipped: 0,
    };
    let (data, summary) = super::analyse(
        &rec,
        &case.faults,
        &built,
        &mut map,
        &profile(),
        &sources,
        0,
        QUERY_NS + 20_000_000,
    );
    built.objects = map.objects().to_vec();
    let n = super::report::Numa { summary, data };
    let meta = vec![(
        "Target".to_string(),
        "triad --init serial (constructed)".to_string(),
    )];
    let doc = super::report::numa(&built.objects, &n, &meta, None);
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let text = doc.to_text();
    let json = doc.to_json();
    let _ = std::fs::remove_dir_all(&src);
    kairos_report::assert_golden(&golden.join("numa-two-nodes.txt"), &text);
    kairos_report::assert_golden(&golden.join("numa-two-nodes_json.txt"), &json);
    // Whole, though wrapped to the line width.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("`a` (triad.c:31, 4 MiB): all pages on node 0, first touched by thread 10 (the main thread) in `init_arrays`"), "{text}");
}

#[test]
fn a_page_still_being_placed_when_a_query_ran_is_not_taken_as_freed() {
    let mut case = triad();
    // A write fault just before the (only) query, whose page the query did not see yet.
    let d = C + (8 << 20);
    case.faults
        .faults
        .push(fault(QUERY_NS - 5, 16, 5, d, true, 1));
    // And a read just before it: the zero page, nothing placed.
    case.faults
        .faults
        .push(fault(QUERY_NS - 4, 16, 5, d + PAGE, false, 1));
    let mut heap = heap();
    heap.push(HeapBlock {
        pid: PID,
        addr: d,
        size: 2 * PAGE,
        alloc_ns: 100,
        free_ns: None,
        site: "triad.c:34".into(),
    });
    let count = |case: &Case| {
        let mut map = ObjectMap::new(heap.clone(), vec![], vec![]);
        placed(case, &mut map, "triad.c:34").map_or(0, |o| o.total_pages())
    };
    assert_eq!(count(&case), 1, "the write's page, on its toucher's node");
    // A second query that did not see it either: gone.
    case.placement.snapshots.push(SnapshotInfo {
        time_ns: QUERY_NS + 100_000_000,
        by_node: BTreeMap::new(),
        cost_ns: 1,
    });
    assert_eq!(count(&case), 0);
}

#[test]
fn every_kth_page_asked_stands_for_k_pages() {
    let mut case = triad();
    case.placement.stride = 4;
    let (data, _, built) = run(&case, 2);
    let a = data
        .objects
        .iter()
        .find(|o| o.object == object(&built, "triad.c:31"))
        .unwrap();
    assert_eq!(a.pages, BTreeMap::from([(0, PAGES)]));
    assert_eq!(a.first_touch, BTreeMap::from([(0, PAGES)]));
    assert!(
        a.estimated.is_empty(),
        "the pages between the asked ones are not estimated again"
    );
}

#[test]
fn with_a_pmu_the_data_sources_remote_bits_are_counted_too() {
    let mut case = triad();
    for (i, s) in case.samples.iter_mut().enumerate() {
        s.source = Source::Pmu;
        s.level = Some(if i % 4 == 0 {
            crate::Bucket::RemoteDram
        } else {
            crate::Bucket::L1
        });
    }
    let (data, _, built) = run(&case, 2);
    let a = data
        .objects
        .iter()
        .find(|o| o.object == object(&built, "triad.c:31"))
        .unwrap();
    assert_eq!(a.pmu, 350);
    assert_eq!(
        a.pmu_remote,
        case.samples
            .iter()
            .enumerate()
            .filter(|(i, s)| i % 4 == 0 && s.addr >= A && s.addr < A + PAGES * PAGE)
            .count() as u64
    );
    // The placement estimate is made all the same.
    assert_eq!(a.remote, 160);
}

/// Lost records may have been page faults: the report says so, and a page with no fault
/// is no longer simply "before the recording".
#[test]
fn lost_records_are_said_beside_first_touch() {
    let mut s = super::Summary {
        recorded: true,
        fault_events: vec!["exceptions:page_fault_user".into()],
        faults: 10,
        ..Default::default()
    };
    let line = |s: &super::Summary| {
        super::report::section(s, "NUMA")
            .entries
            .iter()
            .find(|(k, _)| k == "Records lost (ring full)")
            .map(|(_, v)| v.clone())
    };
    assert_eq!(line(&s), None);
    s.lost_records = 1234;
    assert_eq!(
        line(&s),
        Some(kairos_report::Cell::text(
            "1,234: a page whose fault was lost has no first touch"
        ))
    );
}
