//! The columnar index, its lanes and the split scans against the straightforward way over
//! the model's sample vector: same answers on awkward data (threads sharing a TID, a
//! thread index past the table, CPU numbers past the dense table, samples without a
//! stack, weights of every width, recursion).

use std::collections::BTreeMap;
use std::sync::Arc;

use kairos_model::{Frame, Mode, Profile, Sample, Stack, Thread};

use crate::agg::{aggregate_in, pids, Group};
use crate::ids::NONE;
use crate::index::{Functions, Index};
use crate::query::Sel;

/// `n` samples over 5 threads (two share TID 7), 5 CPUs (one numbered 70,000), 40 stacks.
pub fn profile(n: usize, seed: u64) -> Profile {
    let frame = |k: usize| Frame {
        address: k as u64,
        module: None,
        module_offset: 0,
        function: format!("f{}", k % 9),
        file: None,
        line: None,
        inline_depth: 0,
        mode: Mode::User,
    };
    let thread = |pid: i32, tid: i32, name: &str| Thread {
        pid,
        tid,
        name: name.into(),
        process_name: format!("p{pid}"),
    };
    let mut p = Profile {
        threads: vec![
            thread(1, 7, "a"),
            thread(1, 3, "b"),
            thread(2, 7, "c"),
            thread(2, 9, "d"),
            thread(3, 1, "e"),
        ],
        frames: (0..12).map(frame).collect(),
        // Chains of up to four frames; frame k % 9 names the function, so paths recurse.
        stacks: (0..40u32)
            .map(|i| Stack {
                parent: i.checked_sub(4),
                frame: i % 12,
            })
            .collect(),
        ..Profile::default()
    };
    let mut x = seed | 1;
    let mut t = 5_000u64;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        t += x % 700;
        p.samples.push(Sample {
            time_ns: t,
            // 5 = past the thread table.
            thread: (x % 6) as u32,
            cpu: [0u32, 1, 3, 70_000, 2][(x >> 5) as usize % 5],
            stack: (!(x >> 9).is_multiple_of(13)).then_some((x >> 11) as u32 % 40),
            weight: (x >> 20) % 1_000_000_007,
        });
    }
    p
}

fn index(p: &Profile) -> Index {
    let funcs = Arc::new(Functions::new(p));
    Index::new(p.clone(), funcs)
}

/// Lanes as the index built them before it kept columns: one map entry per sample.
#[allow(clippy::type_complexity)] // the two lane lists, as the old index returned them
fn lanes_by_map(
    p: &Profile,
) -> (
    Vec<(String, String, Vec<u32>)>,
    Vec<(String, String, Vec<u32>)>,
) {
    let mut by_tid: BTreeMap<i32, (String, String, Vec<u32>)> = BTreeMap::new();
    let mut by_cpu: BTreeMap<u32, (String, String, Vec<u32>)> = BTreeMap::new();
    for (i, s) in p.samples.iter().enumerate() {
        let th = p.threads.get(s.thread as usize);
        let tid = th.map_or(-1, |t| t.tid);
        let label = th.map_or_else(
            || "unknown thread".into(),
            |t| format!("{} ({tid})", t.name),
        );
        by_tid
            .entry(tid)
            .or_insert_with(|| (format!("thread:{tid}"), label, Vec::new()))
            .2
            .push(i as u32);
        by_cpu
            .entry(s.cpu)
            .or_insert_with(|| {
                (
                    format!("cpu:{}", s.cpu),
                    format!("CPU {}", s.cpu),
                    Vec::new(),
                )
            })
            .2
            .push(i as u32);
    }
    (
        by_tid.into_values().collect(),
        by_cpu.into_values().collect(),
    )
}

