//! Weights of the function-path tree for one selection: one pass over the selected
//! samples, then inclusive totals bottom-up (parents precede children). Kept per result
//! for the last few selections, because expanding a tree asks for the same one again.

use std::sync::Arc;

use kairos_model::Profile;

use crate::ids::NONE;
use crate::index::Index;
use crate::query::Sel;
pub use crate::sums::{pids, Agg, Group, ThreadMask};

/// Group id of a sample: thread index, index of its pid in `pids`, CPU, or leaf module.
pub fn group_of(ix: &Index, pids: &[i32], group: Group, i: usize) -> u32 {
    let p: &Profile = &ix.profile;
    if i >= ix.samples.len() {
        return NONE;
    }
    match group {
        Group::Function => 0,
        Group::Thread => ix.samples.thread(i),
        Group::Process => {
            let pid = p
                .threads
                .get(ix.samples.thread(i) as usize)
                .map_or(-1, |t| t.pid);
            pids.binary_search(&pid).map_or(NONE, |k| k as u32)
        }
        Group::Cpu => ix.samples.cpu(i),
        Group::Module => {
            let f = ix.leaf_func(i);
            ix.funcs.module_id.get(f as usize).copied().unwrap_or(NONE)
        }
    }
}

pub fn aggregate(ix: &Index, sel: &Sel, only: Option<(Group, u32)>) -> Agg {
    aggregate_in(ix, sel, only, None)
}

/// [`aggregate`] in `parts` parts (None: as many as the cores and the size call for).
pub fn aggregate_in(
    ix: &Index,
    sel: &Sel,
    only: Option<(Group, u32)>,
    parts: Option<usize>,
) -> Agg {
    let n = ix.node_parent.len();
    let mask = ThreadMask::new(&ix.profile, &sel.tids);
    let pids = pids(&ix.profile);
    let body = |r: std::ops::Range<usize>| scan(ix, &mask, only, &pids, r);
    let merge = |a: &mut Agg, b: Agg| {
        crate::par::add(&mut a.self_w, &b.self_w);
        crate::par::add(&mut a.self_c, &b.self_c);
        a.weight += b.weight;
        a.count += b.count;
    };
    // With a TID filter or a thread, process or CPU group: those lanes only.
    let lanes = || {
        let parts = crate::whole::lane_parts(ix, sel, only)?;
        // The lanes hold exactly the samples selected (a CPU's lane for its group without
        // a TID filter, or the TIDs' lanes): sums per stack slot, no test per sample.
        let exact = match only {
            None => true,
            Some((Group::Cpu, _)) => mask.is_all(),
            _ => false,
        };
        if exact && parts.iter().map(|p| p.len()).sum::<usize>() < u32::MAX as usize {
            let sums = crate::par::fold_slices(
                &parts,
                |run| slot_sums(ix, run),
                |a, b| {
                    crate::par::add(&mut a.0, &b.0);
                    crate::par::add(&mut a.1, &b.1);
                },
            );
            return Some(crate::whole::agg_of_slots(ix, &sums.0, &sums.1, None));
        }
        let run = |run: &[&[u32]]| {
            let idx = run.iter().copied().flatten().map(|&i| i as usize);
            scan(ix, &mask, only, &pids, idx)
        };
        Some(crate::par::fold_slices(&parts, run, merge))
    };
    let range = ix.range(sel.from, sel.to);
    let whole = if parts.is_some() {
        None
    } else if crate::whole::is_whole(ix, &range) {
        crate::whole::agg(ix, &mask, only)
            .or_else(|| by_blocks(ix, &mask, only, &pids, &range))
            .or_else(lanes)
    } else {
        by_blocks(ix, &mask, only, &pids, &range).or_else(lanes)
    };
    let mut a = match (whole, parts) {
        (Some(a), _) => a,
        (None, Some(k)) => crate::par::split(range, k, body, merge),
        (None, None) => crate::par::fold(range, body, merge),
    };
    a.total_w = a.self_w.clone();
    a.total_c = a.self_c.clone();
    for v in (0..n).rev() {
        let p = ix.node_parent[v];
        if p != NONE {
            a.total_w[p as usize] += a.total_w[v];
            a.total_c[p as usize] += a.total_c[v];
        }
    }
    a
}

