//! `api/tree`: one level of the top-down or bottom-up tree at a time, so a level of
//! 100,000 rows is one answer and a deep tree is never sent whole.
//!
//! Ids in `path`: with grouping `function`, top-down ids are tree nodes and bottom-up ids
//! are function ids (leaf first, then callers); with another grouping the first id is the
//! group and the rest as with `function` inside it.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::common::{data, derived};
use crate::agg::{pids, Agg, Group};
use crate::error::Error;
use crate::ids::NONE;
use crate::index::Index;
use crate::query::Query;
use crate::site::State;
use crate::whole::GroupSums;

/// One row before sorting.
struct Row {
    id: u32,
    name: String,
    module: String,
    self_w: u64,
    total_w: u64,
    count: u64,
    has_children: bool,
}

pub fn get(state: &State, q: &Query) -> Result<Value, Error> {
    let d = data(state, q, "r")?;
    let dv = derived(d, q)?;
    let ix = &dv.index;
    let sel = q.sel(d)?;
    let bottom_up = q.choice("kind", &["top-down", "bottom-up"], "top-down")? == "bottom-up";
    let group = Group::parse(q.choice("group", &Group::NAMES, "function")?);
    let path: Vec<u32> = q.list("path")?.unwrap_or_default();
    if path.len() > 4096 {
        return Err(Error::BadParam("path is deeper than 4096".into()));
    }
    let (only, path) = match (group, path.split_first()) {
        (Group::Function, _) => (None, &path[..]),
        (g, Some((&id, rest))) => (Some((g, id)), rest),
        (g, None) => {
            let rows = groups(ix, &sel, g);
            let (w, c) = rows
                .iter()
                .fold((0, 0), |(w, c), r| (w + r.total_w, c + r.count));
            return Ok(answer(w, c, rows));
        }
    };
    let agg = crate::agg::cached(ix, &sel, only);
    let rows = if bottom_up {
        bottom_up_level(ix, &agg, path)
    } else {
        top_down_level(ix, &agg, path)?
    };
    Ok(answer(agg.weight, agg.count, rows))
}

fn answer(weight: u64, count: u64, mut rows: Vec<Row>) -> Value {
    rows.sort_by(|a, b| {
        b.total_w
            .cmp(&a.total_w)
            .then_with(|| a.name.cmp(&b.name))
            .then(a.id.cmp(&b.id))
    });
    json!({
        "total_weight": weight, "total_count": count,
        "rows": {
            "id": rows.iter().map(|r| r.id).collect::<Vec<_>>(),
            "name": rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            "module": rows.iter().map(|r| r.module.as_str()).collect::<Vec<_>>(),
            "self": rows.iter().map(|r| r.self_w).collect::<Vec<_>>(),
            "total": rows.iter().map(|r| r.total_w).collect::<Vec<_>>(),
            "count": rows.iter().map(|r| r.count).collect::<Vec<_>>(),
            "has_children": rows.iter().map(|r| r.has_children).collect::<Vec<_>>(),
        }
    })
}

fn func_row(ix: &Index, id: u32, f: u32) -> Row {
    let (name, module) = match ix.funcs.name.get(f as usize) {
        Some(n) => (n.clone(), ix.funcs.module[f as usize].clone()),
        None => ("[unknown]".into(), String::new()),
    };
    Row {
        id,
        name,
        module,
        self_w: 0,
        total_w: 0,
        count: 0,
        has_children: false,
    }
}

fn top_down_level(ix: &Index, agg: &Agg, path: &[u32]) -> Result<Vec<Row>, Error> {
    let nodes: &[u32] = match path.last() {
        None => &ix.roots,
        Some(&n) if (n as usize) < ix.node_parent.len() => ix.children(n),
        Some(&n) => return Err(Error::NotFound(format!("tree node {n} does not exist"))),
    };
    Ok(nodes
        .iter()
        .filter(|&&n| agg.total_c[n as usize] > 0)
        .map(|&n| {
            let i = n as usize;
            Row {
                self_w: agg.self_w[i],
                total_w: agg.total_w[i],
                count: agg.total_c[i],
                has_children: ix.children(n).iter().any(|&c| agg.total_c[c as usize] > 0),
                ..func_row(ix, n, ix.node_func[i])
            }
        })
        .collect())
}

