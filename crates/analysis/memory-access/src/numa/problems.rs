//! NUMA problems, one sentence each with its fix: an object whose pages sit on one node
//! while threads on other nodes use it (the recipe's serially initialised triad), and an
//! object spread over nodes whose sampled accesses are still largely remote (the parts are
//! not on the nodes of the threads that use them).

use std::collections::BTreeMap;

use super::attribute::{NumaData, ObjectNuma, Toucher};
use super::naming::variable_of;
use super::UNKNOWN_NODE;
use crate::objects::{bytes, Object, ObjectKind};

/// Objects smaller than this are not worth a NUMA problem (a few pages cost little).
pub const MIN_PAGES: u64 = 64;
/// Sampled accesses needed before the threads' nodes and remote share say anything.
pub const MIN_SAMPLES: u64 = 20;
/// Share of an object's pages on one node that makes it "on one node".
pub const ONE_NODE_SHARE: f64 = 0.9;
/// Estimated remote share that makes a spread object a problem.
pub const REMOTE_SHARE: f64 = 0.25;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Pages on one node, threads on others.
    OneNode,
    /// Pages spread, accesses remote anyway.
    Mismatched,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub object: u32,
    pub kind: Kind,
    pub sentence: String,
}

/// `` `a` (triad.c:31, 256 MiB) `` for a heap object whose source names its variable,
/// `` `a` (256 MiB) `` for a static one, else the object's name in backquotes.
pub fn display_name(o: &Object, n: &ObjectNuma) -> String {
    let site = o.name.rsplit_once(" (").map_or(o.name.as_str(), |(s, _)| s);
    match o.kind {
        ObjectKind::Heap => match (!n.source.is_empty())
            .then(|| variable_of(&n.source))
            .flatten()
        {
            Some(var) => format!("`{var}` ({site}, {})", bytes(o.size)),
            None => format!("`{site}` ({})", bytes(o.size)),
        },
        ObjectKind::Static => format!("`{site}` ({})", bytes(o.size)),
        _ => format!("`{}`", o.name),
    }
}

