//! The hotspot table: time per process, module, function, call stack, thread or CPU.

use kairos_model::{Profile, Sample};
use kairos_report::{Cell, Column, Table};
use kairos_result::ResultDir;
use serde::{Deserialize, Serialize};

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
    Ok(rows(profile, filter, group_by)?.table(limit))
}

/// Every group of a hotspot table, sorted, before it is cut to a limit and shown: what a
/// result keeps (see [`Rows::save`]) so that the table is not computed again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rows {
    group_by: GroupBy,
    /// The profile's weight event (`None`: nanoseconds of CPU time).
    weight_event: Option<String>,
    /// The selection's samples and weight, the base of the shares.
    total: (u64, u64),
    /// What the selection says about itself.
    notes: Vec<String>,
    rows: Vec<Row>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Row {
    labels: Vec<String>,
    /// Self samples and weight; then the inclusive ones (equal for groupings without).
    own: (u64, u64),
    total: (u64, u64),
}

fn acc((samples, weight): (u64, u64)) -> Acc {
    Acc { samples, weight }
}

/// The sorted groups of `profile`'s samples that `filter` selects.
pub fn rows(profile: &Profile, filter: &Filter, group_by: GroupBy) -> Result<Rows, Error> {
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
    let pair = |a: Acc| (a.samples, a.weight);
    Ok(Rows {
        group_by,
        weight_event: profile.weight_event.clone(),
        total: pair(sel.total),
        notes: sel.notes(filter),
        rows: ids
            .into_iter()
            .map(|id| Row {
                labels: g.key(id).labels.clone(),
                own: pair(selfs[id as usize]),
                total: pair(totals[id as usize]),
            })
            .collect(),
    })
}

impl Rows {
    /// Name under which a result keeps the rows of a whole profile's default event.
    const KEPT: &'static str = "hotspots";

    /// The table, with the first `limit` rows (a note says how many were left out).
    pub fn table(&self, limit: Option<usize>) -> Table {
        let group_by = self.group_by;
        let w = Weight::new(self.weight_event.as_deref());
        let total = acc(self.total);
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
        let shown = limit.unwrap_or(usize::MAX).min(self.rows.len());
        for r in &self.rows[..shown] {
            let (s, t) = (acc(r.own), acc(r.total));
            let mut row: Vec<Cell> = r.labels.iter().map(|l| Cell::text(l.clone())).collect();
            row.extend([
                Cell::UInt(s.samples),
                w.cell(s.weight),
                Cell::Percent(share(s, total)),
            ]);
            if group_by.has_total() {
                row.extend([
                    Cell::UInt(t.samples),
                    w.cell(t.weight),
                    Cell::Percent(share(t, total)),
                ]);
            }
            table.push_row(row);
        }
        table.notes = self.notes.clone();
        if shown < self.rows.len() {
            table.push_note(format!("Showing {shown} of {} groups.", self.rows.len()));
        }
        if group_by.has_total() {
            table.push_note(format!("Total counts each sample once per {group_by} on its stack, so recursion is not counted twice."));
        }
        table
    }

    /// Keeps these rows in `dir` for [`Rows::kept`]. Call only with the rows of the
    /// whole profile of the result's default event, grouped by function.
    pub fn save(&self, dir: &ResultDir) -> std::io::Result<()> {
        dir.save_derived(Self::KEPT, self)
    }

    /// The function rows of the whole profile of `dir`'s default event, if a collection
    /// or import kept them for the tables the result has now.
    pub fn kept(dir: &ResultDir) -> Option<Rows> {
        let labels = GroupBy::Function.label_columns().len();
        // A file that does not hold function rows is as good as none.
        dir.load_derived::<Rows>(Self::KEPT).filter(|r| {
            r.group_by == GroupBy::Function && r.rows.iter().all(|row| row.labels.len() == labels)
        })
    }
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
    fn kept_rows_give_the_same_table_and_nothing_else_is_taken_for_them() {
        let mut b = Builder::new();
        let t = b.thread(1, 1, "app");
        b.sample(0, t, &["main", "a", "b"]);
        b.sample(MS, t, &["main", "a"]);
        let p = b.build();
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut dir = ResultDir::create(tmp.path().join("r")).expect("result");
        kairos_result::write_profile(&mut dir, &p).expect("tables");
        assert!(Rows::kept(&dir).is_none());
        let all = super::rows(&p, &Filter::default(), GroupBy::Function).expect("rows");
        all.save(&dir).expect("saved");
        let kept = Rows::kept(&dir).expect("kept");
        for limit in [None, Some(1)] {
            assert_eq!(
                kept.table(limit),
                hotspots(&p, &Filter::default(), GroupBy::Function, limit).expect("runs")
            );
        }
        // Rows of another grouping, or with the wrong labels, are not function rows.
        super::rows(&p, &Filter::default(), GroupBy::Thread)
            .expect("rows")
            .save(&dir)
            .expect("saved");
        assert!(Rows::kept(&dir).is_none());
        let mut odd = all.clone();
        odd.rows[0].labels.pop();
        odd.save(&dir).expect("saved");
        assert!(Rows::kept(&dir).is_none());
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