fn bottom_up_level(ix: &Index, agg: &Agg, path: &[u32]) -> Vec<Row> {
    let mut rows: HashMap<u32, Row> = HashMap::new();
    // A row is a function (at the top) or a caller chain under it (deeper): self is the
    // function's own weight through that chain, total its inclusive weight through it, a
    // recursive function counted once per sample (its outermost nodes only).
    let Some((&leaf, callers)) = path.split_first() else {
        for n in 0..ix.node_parent.len() {
            if agg.total_c[n] == 0 {
                continue;
            }
            let f = ix.node_func[n];
            let r = rows.entry(f).or_insert_with(|| func_row(ix, f, f));
            r.self_w += agg.self_w[n];
            if ix.outermost[n] {
                r.total_w += agg.total_w[n];
                r.count += agg.total_c[n];
            }
            r.has_children |= ix.node_parent[n] != NONE;
        }
        return rows.into_values().collect();
    };
    for &n in ix.nodes_of(leaf) {
        if agg.total_c[n as usize] == 0 {
            continue;
        }
        // Walk up past the callers already on the path; they must match.
        let mut a = ix.node_parent[n as usize];
        let mut ok = true;
        for &c in callers {
            if a == NONE || ix.node_func[a as usize] != c {
                ok = false;
                break;
            }
            a = ix.node_parent[a as usize];
        }
        if !ok || a == NONE {
            continue;
        }
        let f = ix.node_func[a as usize];
        let r = rows.entry(f).or_insert_with(|| func_row(ix, f, f));
        r.self_w += agg.self_w[n as usize];
        if ix.outermost[n as usize] {
            r.total_w += agg.total_w[n as usize];
            r.count += agg.total_c[n as usize];
        }
        r.has_children |= ix.node_parent[a as usize] != NONE;
    }
    rows.into_values()
        .filter(|r| r.total_w > 0 || r.self_w > 0 || r.count > 0)
        .collect()
}

/// Top level of a grouping: one row per group with its weight.
fn groups(ix: &Index, sel: &crate::query::Sel, g: Group) -> Vec<Row> {
    let p = &ix.profile;
    let pids = pids(p);
    let mask = crate::agg::ThreadMask::new(p, &sel.tids);
    // Dense sums by group id (thread index, pid index, CPU, module id); the last slot
    // holds samples of no group.
    let slots = match g {
        Group::Thread => p.threads.len(),
        Group::Process => pids.len(),
        Group::Cpu => ix
            .cpu_lanes()
            .iter()
            .filter_map(|l| l.cpu)
            .max()
            .map_or(0, |c| c as usize + 1),
        _ => ix.funcs.modules.len(),
    } + 1;
    let body = |r: std::ops::Range<usize>| {
        let (mut w, mut c, mut stacked) =
            (vec![0u64; slots], vec![0u64; slots], vec![false; slots]);
        let s = &ix.samples;
        for i in r {
            if !mask.admits(s.thread(i)) {
                continue;
            }
            let id = crate::agg::group_of(ix, &pids, g, i);
            let k = if (id as usize) < slots - 1 {
                id as usize
            } else {
                slots - 1
            };
            w[k] += s.weight(i);
            c[k] += 1;
            stacked[k] |= s.stack(i).is_some();
        }
        (w, c, stacked)
    };
    let merge = |a: &mut (Vec<u64>, Vec<u64>, Vec<bool>), b: (Vec<u64>, Vec<u64>, Vec<bool>)| {
        crate::par::add(&mut a.0, &b.0);
        crate::par::add(&mut a.1, &b.1);
        for (x, y) in a.2.iter_mut().zip(&b.2) {
            *x |= *y;
        }
    };
    let range = ix.range(sel.from, sel.to);
    // Of most of the run: the sums at block edges and the partial blocks at its ends.
    let blocks = || {
        let b = ix.blocks()?;
        let cut = b.cut(&range)?;
        let src = match g {
            Group::Thread | Group::Process => GroupSums::Threads(b.threads(cut.mid)),
            Group::Cpu => GroupSums::Cpus(b.cpus(cut.mid)?),
            _ if mask.is_all() => GroupSums::Stacks({
                let s = b.stacks(cut.mid);
                (s.w, s.c)
            }),
            _ => return None,
        };
        let mut sums = crate::whole::groups_of(ix, &mask, g, slots, src)?;
        for e in cut.edges {
            merge(&mut sums, body(e));
        }
        Some(sums)
    };
    let (w, c, stacked) = crate::whole::is_whole(ix, &range)
        .then(|| crate::whole::groups(ix, &mask, g, slots))
        .flatten()
        .or_else(blocks)
        .unwrap_or_else(|| crate::par::fold(range.clone(), body, merge));
    (0..slots)
        .filter(|&k| c[k] > 0)
        .map(|k| {
            let (name, module) = group_name(ix, &pids, g, k);
            Row {
                id: if k == slots - 1 { NONE } else { k as u32 },
                name,
                module,
                self_w: 0,
                total_w: w[k],
                count: c[k],
                has_children: stacked[k],
            }
        })
        .collect()
}

