//! Answers for selections of the whole run from the [`Totals`](crate::totals::Totals):
//! sums per stack slot and per thread folded into what a pass over the samples would have
//! summed. Each returns None when the totals cannot say (a filter they were not kept
//! for), and the caller scans the samples instead.

use kairos_model::Profile;

use crate::ids::NONE;
use crate::index::Index;
use crate::sums::{pids, Agg, Group, ThreadMask};

/// Whether the selection `range` is every sample.
pub fn is_whole(ix: &Index, range: &std::ops::Range<usize>) -> bool {
    range.start == 0 && range.end == ix.samples.len()
}

/// Function (leaf) of stack slot `k`, NONE for no stack or an unknown one.
fn slot_func(ix: &Index, k: usize) -> u32 {
    match ix.totals.stack_of_slot(k) {
        Some(Some(s)) => ix.stack_func(s),
        _ => NONE,
    }
}

/// Tree node (leaf) of stack slot `k`, NONE for no stack or an unknown one.
fn slot_node(ix: &Index, k: usize) -> u32 {
    match ix.totals.stack_of_slot(k) {
        Some(Some(s)) => ix.stack_node.get(s as usize).copied().unwrap_or(NONE),
        _ => NONE,
    }
}

/// Whether thread slot `t` passes `mask`: out-of-range indices only without a filter.
fn admits(ix: &Index, mask: &ThreadMask, t: usize) -> bool {
    t + 1 < ix.totals.thread_slots() && mask.admits(t as u32) || mask.is_all()
}

/// Weight and count per stack slot of the threads `mask` admits.
pub fn stacks(ix: &Index, mask: &ThreadMask) -> Option<(Vec<u64>, Vec<u64>)> {
    ix.totals.stacks(|t| admits(ix, mask, t))
}

/// Self weight and count per function (the last slot: no stack), of `mask`'s threads.
pub fn functions(ix: &Index, mask: &ThreadMask) -> Option<(Vec<u64>, Vec<u64>)> {
    let (w, c) = stacks(ix, mask)?;
    Some(functions_of_slots(ix, &w, &c))
}

/// Per-node self weight and count, total weight and count, of the whole run: samples of
/// `mask`'s threads and, with `only`, of that group.
pub fn agg(ix: &Index, mask: &ThreadMask, only: Option<(Group, u32)>) -> Option<Agg> {
    let p: &Profile = &ix.profile;
    let nt = ix.totals.thread_slots() - 1;
    let pids = pids(p);
    // Group filters by thread: exact only when no thread index is out of range (those
    // would share one slot with different group ids).
    let by_thread = matches!(only, Some((Group::Thread | Group::Process, _)));
    if by_thread && ix.totals.thread_c.get(nt).is_some_and(|&c| c > 0) {
        return None;
    }
    let in_group = |t: usize| match only {
        Some((Group::Thread, id)) => t as u32 == id,
        Some((Group::Process, id)) => {
            let pid = p.threads.get(t).map_or(-1, |x| x.pid);
            pids.binary_search(&pid).map_or(NONE, |k| k as u32) == id
        }
        _ => true,
    };
    let (w, c) = ix.totals.stacks(|t| admits(ix, mask, t) && in_group(t))?;
    match only {
        Some((Group::Cpu, _)) => None,
        Some((Group::Module, id)) => Some(agg_of_slots(ix, &w, &c, Some(id))),
        _ => Some(agg_of_slots(ix, &w, &c, None)),
    }
}

/// Per-node self weight and count, total weight and count, from weights `w` and counts
/// `c` per stack slot; with `module`, of the stacks whose leaf is in that module only.
pub fn agg_of_slots(ix: &Index, w: &[u64], c: &[u64], module: Option<u32>) -> Agg {
    let n = ix.node_parent.len();
    let mut a = Agg {
        self_w: vec![0; n],
        self_c: vec![0; n],
        ..Agg::default()
    };
    for k in (0..w.len().min(c.len())).filter(|&k| c[k] > 0) {
        if let Some(id) = module {
            let f = slot_func(ix, k);
            let m = ix.funcs.module_id.get(f as usize).copied().unwrap_or(NONE);
            if m != id {
                continue;
            }
        }
        a.weight = a.weight.wrapping_add(w[k]);
        a.count += c[k];
        let node = slot_node(ix, k);
        if let (Some(x), Some(y)) = (
            a.self_w.get_mut(node as usize),
            a.self_c.get_mut(node as usize),
        ) {
            *x = x.wrapping_add(w[k]);
            *y += c[k];
        }
    }
    a
}

/// Self weight and count per function (the last slot: no stack) from weights `w` and
/// counts `c` per stack slot.
pub fn functions_of_slots(ix: &Index, w: &[u64], c: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let nf = ix.funcs.len();
    let (mut fw, mut fc) = (vec![0u64; nf + 1], vec![0u64; nf + 1]);
    for k in (0..w.len().min(c.len())).filter(|&k| c[k] > 0) {
        let f = match slot_func(ix, k) {
            NONE => nf,
            f => (f as usize).min(nf),
        };
        fw[f] = fw[f].wrapping_add(w[k]);
        fc[f] += c[k];
    }
    (fw, fc)
}

