//! The hotspot table: time per process, module, function, call stack, thread or CPU.

use kairos_model::{Profile, Sample};
use kairos_report::{Cell, Column, Table};

use rustc_hash::FxHashMap as HashMap;

use crate::filter::{share, Acc, Selection};
use crate::group::Grouper;
use crate::weight::Weight;
use crate::{Error, Filter, GroupBy};

mod tree;

/// Self samples, time and share per group, plus inclusive totals for Function and Module
/// (each sample counted once per group on its stack). Sorted by self time descending, then
/// by name; `limit` keeps the first rows (a note says how many were left out).
pub fn hotspots(
    profile: &Profile,
    filter: &Filter,
    group_by: GroupBy,
    limit: Option<usize>,
) -> Result<Table, Error> {
    let sel = Selection::new(profile, filter)?;
    let mut g = Grouper::new(profile, group_by);
    let (selfs, totals) = aggregate(&sel, &mut g);
    let mut ids: Vec<u32> = (0..g.len() as u32).collect();
    // Groups seen only inclusively (e.g. `main`, never a leaf) sort last, by name.
    ids.sort_by(|&a, &b| {
        let (sa, sb) = (selfs[a as usize], selfs[b as usize]);
        sb.weight
            .cmp(&sa.weight)
            .then(sb.samples.cmp(&sa.samples))
            .then_with(|| g.key(a).cmp(g.key(b)))
    });

    let w = Weight::of(profile);
    let mut columns = group_by.label_columns();
    if group_by.has_total() {
        let noun = w.noun();
        for n in [
            "Self samples".into(),
            format!("Self {noun}"),
            "Self %".into(),
            "Total samples".into(),
            format!("Total {noun}"),
            "Total %".into(),
        ] {
            columns.push(Column::right(n));
        }
    } else {
        let label = w.total_label();
        for n in [
            "Samples".into(),
            label.clone(),
            format!("{} %", label.split(' ').next().unwrap_or("CPU")),
        ] {
            columns.push(Column::right(n));
        }
    }
    let mut table = Table::new(columns).with_title(format!("Hotspots by {group_by}"));
    let shown = limit.unwrap_or(usize::MAX).min(ids.len());
    for &id in &ids[..shown] {
        let (s, t) = (selfs[id as usize], totals[id as usize]);
        let mut row = g.key(id).cells();
        row.extend([
            Cell::UInt(s.samples),
            w.cell(s.weight),
            Cell::Percent(share(s, sel.total)),
        ]);
        if group_by.has_total() {
            row.extend([
                Cell::UInt(t.samples),
                w.cell(t.weight),
                Cell::Percent(share(t, sel.total)),
            ]);
        }
        table.push_row(row);
    }
    table.notes = sel.notes(filter);
    if shown < ids.len() {
        table.push_note(format!("Showing {shown} of {} groups.", ids.len()));
    }
    if group_by.has_total() {
        table.push_note(format!("Total counts each sample once per {group_by} on its stack, so recursion is not counted twice."));
    }
    Ok(table)
}

/// Self and inclusive accumulators per group id. For groupings without a total, the
/// inclusive vector equals the self one.
pub(crate) fn aggregate(sel: &Selection<'_>, g: &mut Grouper<'_>) -> (Vec<Acc>, Vec<Acc>) {
    match g.by() {
        GroupBy::Function | GroupBy::Module | GroupBy::Callstack
            if tree::parents_first(sel.profile) =>
        {
            tree::by_stack(sel, g)
        }
        GroupBy::Process | GroupBy::Thread => tree::by_thread(sel, g),
        _ => per_sample(sel, g),
    }
}