/// The name (and module, for a thread: its process) of group `k` of grouping `g`.
fn group_name(ix: &Index, pids: &[i32], g: Group, k: usize) -> (String, String) {
    let p = &ix.profile;
    match g {
        Group::Thread => p
            .threads
            .get(k)
            .map_or(("[unknown thread]".into(), String::new()), |t| {
                (format!("{} ({})", t.name, t.tid), t.process_name.clone())
            }),
        Group::Process => {
            let pid = pids.get(k).copied().unwrap_or(-1);
            let name = p
                .threads
                .iter()
                .find(|t| t.pid == pid)
                .map_or("[unknown]".into(), |t| t.process_name.clone());
            (format!("{name} ({pid})"), String::new())
        }
        Group::Cpu => (format!("CPU {k}"), String::new()),
        _ => (
            ix.funcs
                .modules
                .get(k)
                .cloned()
                .unwrap_or_else(|| "[unknown]".into()),
            String::new(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::index::Functions;
    use crate::query::Sel;

    /// A grouping's top level from the sums at block edges equals the scan's, for every
    /// grouping, with and without a TID filter, on ranges inside and across blocks.
    #[test]
    fn block_groups_equal_the_scan() {
        for weight in [None, Some(3u64)] {
            let mut p = crate::fast_path_tests::profile(6_000, 17);
            for s in &mut p.samples {
                s.cpu = s.cpu.min(6);
                if let Some(w) = weight {
                    s.weight = w;
                }
            }
            let plain = Index::new(p.clone(), Arc::new(Functions::new(&p)));
            let t = plain.times().to_vec();
            for size in [1usize, 100, 777] {
                let ix = Index::new(p.clone(), Arc::new(Functions::new(&p)));
                ix.build_blocks_of(size);
                for (a, b) in [(0, 5_999), (1, 5_000), (size, 3 * size), (99, 101), (5, 5)] {
                    for tids in [None, Some(vec![7]), Some(vec![3, 9])] {
                        let sel = Sel {
                            from: t[a],
                            to: t[b],
                            tids,
                        };
                        for g in [
                            Group::Thread,
                            Group::Process,
                            Group::Cpu,
                            Group::Module,
                            Group::Function,
                        ] {
                            let key = |rows: Vec<Row>| -> Vec<_> {
                                rows.into_iter()
                                    .map(|r| (r.id, r.name, r.total_w, r.count, r.has_children))
                                    .collect()
                            };
                            assert_eq!(
                                key(groups(&ix, &sel, g)),
                                key(groups(&plain, &sel, g)),
                                "size {size} {} {g:?}",
                                sel.key()
                            );
                        }
                    }
                }
            }
        }
    }
}
