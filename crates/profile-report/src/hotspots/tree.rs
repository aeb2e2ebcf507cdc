//! Fast aggregation for the hotspot tables: weights are added per stack node (or per
//! thread) in plain vectors, then each node is grouped once. Inclusive totals come from
//! subtree sums and one walk of the stack tree, instead of walking every sample's stack.
//! Gives exactly what the per-sample definition gives (see `aggregate` in the parent).

use kairos_model::{Profile, Sample};

use crate::filter::{Acc, Selection};
use crate::group::Grouper;
use crate::GroupBy;

/// Whether every stack's parent comes before it: what the subtree sums need. Profiles
/// read from a result always satisfy it; anything else takes the per-sample path.
pub(super) fn parents_first(p: &Profile) -> bool {
    p.stacks
        .iter()
        .enumerate()
        .all(|(i, s)| s.parent.is_none_or(|q| (q as usize) < i))
}

fn add(v: &mut Vec<Acc>, id: u32, acc: Acc) {
    if v.len() <= id as usize {
        v.resize(id as usize + 1, Acc::default());
    }
    v[id as usize].merge(acc);
}

/// Function, Module (with inclusive totals) and Callstack groupings. Needs
/// [`parents_first`].
pub(super) fn by_stack(sel: &Selection<'_>, g: &mut Grouper<'_>) -> (Vec<Acc>, Vec<Acc>) {
    let p = sel.profile;
    let n = p.stacks.len();
    let mut node = vec![Acc::default(); n];
    let mut none = Acc::default();
    for s in &sel.samples {
        match s.stack.filter(|&st| (st as usize) < n) {
            Some(st) => node[st as usize].add(s),
            None => none.add(s),
        }
    }
    let (mut selfs, mut totals) = (Vec::new(), Vec::new());
    let inclusive = g.by().has_total();
    for (i, &acc) in node.iter().enumerate() {
        if acc.samples == 0 {
            continue;
        }
        let id = if inclusive {
            g.frame_group(p.stacks[i].frame)
        } else {
            g.self_group(&Sample {
                time_ns: 0,
                thread: 0,
                cpu: 0,
                stack: Some(i as u32),
                weight: 0,
            })
        };
        add(&mut selfs, id, acc);
        if !inclusive {
            add(&mut totals, id, acc);
        }
    }
    if none.samples > 0 {
        let id = g.no_stack();
        add(&mut selfs, id, none);
        add(&mut totals, id, none);
    }
    if inclusive {
        inclusive_totals(p, node, g, &mut totals);
    }
    selfs.resize(g.len(), Acc::default());
    totals.resize(g.len(), Acc::default());
    (selfs, totals)
}