/// The definition, sample by sample (by distinct class); also the path for profiles
/// whose stack parents do not come first.
fn per_sample(sel: &Selection<'_>, g: &mut Grouper<'_>) -> (Vec<Acc>, Vec<Acc>) {
    // Groups depend only on a sample's stack, thread and CPU: add up each distinct class
    // first, then walk each class's stack once. Hot loops repeat the same stack thousands
    // of times, so this is what keeps large profiles fast.
    let mut classes: HashMap<(Option<u32>, u32, u32), (Acc, &Sample)> = HashMap::default();
    for s in &sel.samples {
        let key = match g.by() {
            GroupBy::Function | GroupBy::Module | GroupBy::Callstack => (s.stack, 0, 0),
            GroupBy::Process | GroupBy::Thread => (None, s.thread, 0),
            GroupBy::Cpu => (None, 0, s.cpu),
        };
        classes.entry(key).or_insert((Acc::default(), s)).0.add(s);
    }
    let mut classes: Vec<_> = classes.into_values().collect();
    // Group ids are assigned in first-seen order; keep that order deterministic.
    classes.sort_by_key(|(_, s)| (s.time_ns, s.thread, s.cpu, s.stack));
    let mut selfs: Vec<Acc> = Vec::new();
    let mut totals: Vec<Acc> = Vec::new();
    let mut buf = Vec::new();
    for (acc, s) in classes {
        let id = g.self_group(s) as usize;
        g.inclusive_groups(s, &mut buf);
        selfs.resize(g.len(), Acc::default());
        totals.resize(g.len(), Acc::default());
        selfs[id].merge(acc);
        for &i in &buf {
            totals[i as usize].merge(acc);
        }
    }
    (selfs, totals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Builder, MS};

    fn rows(t: &Table) -> Vec<String> {
        t.to_csv().lines().skip(1).map(String::from).collect()
    }

    #[test]
    fn empty_profile_gives_empty_table() {
        for g in GroupBy::ALL {
            let t = hotspots(&Profile::default(), &Filter::default(), g, None).expect("runs");
            assert!(t.rows.is_empty());
            assert!(t.to_text().contains("(no data)"));
        }
    }

    #[test]
    fn recursion_counts_total_once() {
        let mut b = Builder::new();
        let t = b.thread(1, 1, "app");
        b.sample(0, t, &["main", "a", "b", "a", "b"]);
        b.sample(MS, t, &["main", "a"]);
        let p = b.build();
        let table = hotspots(&p, &Filter::default(), GroupBy::Function, None).expect("runs");
        assert_eq!(
            rows(&table),
            [
                "a,app,1,1000000,50.0000,2,2000000,100.0000",
                "b,app,1,1000000,50.0000,1,1000000,50.0000",
                "main,app,0,0,0.0000,2,2000000,100.0000",
            ]
        );
    }

    #[test]
    fn same_name_different_modules_stay_apart() {
        let mut b = Builder::new();
        let other = b.module("/usr/bin/other");
        let t1 = b.thread(1, 1, "app");
        let t2 = b.thread(2, 2, "other");
        b.sample(0, t1, &["main"]);
        let f = b.frame("main", Some(other), 0);
        b.sample_frames(1, t2, &[f], MS);
        b.sample_frames(2, t2, &[f], MS);
        let p = b.build();
        let table = hotspots(&p, &Filter::default(), GroupBy::Function, None).expect("runs");
        assert_eq!(
            rows(&table),
            [
                "main,other,2,2000000,66.6667,2,2000000,66.6667",
                "main,app,1,1000000,33.3333,1,1000000,33.3333"
            ]
        );
        let procs = hotspots(&p, &Filter::default(), GroupBy::Process, Some(1)).expect("runs");
        assert_eq!(rows(&procs), ["other (2),2,2000000,66.6667"]);
        assert!(procs.notes.iter().any(|n| n == "Showing 1 of 2 groups."));
    }

    #[test]
    fn samples_without_stacks_and_inlined_frames() {
        let mut b = Builder::new();
        let t = b.thread(1, 1, "app");
        let main = b.frame("main", Some(0), 0);
        let push = b.frame("Vec::push", Some(0), 1); // inlined into main
        b.sample_frames(0, t, &[main, push], MS);
        b.sample_frames(1, t, &[], MS);
        let p = b.build();
        let f = hotspots(&p, &Filter::default(), GroupBy::Function, None).expect("runs");
        assert_eq!(
            rows(&f),
            [
                "Vec::push,app,1,1000000,50.0000,1,1000000,50.0000",
                "[no stack],,1,1000000,50.0000,1,1000000,50.0000",
                "main,app,0,0,0.0000,1,1000000,50.0000"
            ]
        );
        let m = hotspots(&p, &Filter::default(), GroupBy::Module, None).expect("runs");
        assert_eq!(
            rows(&m),
            [
                "/bin/app,1,1000000,50.0000,1,1000000,50.0000",
                "[no stack],1,1000000,50.0000,1,1000000,50.0000"
            ]
        );
        let c = hotspots(&p, &Filter::default(), GroupBy::Callstack, None).expect("runs");
        // Equal time: ties by name ('[' sorts before letters).
        assert_eq!(
            rows(&c),
            [
                "[no stack],1,1000000,50.0000",
                "main;Vec::push,1,1000000,50.0000"
            ]
        );
        let cpu = hotspots(&p, &Filter::default(), GroupBy::Cpu, None).expect("runs");
        assert_eq!(rows(&cpu), ["cpu 0,2,2000000,100.0000"]);
    }

    #[test]
    fn invalid_filter_is_an_error() {
        let f = Filter {
            time_range: Some((2, 1)),
            ..Filter::default()
        };
        assert!(hotspots(&Profile::default(), &f, GroupBy::Thread, None).is_err());
    }
}
