//! The summary report: what was run, how much was measured and lost, and where the time
//! went at a glance.

use std::collections::BTreeSet;

use kairos_model::Profile;
use kairos_report::{Cell, Document, Section};

use crate::hotspots::{rows, Rows};
use crate::weight::Weight;
use crate::{hotspots, Filter, GroupBy};

/// Rows of the "top functions" table.
const TOP_FUNCTIONS: usize = 10;

/// Summary of a whole profile. `meta` holds what only the caller knows (event, sampling
/// interval, knobs, command line), shown first in the given order.
pub fn summary<K: AsRef<str>, V: AsRef<str>>(profile: &Profile, meta: &[(K, V)]) -> Document {
    summary_and_rows(profile, meta, None).0
}

/// Every function row of the whole profile: most of a summary's work, which a caller may
/// do beforehand (while it writes the tables) and hand to [`crate::print_summary`].
pub fn summary_rows(profile: &Profile) -> Option<Rows> {
    rows(profile, &Filter::default(), GroupBy::Function).ok()
}

/// The summary, and every function row of the profile (of which the summary shows the
/// first few), for a result to keep; `functions` when they were made beforehand.
pub(crate) fn summary_and_rows<K: AsRef<str>, V: AsRef<str>>(
    profile: &Profile,
    meta: &[(K, V)],
    functions: Option<Rows>,
) -> (Document, Option<Rows>) {
    let mut doc = Document::new("Summary");
    if !meta.is_empty() {
        let mut s = Section::new("Collection");
        for (k, v) in meta {
            s.push(k.as_ref(), Cell::text(v.as_ref()));
        }
        doc.push_section(s);
    }

    let mut run = Section::new("Run");
    let span = profile
        .samples
        .iter()
        .map(|s| s.time_ns)
        .min()
        .zip(profile.samples.iter().map(|s| s.time_ns).max());
    run.push(
        "Elapsed",
        span.map_or(Cell::Empty, |(a, b)| Cell::ns(b - a)),
    );
    run.push("Samples", Cell::UInt(profile.samples.len() as u64));
    let weight = profile
        .samples
        .iter()
        .fold(0u64, |w, s| w.saturating_add(s.weight));
    let w = Weight::of(profile);
    run.push(w.total_label(), w.cell(weight));
    let pids: BTreeSet<i32> = profile.threads.iter().map(|t| t.pid).collect();
    run.push("Processes", Cell::UInt(pids.len() as u64));
    run.push("Threads", Cell::UInt(profile.threads.len() as u64));
    run.push(
        "Samples without stack",
        Cell::UInt(profile.samples.iter().filter(|s| s.stack.is_none()).count() as u64),
    );
    doc.push_section(run);

    let l = &profile.losses;
    let mut losses = Section::new("Losses");
    losses.push("Lost records", Cell::UInt(l.lost_records));
    losses.push("Lost samples", Cell::UInt(l.lost_samples));
    losses.push("Throttle events", Cell::UInt(l.throttled));
    losses.push("Undecodable records", Cell::UInt(l.undecodable_records));
    doc.push_section(losses);

    // The default filter cannot be invalid, so these never fail; skip a table rather
    // than panic if that ever changes.
    let all = Filter::default();
    let others = [
        (GroupBy::Process, format!("{} by process", w.total_label())),
        (GroupBy::Thread, format!("{} by thread", w.total_label())),
    ];
    // The function rows are most of the work: made on a second thread meanwhile, unless
    // the caller made them already.
    let made_by = |g: GroupBy| hotspots(profile, &all, g, None);
    let (functions, made) = match functions {
        Some(given) => (
            Some(given),
            others.iter().map(|(g, _)| made_by(*g)).collect(),
        ),
        None => std::thread::scope(|scope| {
            let thread = std::thread::Builder::new().spawn_scoped(scope, || summary_rows(profile));
            let made: Vec<_> = others.iter().map(|(g, _)| made_by(*g)).collect();
            let functions = match thread {
                Ok(thread) => thread.join().unwrap_or_else(|_| summary_rows(profile)),
                Err(_) => summary_rows(profile),
            };
            (functions, made)
        }),
    };
    let top = functions.as_ref().map(|r| {
        let mut t = r.table(Some(TOP_FUNCTIONS));
        t.title = Some(format!(
            "Top {TOP_FUNCTIONS} functions by self {}",
            w.noun()
        ));
        t
    });
    let made = made
        .into_iter()
        .zip(others)
        .filter_map(|(t, (_, title))| t.ok().map(|t| t.with_title(title)));
    for mut t in top.into_iter().chain(made) {
        // The selection note repeats the Run section; keep only notes about the rows.
        t.notes.retain(|n| !n.ends_with("samples selected."));
        doc.push_table(t);
    }
    (doc, functions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Builder, MS};
    use kairos_report::Block;

    #[test]
    fn empty_profile_summary() {
        let d = summary::<&str, &str>(&Profile::default(), &[]);
        assert_eq!(d.blocks.len(), 5);
        let text = d.to_text();
        assert!(text.contains("Elapsed:\n"), "{text}");
        assert!(text.contains("(no data)"));
    }

    #[test]
    fn counts_span_weight_and_losses() {
        let mut b = Builder::new();
        let t = b.thread(7, 7, "app");
        b.sample(5 * MS, t, &["main"]);
        b.sample(9 * MS, t, &["main", "f"]);
        b.sample_frames(10 * MS, t, &[], MS);
        let mut p = b.build();
        p.losses.lost_samples = 4;
        let d = summary(&p, &[("Event", "cpu-clock")]);
        let Block::Section(collection) = &d.blocks[0] else {
            unreachable!()
        };
        assert_eq!(
            collection.entries,
            [("Event".to_string(), Cell::text("cpu-clock"))]
        );
        let Block::Section(run) = &d.blocks[1] else {
            unreachable!()
        };
        assert_eq!(run.entries[0].1, Cell::ns(5 * MS));
        assert_eq!(run.entries[2].1, Cell::ns(3 * MS));
        assert_eq!(run.entries[5].1, Cell::UInt(1));
        assert!(d.to_text().contains("Lost samples:         4"));
    }
}
