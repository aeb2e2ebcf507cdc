//! The top-down call tree: from the roots (process entry points) down to the leaves.

use std::collections::HashMap;

use kairos_model::Profile;
use kairos_report::{Cell, Column, Table};

use crate::filter::{share, Acc, Selection};
use crate::group::{walk, Grouper};
use crate::weight::Weight;
use crate::{Error, Filter, GroupBy};

/// Spaces of indentation per tree level in the Function column.
const INDENT: usize = 2;

struct Node {
    key: u32,
    depth: usize,
    children: HashMap<u32, usize>,
    total: Acc,
    self_: Acc,
}

/// Call tree with total (inclusive) and self shares per node. Nodes are merged by
/// function identity (name + module) under the same parent, so different addresses of
/// one function on the same path form one node; recursion gives deeper nodes. Children
/// are ordered by total time descending, then name. `max_depth` (0 = roots only) hides
/// deeper nodes, `limit` caps the number of rows; their time stays in their ancestors.
pub fn top_down(
    profile: &Profile,
    filter: &Filter,
    max_depth: Option<usize>,
    limit: Option<usize>,
) -> Result<Table, Error> {
    let sel = Selection::new(profile, filter)?;
    let mut g = Grouper::new(profile, GroupBy::Function);
    // Node 0 is a virtual root above all real roots.
    let mut nodes = vec![Node {
        key: u32::MAX,
        depth: 0,
        children: HashMap::new(),
        total: Acc::default(),
        self_: Acc::default(),
    }];
    let mut path = Vec::new();
    for s in &sel.samples {
        path.clear();
        path.extend(walk(profile, s.stack).map(|f| g.frame_group(f)));
        if path.is_empty() {
            path.push(g.self_group(s)); // the `[no stack]` group
        }
        let mut cur = 0usize;
        for &key in path.iter().rev() {
            let next = match nodes[cur].children.get(&key) {
                Some(&n) => n,
                None => {
                    let n = nodes.len();
                    let depth = if cur == 0 { 0 } else { nodes[cur].depth + 1 };
                    nodes.push(Node {
                        key,
                        depth,
                        children: HashMap::new(),
                        total: Acc::default(),
                        self_: Acc::default(),
                    });
                    nodes[cur].children.insert(key, n);
                    n
                }
            };
            nodes[next].total.add(s);
            cur = next;
        }
        nodes[cur].self_.add(s);
    }

    let w = Weight::of(profile);
    let mut table = Table::new(vec![
        Column::left("Function"),
        Column::left("Module"),
        Column::right("Total %"),
        Column::right("Self %"),
        Column::right(format!("Total {}", w.noun())),
        Column::right(format!("Self {}", w.noun())),
        Column::right("Depth"),
    ])
    .with_title("Top-down call tree");
    let max_rows = limit.unwrap_or(usize::MAX);
    let mut hidden = 0usize;
    // Iterative depth-first walk: deep recursion in the profiled program must not
    // overflow our own stack.
    let mut todo = sorted_children(&nodes, &g, 0);
    todo.reverse();
    while let Some(n) = todo.pop() {
        let node = &nodes[n];
        if max_depth.is_some_and(|d| node.depth > d) {
            continue; // deeper nodes are hidden by design, not counted as cut rows
        }
        if table.rows.len() >= max_rows {
            hidden += 1;
        } else {
            let key = g.key(node.key);
            let name = key.labels.first().cloned().unwrap_or_default();
            let module = key.labels.get(1).cloned().unwrap_or_default();
            table.push_row(vec![
                Cell::text(format!("{}{name}", " ".repeat(INDENT * node.depth))),
                Cell::text(module),
                Cell::Percent(share(node.total, sel.total)),
                Cell::Percent(share(node.self_, sel.total)),
                w.cell(node.total.weight),
                w.cell(node.self_.weight),
                Cell::UInt(node.depth as u64),
            ]);
        }
        let mut kids = sorted_children(&nodes, &g, n);
        kids.reverse();
        todo.extend(kids);
    }
    table.notes = sel.notes(filter);
    if hidden > 0 {
        table.push_note(format!("{hidden} more nodes not shown (row limit)."));
    }
    if let Some(d) = max_depth {
        table.push_note(format!(
            "Nodes deeper than depth {d} are not shown; their time is in their ancestors' totals."
        ));
    }
    Ok(table)
}

fn sorted_children(nodes: &[Node], g: &Grouper<'_>, n: usize) -> Vec<usize> {
    let mut kids: Vec<usize> = nodes[n].children.values().copied().collect();
    kids.sort_by(|&a, &b| {
        let (ta, tb) = (nodes[a].total, nodes[b].total);
        tb.weight
            .cmp(&ta.weight)
            .then(tb.samples.cmp(&ta.samples))
            .then_with(|| g.key(nodes[a].key).cmp(g.key(nodes[b].key)))
    });
    kids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Builder, MS};

    fn text_rows(t: &Table) -> Vec<String> {
        t.to_csv().lines().skip(1).map(String::from).collect()
    }

    #[test]
    fn builds_tree_with_recursion_and_order() {
        let mut b = Builder::new();
        let t = b.thread(1, 1, "app");
        b.sample(0, t, &["main", "a", "a"]);
        b.sample(MS, t, &["main", "a"]);
        b.sample(2 * MS, t, &["main", "b"]);
        b.sample(3 * MS, t, &[]);
        let p = b.build();
        let table = top_down(&p, &Filter::default(), None, None).expect("runs");
        assert_eq!(
            text_rows(&table),
            [
                "main,app,75.0000,0.0000,3000000,0,0",
                "\"  a\",app,50.0000,25.0000,2000000,1000000,1",
                "\"    a\",app,25.0000,25.0000,1000000,1000000,2",
                "\"  b\",app,25.0000,25.0000,1000000,1000000,1",
                "[no stack],,25.0000,25.0000,1000000,1000000,0",
            ]
        );
        let shallow = top_down(&p, &Filter::default(), Some(0), None).expect("runs");
        assert_eq!(shallow.rows.len(), 2);
        let limited = top_down(&p, &Filter::default(), None, Some(3)).expect("runs");
        assert_eq!(limited.rows.len(), 3);
        assert!(limited.notes.iter().any(|n| n.starts_with("2 more nodes")));
    }

    #[test]
    fn empty_profile_and_deep_stack() {
        let t = top_down(&Profile::default(), &Filter::default(), None, None).expect("runs");
        assert!(t.rows.is_empty());
        let mut b = Builder::new();
        let th = b.thread(1, 1, "app");
        let names: Vec<String> = (0..1000).map(|i| format!("f{}", i % 2)).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        b.sample(0, th, &refs);
        let t = top_down(&b.build(), &Filter::default(), None, None).expect("runs");
        assert_eq!(t.rows.len(), 1000);
    }
}
