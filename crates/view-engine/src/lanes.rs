//! The timeline's lanes: the samples of each thread and of each CPU, in time order, as
//! sample indices and beside them a copy of each sample's leaf function. The timeline
//! reads the copy in order, two bytes a sample, instead of gathering stacks and times
//! from columns where the lane's samples lie scattered among the others'.

use kairos_model::Profile;

use crate::ids::NONE;
use crate::samples::Samples;
use crate::totals::Totals;

/// Leaf functions of a lane's samples: the function id, or the number of functions for a
/// sample without one (the narrowest type that holds them).
#[derive(Debug)]
pub enum Funcs {
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Funcs {
    fn with_capacity(nfuncs: usize, n: usize) -> Funcs {
        if nfuncs < u16::MAX as usize {
            Funcs::U16(Vec::with_capacity(n))
        } else {
            Funcs::U32(Vec::with_capacity(n))
        }
    }

    // The cast cannot truncate: the type was chosen from the number of functions.
    #[inline]
    fn push(&mut self, code: u32) {
        match self {
            Funcs::U16(v) => v.push(code as u16),
            Funcs::U32(v) => v.push(code),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Funcs::U16(v) => v.len(),
            Funcs::U32(v) => v.len(),
        }
    }
}

/// A lane of the timeline: the samples of one thread or one CPU, in time order.
#[derive(Debug)]
pub struct Lane {
    pub key: String,
    pub label: String,
    pub tid: Option<i32>,
    pub cpu: Option<u32>,
    pub samples: Vec<u32>,
    /// Leaf function of each of `samples`.
    pub funcs: Funcs,
}

/// Thread lanes (by TID, ascending) and CPU lanes (ascending), built side by side on two
/// threads; `stack_func`: the leaf function of each stack, `nfuncs` the functions.
pub fn build(
    p: &Profile,
    samples: &Samples,
    totals: &Totals,
    stack_func: &[u32],
    nfuncs: usize,
) -> (Vec<Lane>, Vec<Lane>) {
    let code = coder(samples, stack_func, nfuncs);
    std::thread::scope(|s| {
        let cpus = s.spawn(|| cpu_lanes(samples, totals, nfuncs, &code));
        let threads = thread_lanes(p, samples, totals, nfuncs, &code);
        let cpus = cpus
            .join()
            .unwrap_or_else(|_| cpu_lanes(samples, totals, nfuncs, &code));
        (threads, cpus)
    })
}

/// Thread lanes alone (see [`build`]).
pub fn threads(
    p: &Profile,
    samples: &Samples,
    totals: &Totals,
    stack_func: &[u32],
    nfuncs: usize,
) -> Vec<Lane> {
    thread_lanes(
        p,
        samples,
        totals,
        nfuncs,
        &coder(samples, stack_func, nfuncs),
    )
}

/// CPU lanes alone (see [`build`]).
pub fn cpus(samples: &Samples, totals: &Totals, stack_func: &[u32], nfuncs: usize) -> Vec<Lane> {
    cpu_lanes(samples, totals, nfuncs, &coder(samples, stack_func, nfuncs))
}

/// The code a lane keeps for sample `i`: its leaf function, `nfuncs` without one.
fn coder<'a>(
    samples: &'a Samples,
    stack_func: &'a [u32],
    nfuncs: usize,
) -> impl Fn(usize) -> u32 + Sync + 'a {
    move |i: usize| match samples.stack.get(i) {
        Some(&s) if s != NONE => match stack_func.get(s as usize) {
            Some(&f) if f != NONE => f.min(nfuncs as u32),
            _ => nfuncs as u32,
        },
        _ => nfuncs as u32,
    }
}