/// The aggregate (no totals) from the sums at block edges and a scan of the two partial
/// blocks at the range's ends: without a TID filter, of every group or one module's.
/// None when the sums cannot say or are not built.
pub(crate) fn by_blocks(
    ix: &Index,
    mask: &ThreadMask,
    only: Option<(Group, u32)>,
    pids: &[i32],
    range: &std::ops::Range<usize>,
) -> Option<Agg> {
    let b = ix.blocks()?;
    if !mask.is_all() {
        return None;
    }
    let module = match only {
        None => None,
        Some((Group::Module, id)) => Some(id),
        _ => return None,
    };
    let cut = b.cut(range)?;
    let s = b.stacks(cut.mid);
    let mut a = crate::whole::agg_of_slots(ix, &s.w, &s.c, module);
    for e in cut.edges {
        let z = scan(ix, mask, only, pids, e);
        crate::par::add(&mut a.self_w, &z.self_w);
        crate::par::add(&mut a.self_c, &z.self_c);
        a.weight = a.weight.wrapping_add(z.weight);
        a.count += z.count;
    }
    Some(a)
}

/// Weight and count per stack slot (as in the totals) of the samples of `run`, fewer
/// than 2^32: counts in four bytes, which stay in the core's cache, and weights summed
/// only when they differ.
fn slot_sums(ix: &Index, run: &[&[u32]]) -> (Vec<u64>, Vec<u64>) {
    let slots = ix.totals.stack_slots();
    let s = &ix.samples;
    let const_w = match s.weight {
        crate::samples::Narrow::Const(v) => Some(v),
        _ => None,
    };
    let mut c = vec![0u32; slots];
    let mut w = vec![0u64; if const_w.is_some() { 0 } else { slots }];
    for &i in run.iter().copied().flatten() {
        let k = match s.stack.get(i as usize) {
            Some(&st) if st != NONE => (st as usize).min(slots - 2),
            _ => slots - 1,
        };
        c[k] += 1;
        if const_w.is_none() {
            w[k] = w[k].wrapping_add(s.weight(i as usize));
        }
    }
    let c: Vec<u64> = c.into_iter().map(u64::from).collect();
    let w = match const_w {
        Some(v) => c.iter().map(|&c| v.wrapping_mul(c)).collect(),
        None => w,
    };
    (w, c)
}

/// The samples `idx` that `mask` and `only` admit, into a fresh aggregate (no totals).
/// The sums are local slices and integers while the loop runs, so they stay in registers:
/// through a `&mut Agg` every store made the compiler load the vectors' pointers again,
/// three times slower.
pub(crate) fn scan(
    ix: &Index,
    mask: &ThreadMask,
    only: Option<(Group, u32)>,
    pids: &[i32],
    idx: impl Iterator<Item = usize>,
) -> Agg {
    let n = ix.node_parent.len();
    let (mut self_w, mut self_c) = (vec![0u64; n], vec![0u64; n]);
    let (sw, sc) = (&mut self_w[..], &mut self_c[..]);
    let (mut weight, mut count) = (0u64, 0u64);
    let s = &ix.samples;
    for i in idx {
        if !mask.admits(s.thread(i)) {
            continue;
        }
        if let Some((g, id)) = only {
            if group_of(ix, pids, g, i) != id {
                continue;
            }
        }
        let w = s.weight(i);
        weight += w;
        count += 1;
        let node = ix.leaf_node(i) as usize;
        if let (Some(x), Some(y)) = (sw.get_mut(node), sc.get_mut(node)) {
            *x += w;
            *y += 1;
        }
    }
    Agg {
        self_w,
        self_c,
        weight,
        count,
        ..Agg::default()
    }
}

/// The aggregate of `sel` (of the samples of group `only`), from the index's cache of the
/// last few, else made and kept.
pub fn cached(ix: &Index, sel: &Sel, only: Option<(Group, u32)>) -> Arc<Agg> {
    let key = format!("{}|{:?}", sel.key(), only);
    ix.agg.get_or(key, || aggregate(ix, sel, only))
}