#[test]
fn lanes_match_the_map_per_sample() {
    for (n, seed) in [(0usize, 1u64), (1, 2), (20_000, 3)] {
        let p = profile(n, seed);
        let ix = index(&p);
        let (want_t, want_c) = lanes_by_map(&p);
        let got = |l: &[crate::index::Lane]| {
            l.iter()
                .map(|l| (l.key.clone(), l.label.clone(), l.samples.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(got(&ix.thread_lanes), want_t, "n {n}");
        assert_eq!(got(ix.cpu_lanes()), want_c, "n {n}");
    }
}

#[test]
fn columns_keep_every_sample_and_leaf() {
    let p = profile(20_000, 4);
    let ix = index(&p);
    assert!(
        ix.profile.samples.is_empty(),
        "the samples live in the columns only"
    );
    assert_eq!(ix.samples.to_vec(), p.samples);
    for i in 0..p.samples.len() {
        assert_eq!(ix.leaf_func(i), ix.func_of_node(ix.leaf_node(i)));
        let want = p.samples[i]
            .stack
            .map_or(NONE, |s| ix.stack_node[s as usize]);
        assert_eq!(ix.leaf_node(i), want);
    }
}

/// Self weights and counts per tree node summed sample by sample from the model's vector.
fn naive(
    ix: &Index,
    p: &Profile,
    sel: &Sel,
    only: Option<(Group, u32)>,
) -> (Vec<u64>, Vec<u64>, u64, u64) {
    let n = ix.node_parent.len();
    let (mut w, mut c, mut tw, mut tc) = (vec![0u64; n], vec![0u64; n], 0, 0);
    let pids = pids(p);
    for (i, s) in p
        .samples
        .iter()
        .enumerate()
        .filter(|(_, s)| s.time_ns >= sel.from && s.time_ns < sel.to)
    {
        let tid = p.threads.get(s.thread as usize).map(|t| t.tid);
        if sel
            .tids
            .as_ref()
            .is_some_and(|t| !tid.is_some_and(|x| t.contains(&x)))
        {
            continue;
        }
        if let Some((g, id)) = only {
            let gid = match g {
                Group::Thread => s.thread,
                Group::Cpu => s.cpu,
                Group::Process => p.threads.get(s.thread as usize).map_or(NONE, |t| {
                    pids.binary_search(&t.pid).map_or(NONE, |k| k as u32)
                }),
                Group::Module => ix
                    .funcs
                    .module_id
                    .get(ix.func_of_node(ix.leaf_node(i)) as usize)
                    .copied()
                    .unwrap_or(NONE),
                Group::Function => 0,
            };
            if gid != id {
                continue;
            }
        }
        tw += s.weight;
        tc += 1;
        if let Some(st) = s.stack {
            let node = ix.stack_node[st as usize];
            w[node as usize] += s.weight;
            c[node as usize] += 1;
        }
    }
    (w, c, tw, tc)
}

/// The tree weights are the same in one part, in many, and sample by sample.
#[test]
fn split_aggregates_equal_one_pass() {
    let p = profile(30_000, 5);
    let ix = index(&p);
    let (t0, t1) = (ix.times()[0], ix.times()[ix.times().len() - 1]);
    let sels = [
        Sel {
            from: 0,
            to: u64::MAX,
            tids: None,
        },
        Sel {
            from: t0 + (t1 - t0) / 3,
            to: t0 + (t1 - t0) / 2,
            tids: None,
        },
        Sel {
            from: 0,
            to: u64::MAX,
            tids: Some(vec![7, -1]),
        },
        Sel {
            from: t1,
            to: t1 + 1,
            tids: Some(vec![3]),
        },
    ];
    for sel in &sels {
        for only in [
            None,
            Some((Group::Thread, 2)),
            Some((Group::Cpu, 70_000)),
            Some((Group::Process, 1)),
            Some((Group::Module, 0)),
        ] {
            let want = naive(&ix, &p, sel, only);
            for parts in [1, 2, 3, 7] {
                let a = aggregate_in(&ix, sel, only, Some(parts));
                assert_eq!(
                    (&a.self_w, &a.self_c, a.weight, a.count),
                    (&want.0, &want.1, want.2, want.3),
                    "{} {only:?} parts {parts}",
                    sel.key()
                );
                let mut tot = a.self_w.clone();
                for v in (0..tot.len()).rev() {
                    if ix.node_parent[v] != NONE {
                        tot[ix.node_parent[v] as usize] += tot[v];
                    }
                }
                assert_eq!(a.total_w, tot);
            }
        }
    }
}
