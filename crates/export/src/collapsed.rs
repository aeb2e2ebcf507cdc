//! Collapsed ("folded") stacks, the input of flamegraph.pl and inferno: one line per
//! distinct stack, `process;root;...;leaf count`, sorted. The process name is the root
//! frame and the count is the number of samples, as perf's stackcollapse-perf.pl does,
//! so our output can be compared line for line with perf's own pipeline.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::select::Selection;

pub fn write(sel: &Selection<'_>, out: &mut dyn Write) -> io::Result<()> {
    for (stack, count) in fold(sel) {
        writeln!(out, "{stack} {count}")?;
    }
    Ok(())
}

/// Folded stack -> sample count, sorted by stack.
pub(crate) fn fold(sel: &Selection<'_>) -> BTreeMap<String, u64> {
    // Group by (thread's process, stack node) first: far fewer strings to build.
    let mut by_stack: BTreeMap<(String, Option<u32>), u64> = BTreeMap::new();
    for s in sel.samples {
        *by_stack
            .entry((sel.process_name(s.thread), s.stack))
            .or_default() += 1;
    }
    let mut folded = BTreeMap::new();
    for ((process, stack), n) in by_stack {
        let mut line = clean(&process);
        for f in sel.root_first(stack) {
            line.push(';');
            line.push_str(&clean(sel.function(f)));
        }
        *folded.entry(line).or_default() += n;
    }
    folded
}

/// `;` separates frames and the line ends the record, so neither may appear inside a
/// name; flamegraph tools have no escape, so they become `:` and a space.
fn clean(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::tests::profile;

    #[test]
    fn folds_sorted_with_process_root_and_counts() {
        let p = profile();
        let mut out = Vec::new();
        write(&Selection::new(&p, None), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "app;main;a;b 2\napp;main;c 1\napp;main;we:ird 1\n");
    }

    #[test]
    fn time_range_selects_samples() {
        let p = profile();
        let f = fold(&Selection::new(&p, Some((1_000_000, 2_000_001))));
        assert_eq!(f.values().sum::<u64>(), 2);
    }
}