/// `node 1`, `nodes 1 and 2`, `nodes 1, 2 and 3`.
pub fn node_list(nodes: &[u32]) -> String {
    let names: Vec<String> = nodes.iter().map(u32::to_string).collect();
    match names.as_slice() {
        [] => "no node".into(),
        [one] => format!("node {one}"),
        [init @ .., last] => format!("nodes {} and {last}", init.join(", ")),
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Each NUMA record with its object, its pages by node and how many of them are on a
/// known node.
fn with_pages<'a>(
    data: &'a NumaData,
    objects: &'a [Object],
) -> impl Iterator<Item = (&'a ObjectNuma, &'a Object, BTreeMap<u32, u64>, u64)> {
    data.objects.iter().filter_map(|n| {
        let o = objects.get(n.object as usize)?;
        let pages = n.pages_by_node();
        let total: u64 = pages
            .iter()
            .filter(|(k, _)| **k != UNKNOWN_NODE)
            .map(|(_, c)| c)
            .sum();
        Some((n, o, pages, total))
    })
}

/// The problems of `data`, in its object order; none on a machine of one node.
pub fn problems(data: &NumaData, objects: &[Object], nodes_with_cpus: usize) -> Vec<Problem> {
    if nodes_with_cpus < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (n, o, pages, total) in with_pages(data, objects) {
        if total < MIN_PAGES || n.samples_total() < MIN_SAMPLES {
            continue;
        }
        let touchers: Vec<&Toucher> = data
            .touchers
            .iter()
            .filter(|t| t.object == n.object)
            .collect();
        let Some((&home, &on_home)) = pages
            .iter()
            .filter(|(k, _)| **k != UNKNOWN_NODE)
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        else {
            continue;
        };
        // The threads that read it, where sampling saw any: the thread that only wrote it
        // while initialising it is not one of its users.
        let readers = n.readers.iter().any(|(k, c)| *k != UNKNOWN_NODE && *c > 0);
        let users = if readers { &n.readers } else { &n.threads };
        let threads: u64 = users
            .iter()
            .filter(|(k, _)| **k != UNKNOWN_NODE)
            .map(|(_, c)| c)
            .sum();
        let away: Vec<u32> = users
            .iter()
            .filter(|(k, c)| **k != home && **k != UNKNOWN_NODE && **c > 0)
            .map(|(k, _)| *k)
            .collect();
        let away_threads: u64 = away.iter().filter_map(|k| users.get(k)).sum();
        let name = display_name(o, n);
        if on_home as f64 >= ONE_NODE_SHARE * total as f64 && away_threads > 0 {
            let verb = match (readers, n.stores > 0) {
                (true, _) => "read",
                (false, true) => "write",
                (false, false) => "use",
            };
            out.push(Problem {
                object: n.object,
                kind: Kind::OneNode,
                sentence: one_node(
                    &name,
                    n,
                    home,
                    on_home,
                    total,
                    &touchers,
                    (threads, away_threads, &away),
                    verb,
                ),
            });
        } else if n.with_node >= MIN_SAMPLES && n.remote as f64 >= REMOTE_SHARE * n.with_node as f64
        {
            let spread: Vec<String> = pages
                .iter()
                .filter(|(k, _)| **k != UNKNOWN_NODE)
                .map(|(k, c)| format!("{k} ({:.0}%)", pct(*c, total)))
                .collect();
            let spread = match spread.as_slice() {
                [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
                _ => spread.join(""),
            };
            out.push(Problem {
                object: n.object,
                kind: Kind::Mismatched,
                sentence: format!(
                    "{name}: pages spread over nodes {spread}, yet an estimated {:.0}% of its sampled accesses are remote: the threads that first touched each part are not the ones that use it: initialise it with the same distribution of work over threads as the compute loop (same schedule, same thread pinning)",
                    pct(n.remote, n.with_node)
                ),
            });
        }
    }
    out
}

/// The sentence of an object on one node; `users` is (threads that use it, those away from
/// its node, the nodes they run on).
#[allow(clippy::too_many_arguments)]
fn one_node(
    name: &str,
    n: &ObjectNuma,
    home: u32,
    on_home: u64,
    total: u64,
    touchers: &[&Toucher],
    users: (u64, u64, &[u32]),
    verb: &str,
) -> String {
    let (threads, away_threads, away) = users;
    let (placed, single) = placed_by(n, home, on_home, total, touchers);
    let remote = if n.with_node >= MIN_SAMPLES {
        format!(
            " (an estimated {:.0}% of its sampled accesses are remote)",
            pct(n.remote, n.with_node)
        )
    } else {
        String::new()
    };
    let fix = if n.policy.starts_with("bind") || n.policy.starts_with("prefer") {
        format!(
            "its memory policy ({}) keeps it on node {home}: drop that policy, or interleave it",
            n.policy
        )
    } else if away_threads == threads {
        format!("run those threads on node {home}, or first-touch it from them")
    } else if single {
        "initialise it in parallel with the same distribution as the compute loop, or interleave it"
            .to_string()
    } else {
        "first-touch each part from the thread that uses it, on its own node, or interleave it"
            .to_string()
    };
    let run = if away_threads == 1 { "runs" } else { "run" };
    format!("{name}: {placed}; {away_threads} of {threads} threads that {verb} it {run} on {}{remote}: {fix}", node_list(away))
}

/// `all pages on node 0, first touched by thread 7 (the main thread) in `init_arrays``, and
/// whether one thread placed (nearly) all of them.
fn placed_by(
    n: &ObjectNuma,
    home: u32,
    on_home: u64,
    total: u64,
    touchers: &[&Toucher],
) -> (String, bool) {
    let share = if on_home == total {
        "all pages".to_string()
    } else {
        format!("{:.0}% of its pages", pct(on_home, total))
    };
    let credited: u64 = touchers.iter().map(|t| t.pages).sum();
    let single = touchers
        .first()
        .is_some_and(|t| t.pages as f64 >= ONE_NODE_SHARE * credited as f64);
    let who = match touchers.first() {
        Some(t) if single => {
            let main = if t.tid == t.pid {
                " (the main thread)"
            } else {
                ""
            };
            format!(
                ", first touched by thread {}{main} in `{}`",
                t.tid, t.function
            )
        }
        Some(t) => format!(
            ", first touched by {} threads, the most by thread {} in `{}`",
            n.touching_threads, t.tid, t.function
        ),
        None => String::new(),
    };
    (format!("{share} on node {home}{who}"), single)
}

/// Objects on one node of a machine of several that sampling saw too little of to say who
/// uses them: one sentence each, so that a problem is never hidden by a short run.
pub fn unjudged(data: &NumaData, objects: &[Object], nodes_with_cpus: usize) -> Vec<(u32, String)> {
    if nodes_with_cpus < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (n, o, pages, total) in with_pages(data, objects) {
        let Some((&home, &on_home)) = pages
            .iter()
            .filter(|(k, _)| **k != UNKNOWN_NODE)
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        else {
            continue;
        };
        let samples = n.samples_total();
        if total < MIN_PAGES
            || samples >= MIN_SAMPLES
            || (on_home as f64) < ONE_NODE_SHARE * total as f64
        {
            continue;
        }
        let touchers: Vec<&Toucher> = data
            .touchers
            .iter()
            .filter(|t| t.object == n.object)
            .collect();
        let (placed, _) = placed_by(n, home, on_home, total, &touchers);
        let only = match samples {
            0 => "no sampled access".to_string(),
            1 => "only 1 sampled access".to_string(),
            k => format!("only {k} sampled accesses"),
        };
        out.push((
            n.object,
            format!(
                "{}: {placed}; {only}, too few to tell which nodes the threads that use it run on: sample longer or more often (-k sampling-interval-us)",
                display_name(o, n)
            ),
        ));
    }
    out
}