/// One pass over dense per-thread slots (no map look-up per sample); every list is
/// allocated once at the size the totals counted.
fn thread_lanes(
    p: &Profile,
    samples: &Samples,
    totals: &Totals,
    nfuncs: usize,
    code: &impl Fn(usize) -> u32,
) -> Vec<Lane> {
    let n = samples.len();
    // Slot of a sample's thread: its index, or one past the threads for a bad index.
    let unknown = p.threads.len();
    let tid_of = |slot: usize| p.threads.get(slot).map_or(-1, |t| t.tid);
    // Threads sharing a TID share a lane, labelled by the first sample's thread.
    let mut tids: Vec<i32> = (0..=unknown).map(tid_of).collect();
    tids.sort_unstable();
    tids.dedup();
    let lane_of_slot: Vec<usize> = (0..=unknown)
        .map(|s| tids.binary_search(&tid_of(s)).unwrap_or(0))
        .collect();
    let mut count = vec![0usize; tids.len()];
    for (slot, &l) in lane_of_slot.iter().enumerate() {
        count[l] += totals.thread_c.get(slot).copied().unwrap_or(0) as usize;
    }
    let mut first = vec![usize::MAX; tids.len()];
    let mut lanes: Vec<Lane> = tids
        .iter()
        .enumerate()
        .map(|(l, &tid)| Lane {
            key: format!("thread:{tid}"),
            label: String::new(),
            tid: Some(tid),
            cpu: None,
            samples: Vec::with_capacity(count[l]),
            funcs: Funcs::with_capacity(nfuncs, count[l]),
        })
        .collect();
    for i in 0..n {
        let slot = (samples.thread(i) as usize).min(unknown);
        let l = lane_of_slot[slot];
        let lane = &mut lanes[l];
        if lane.samples.is_empty() {
            first[l] = slot;
        }
        lane.samples.push(i as u32);
        lane.funcs.push(code(i));
    }
    for (l, lane) in lanes.iter_mut().enumerate() {
        let tid = tids[l];
        lane.label = p.threads.get(first[l]).map_or_else(
            || "unknown thread".into(),
            |t| format!("{} ({tid})", t.name),
        );
    }
    lanes.retain(|l| !l.samples.is_empty());
    lanes
}

fn cpu_lanes(
    samples: &Samples,
    totals: &Totals,
    nfuncs: usize,
    code: &impl Fn(usize) -> u32,
) -> Vec<Lane> {
    // The CPUs and their counts: from the totals when they were kept, else counted.
    let (values, count): (Vec<u32>, Vec<usize>) = match &totals.cpu {
        Some(c) => (0..c.c.len())
            .filter(|&k| c.c[k] > 0)
            .map(|k| (k as u32, c.c[k] as usize))
            .unzip(),
        None => {
            let mut m: std::collections::BTreeMap<u32, usize> = Default::default();
            for i in 0..samples.len() {
                *m.entry(samples.cpu(i)).or_default() += 1;
            }
            m.into_iter().unzip()
        }
    };
    let dense_max = values.last().map_or(0, |&v| v as usize + 1);
    let dense: Option<Vec<u32>> = (dense_max <= 1 << 16).then(|| {
        let mut d = vec![0u32; dense_max];
        for (k, &c) in values.iter().enumerate() {
            d[c as usize] = k as u32;
        }
        d
    });
    let slot = |cpu: u32| match &dense {
        Some(d) => d.get(cpu as usize).map_or(0, |&k| k as usize),
        None => values.binary_search(&cpu).unwrap_or(0),
    };
    let mut lanes: Vec<Lane> = values
        .iter()
        .zip(&count)
        .map(|(&cpu, &k)| Lane {
            key: format!("cpu:{cpu}"),
            label: format!("CPU {cpu}"),
            tid: None,
            cpu: Some(cpu),
            samples: Vec::with_capacity(k),
            funcs: Funcs::with_capacity(nfuncs, k),
        })
        .collect();
    if lanes.is_empty() {
        return lanes;
    }
    for i in 0..samples.len() {
        let lane = &mut lanes[slot(samples.cpu(i))];
        lane.samples.push(i as u32);
        lane.funcs.push(code(i));
    }
    lanes.retain(|l| !l.samples.is_empty());
    lanes
}