/// Adds to `totals` each node's subtree sum under its group, for the nodes whose group
/// does not appear above them on their path: every sample counts once per group on its
/// stack, recursion included.
fn inclusive_totals(p: &Profile, mut sub: Vec<Acc>, g: &mut Grouper<'_>, totals: &mut Vec<Acc>) {
    let n = sub.len();
    for i in (0..n).rev() {
        if let Some(q) = p.stacks[i].parent {
            let a = sub[i];
            sub[q as usize].merge(a);
        }
    }
    // Children lists (CSR) of the nodes that any selected sample passes through.
    let live = |i: usize| sub[i].samples > 0;
    let mut start = vec![0u32; n + 1];
    for (i, s) in p.stacks.iter().enumerate() {
        if let (true, Some(q)) = (live(i), s.parent) {
            start[q as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut children = vec![0u32; start[n] as usize];
    let mut roots = Vec::new();
    for (i, s) in p.stacks.iter().enumerate() {
        match (live(i), s.parent) {
            (false, _) => {}
            (true, None) => roots.push(i as u32),
            (true, Some(q)) => {
                children[fill[q as usize] as usize] = i as u32;
                fill[q as usize] += 1;
            }
        }
    }
    // Depth-first, counting how often each group is on the current path.
    let mut on_path: Vec<u32> = Vec::new();
    let mut stack: Vec<(u32, u32, u32)> = Vec::new(); // (node, next child index, group)
    for root in roots {
        let enter = |i: u32, g: &mut Grouper<'_>, on_path: &mut Vec<u32>, totals: &mut Vec<Acc>| {
            let id = g.frame_group(p.stacks[i as usize].frame);
            if on_path.len() <= id as usize {
                on_path.resize(id as usize + 1, 0);
            }
            if on_path[id as usize] == 0 {
                add(totals, id, sub[i as usize]);
            }
            on_path[id as usize] += 1;
            (i, start[i as usize], id)
        };
        stack.push(enter(root, g, &mut on_path, totals));
        while let Some(top) = stack.last_mut() {
            let (i, next, id) = *top;
            if next < start[i as usize + 1] {
                top.1 += 1;
                let child = children[next as usize];
                stack.push(enter(child, g, &mut on_path, totals));
            } else {
                on_path[id as usize] -= 1;
                stack.pop();
            }
        }
    }
}

/// Process and Thread groupings: one accumulator per thread index.
pub(super) fn by_thread(sel: &Selection<'_>, g: &mut Grouper<'_>) -> (Vec<Acc>, Vec<Acc>) {
    debug_assert!(matches!(g.by(), GroupBy::Process | GroupBy::Thread));
    let threads = sel.profile.threads.len();
    // The last slot gathers samples of thread indices past the table (one group).
    let mut per: Vec<(Acc, Option<&Sample>)> = vec![(Acc::default(), None); threads + 1];
    for &s in &sel.samples {
        let slot = &mut per[(s.thread as usize).min(threads)];
        slot.0.add(s);
        slot.1.get_or_insert(s);
    }
    let mut selfs = Vec::new();
    for (acc, s) in per {
        if let Some(s) = s {
            let id = g.self_group(s);
            add(&mut selfs, id, acc);
        }
    }
    selfs.resize(g.len(), Acc::default());
    (selfs.clone(), selfs)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kairos_model::{Frame, Mode, Module, Stack, Thread};

    use super::*;
    use crate::group::Key;
    use crate::Filter;

    /// A random profile: a stack tree with recursion (frames repeat on paths), inlined
    /// frames, bad stack and thread indices, zero weights.
    fn random_profile(seed: u64) -> Profile {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut rnd = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n.max(1)
        };
        let mut p = Profile {
            modules: vec![
                Module {
                    path: "/bin/a".into(),
                    build_id: String::new(),
                },
                Module {
                    path: "/lib/b.so".into(),
                    build_id: String::new(),
                },
            ],
            ..Default::default()
        };
        for i in 0..(3 + rnd(12)) {
            let name = ["main", "f", "g", "h", "[unknown]", ""][rnd(6) as usize];
            p.frames.push(Frame {
                address: i,
                module: if rnd(5) == 0 {
                    None
                } else {
                    Some(rnd(2) as u32)
                },
                module_offset: i,
                function: name.into(),
                file: None,
                line: None,
                inline_depth: rnd(2) as u16,
                mode: Mode::User,
            });
        }
        for i in 0..(1 + rnd(60)) {
            let parent = if i == 0 || rnd(4) == 0 {
                None
            } else {
                Some(rnd(i) as u32)
            };
            p.stacks.push(Stack {
                parent,
                frame: rnd(p.frames.len() as u64 + 1) as u32,
            });
        }
        p.threads = vec![
            Thread {
                pid: 1,
                tid: 1,
                name: "a".into(),
                process_name: "a".into(),
            },
            Thread {
                pid: 1,
                tid: 2,
                name: "b".into(),
                process_name: "a".into(),
            },
        ];
        for t in 0..(rnd(300)) {
            let stack = match rnd(10) {
                0 => None,
                1 => Some(p.stacks.len() as u32 + rnd(3) as u32),
                _ => Some(rnd(p.stacks.len() as u64) as u32),
            };
            p.samples.push(Sample {
                time_ns: t * 10,
                thread: rnd(3) as u32,
                cpu: rnd(2) as u32,
                stack,
                weight: rnd(4) * 1000,
            });
        }
        p
    }

    fn by_key(g: &Grouper<'_>, (selfs, totals): (Vec<Acc>, Vec<Acc>)) -> BTreeMap<Key, (Acc, Acc)> {
        assert_eq!((selfs.len(), totals.len()), (g.len(), g.len()));
        (0..g.len() as u32)
            .map(|i| (g.key(i).clone(), (selfs[i as usize], totals[i as usize])))
            .collect()
    }

    #[test]
    fn agrees_with_the_per_sample_definition() {
        for seed in 0..400 {
            let p = random_profile(seed);
            assert!(parents_first(&p));
            for filter in [
                Filter::default(),
                Filter {
                    time_range: Some((500, 1500)),
                    ..Filter::default()
                },
            ] {
                let sel = Selection::new(&p, &filter).expect("valid filter");
                for by in [
                    GroupBy::Function,
                    GroupBy::Module,
                    GroupBy::Callstack,
                    GroupBy::Process,
                    GroupBy::Thread,
                ] {
                    let mut fast = Grouper::new(&p, by);
                    let got = if by.has_total() || by == GroupBy::Callstack {
                        by_stack(&sel, &mut fast)
                    } else {
                        by_thread(&sel, &mut fast)
                    };
                    let mut slow = Grouper::new(&p, by);
                    let want = super::super::per_sample(&sel, &mut slow);
                    assert_eq!(by_key(&fast, got), by_key(&slow, want), "seed {seed}, {by}");
                }
            }
        }
    }
}
