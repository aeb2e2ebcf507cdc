//! Answers for selections of the whole run from the [`Totals`](crate::totals::Totals):
//! sums per stack slot and per thread folded into what a pass over the samples would have
//! summed. Each returns None when the totals cannot say (a filter they were not kept
//! for), and the caller scans the samples instead.

use kairos_model::Profile;

use crate::agg::{pids, Agg, Group, ThreadMask};
use crate::index::{Index, NONE};

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
    let nf = ix.funcs.len();
    let (mut fw, mut fc) = (vec![0u64; nf + 1], vec![0u64; nf + 1]);
    for k in (0..w.len()).filter(|&k| c[k] > 0) {
        let f = match slot_func(ix, k) {
            NONE => nf,
            f => (f as usize).min(nf),
        };
        fw[f] += w[k];
        fc[f] += c[k];
    }
    Some((fw, fc))
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
    let n = ix.node_parent.len();
    let mut a = Agg {
        self_w: vec![0; n],
        self_c: vec![0; n],
        ..Agg::default()
    };
    for k in (0..w.len()).filter(|&k| c[k] > 0) {
        match only {
            Some((Group::Cpu, _)) => return None,
            Some((Group::Module, id)) => {
                let f = slot_func(ix, k);
                let m = ix.funcs.module_id.get(f as usize).copied().unwrap_or(NONE);
                if m != id {
                    continue;
                }
            }
            _ => {}
        }
        a.weight += w[k];
        a.count += c[k];
        let node = slot_node(ix, k);
        if let (Some(x), Some(y)) = (
            a.self_w.get_mut(node as usize),
            a.self_c.get_mut(node as usize),
        ) {
            *x += w[k];
            *y += c[k];
        }
    }
    Some(a)
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
    let (mut w, mut c, mut stacked) = (vec![0u64; slots], vec![0u64; slots], vec![false; slots]);
    let mut put = |id: u32, wk: u64, ck: u64, st: bool| {
        let k = if (id as usize) < slots - 1 {
            id as usize
        } else {
            slots - 1
        };
        w[k] += wk;
        c[k] += ck;
        stacked[k] |= st;
    };
    let nt = t.thread_slots() - 1;
    match g {
        Group::Thread | Group::Process => {
            let pids = pids(&ix.profile);
            for th in (0..=nt).filter(|&th| t.thread_c[th] > 0 && admits(ix, mask, th)) {
                let id = match g {
                    // Indices out of range are all past the last slot: the slot of no group.
                    Group::Thread => th as u32,
                    _ => {
                        let pid = ix.profile.threads.get(th).map_or(-1, |x| x.pid);
                        pids.binary_search(&pid).map_or(NONE, |k| k as u32)
                    }
                };
                put(id, t.thread_w[th], t.thread_c[th], t.thread_stacked[th]);
            }
        }
        Group::Cpu => {
            let cpu = t.cpu.as_ref().filter(|_| mask.is_all())?;
            for k in (0..cpu.c.len()).filter(|&k| cpu.c[k] > 0) {
                put(k as u32, cpu.w[k], cpu.c[k], cpu.stacked[k]);
            }
        }
        Group::Module | Group::Function => {
            let (sw, sc) = stacks(ix, mask)?;
            for k in (0..sw.len()).filter(|&k| sc[k] > 0) {
                let f = slot_func(ix, k);
                let id = match g {
                    Group::Function => 0,
                    _ => ix.funcs.module_id.get(f as usize).copied().unwrap_or(NONE),
                };
                put(id, sw[k], sc[k], t.stack_of_slot(k).is_some());
            }
        }
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
            ix.cpu_lanes
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