/// Weight, count and whether any sample has a stack, per group slot (`slots`, the last
/// for samples of no group), of the whole run's samples of `mask`'s threads.
pub fn groups(
    ix: &Index,
    mask: &ThreadMask,
    g: Group,
    slots: usize,
) -> Option<(Vec<u64>, Vec<u64>, Vec<bool>)> {
    let t = &ix.totals;
    let src = match g {
        Group::Thread | Group::Process => GroupSums::Threads(
            (0..t.thread_slots())
                .map(|th| [t.thread_c[th], t.thread_w[th], t.thread_stacked[th]])
                .collect(),
        ),
        Group::Cpu => {
            let cpu = t.cpu.as_ref()?;
            GroupSums::Cpus(
                (0..cpu.c.len())
                    .map(|k| [cpu.c[k], cpu.w[k], cpu.stacked[k]])
                    .collect(),
            )
        }
        Group::Module | Group::Function => GroupSums::Stacks(stacks(ix, mask)?),
    };
    groups_of(ix, mask, g, slots, src)
}

/// What a grouping's sums are made from: count, weight and count with a stack per
/// thread slot or per CPU (of every thread), or weight and count per stack slot (of the
/// threads the selection admits).
pub enum GroupSums {
    Threads(Vec<[u64; 3]>),
    Cpus(Vec<[u64; 3]>),
    Stacks((Vec<u64>, Vec<u64>)),
}

/// Weight, count and whether any sample has a stack, per group slot of `g` (`slots`,
/// the last for samples of no group), of the samples of `mask`'s threads summed in
/// `src`; None for CPU sums with a TID filter.
pub fn groups_of(
    ix: &Index,
    mask: &ThreadMask,
    g: Group,
    slots: usize,
    src: GroupSums,
) -> Option<(Vec<u64>, Vec<u64>, Vec<bool>)> {
    let t = &ix.totals;
    let (mut w, mut c, mut stacked) = (vec![0u64; slots], vec![0u64; slots], vec![false; slots]);
    let mut put = |id: u32, wk: u64, ck: u64, st: bool| {
        let k = if (id as usize) < slots - 1 {
            id as usize
        } else {
            slots - 1
        };
        w[k] = w[k].wrapping_add(wk);
        c[k] += ck;
        stacked[k] |= st;
    };
    match (g, src) {
        (Group::Thread | Group::Process, GroupSums::Threads(th)) => {
            let pids = pids(&ix.profile);
            for (slot, x) in th.iter().enumerate() {
                if x[0] == 0 || !admits(ix, mask, slot) {
                    continue;
                }
                let id = match g {
                    // Indices out of range are all past the last slot: the slot of no group.
                    Group::Thread => slot as u32,
                    _ => {
                        let pid = ix.profile.threads.get(slot).map_or(-1, |x| x.pid);
                        pids.binary_search(&pid).map_or(NONE, |k| k as u32)
                    }
                };
                put(id, x[1], x[0], x[2] > 0);
            }
        }
        (Group::Cpu, GroupSums::Cpus(cpus)) if mask.is_all() => {
            for (k, x) in cpus.iter().enumerate().filter(|(_, x)| x[0] > 0) {
                put(k as u32, x[1], x[0], x[2] > 0);
            }
        }
        (Group::Module | Group::Function, GroupSums::Stacks((sw, sc))) => {
            for k in (0..sw.len().min(sc.len())).filter(|&k| sc[k] > 0) {
                let f = slot_func(ix, k);
                let id = match g {
                    Group::Function => 0,
                    _ => ix.funcs.module_id.get(f as usize).copied().unwrap_or(NONE),
                };
                put(id, sw[k], sc[k], t.stack_of_slot(k).is_some());
            }
        }
        _ => return None,
    }
    Some((w, c, stacked))
}

/// The samples of a selection with a TID filter or of one thread's, process's or CPU's
/// group: the lanes of those TIDs (or that CPU) within the time range, so a filter costs the chosen threads'
/// samples rather than a pass over all (the caller still tests each sample). None
/// without either, or with a negative TID (the lane of thread indices out of range has
/// TID -1, and neither filter admits those).
pub fn lane_parts<'a>(
    ix: &'a Index,
    sel: &crate::query::Sel,
    only: Option<(Group, u32)>,
) -> Option<Vec<&'a [u32]>> {
    let times = ix.times();
    let at = |i: u32| times.get(i as usize).copied().unwrap_or(u64::MAX);
    let within = |l: &'a crate::index::Lane| {
        let a = l.samples.partition_point(|&i| at(i) < sel.from);
        let b = l.samples.partition_point(|&i| at(i) < sel.to).max(a);
        &l.samples[a..b]
    };
    if let Some((Group::Cpu, id)) = only {
        // One CPU's group: that CPU's lane (a CPU lane holds every sample of its CPU).
        return Some(
            ix.cpu_lanes()
                .iter()
                .filter(|l| l.cpu == Some(id))
                .map(within)
                .collect(),
        );
    }
    let threads = &ix.profile.threads;
    let group: Option<Vec<i32>> = match only {
        Some((Group::Thread, id)) => Some(vec![threads.get(id as usize)?.tid]),
        Some((Group::Process, id)) => {
            // Samples of thread indices out of range have pid -1: in no lane of a TID.
            let pid = *pids(&ix.profile).get(id as usize).filter(|&&p| p >= 0)?;
            Some(
                threads
                    .iter()
                    .filter(|t| t.pid == pid)
                    .map(|t| t.tid)
                    .collect(),
            )
        }
        _ => None,
    };
    let tids: Vec<i32> = match (&sel.tids, group) {
        (None, None) => return None,
        (Some(t), None) => t.clone(),
        (None, Some(g)) => g,
        (Some(t), Some(g)) => t.iter().copied().filter(|x| g.contains(x)).collect(),
    };
    if tids.iter().any(|&t| t < 0) {
        return None;
    }
    Some(
        ix.thread_lanes
            .iter()
            .filter(|l| l.tid.is_some_and(|t| tids.contains(&t)))
            .map(within)
            .collect(),
    )
}
