//! The timeline: group shares per time bucket, and which groups peak where.
//!
//! Whole-run shares hide intermittent events: a function that runs for 3 ms once in a
//! 60 s run has a 0.005 % share. Per bucket it may own the CPU. The second table ranks
//! every group by peak share / overall share, which is about the number of buckets for a
//! group that ran in one burst and about 1 for a steady one, so bursts float to the top.

use rustc_hash::FxHashMap as HashMap;

use kairos_model::Profile;
use kairos_report::{Cell, Column, Document, Table};

use crate::filter::{share, Acc, Selection};
use crate::group::Grouper;
use crate::weight::Weight;
use crate::{Error, Filter, GroupBy};

/// Most buckets a timeline may have; beyond this the request is almost surely a typo
/// (1 ns buckets over a minute) and would exhaust memory.
pub const MAX_BUCKETS: u64 = 100_000;

/// Name of the column holding the share of all groups outside the top N (bracketed so it
/// cannot clash with a function called `other`).
const OTHER: &str = "[other]";

/// Buckets of `bucket_ns` over the selected span: from the filter's range start (or the
/// first selected sample) to the last selected sample. Per bucket: samples, CPU time and
/// the share of each of the `top_n` groups with the most self time, plus `[other]`.
/// The second table lists up to `top_n` groups by peak share / overall share, with the
/// bucket where each peaks (earliest on ties). Bucket times are ms from the profile's
/// first sample.
pub fn timeline(
    profile: &Profile,
    filter: &Filter,
    bucket_ns: u64,
    group_by: GroupBy,
    top_n: usize,
) -> Result<Document, Error> {
    if bucket_ns == 0 {
        return Err(Error::ZeroBucket);
    }
    let sel = Selection::new(profile, filter)?;
    let mut g = Grouper::new(profile, group_by);
    let mut doc = Document::new(format!("Timeline by {group_by}"));
    let (Some(first), Some(last)) = (
        sel.samples.iter().map(|s| s.time_ns).min(),
        sel.samples.iter().map(|s| s.time_ns).max(),
    ) else {
        let mut t = Table::new(vec![Column::right("Start").with_unit("ms")])
            .with_title("Shares per bucket");
        t.notes = sel.notes(filter);
        doc.push_table(t);
        return Ok(doc);
    };
    // Align the grid with the user's selection so bucket starts are round numbers.
    let start = sel.range.map_or(first, |(a, _)| a.min(first));
    let buckets = (last - start) / bucket_ns + 1;
    if buckets > MAX_BUCKETS {
        return Err(Error::TooManyBuckets {
            buckets,
            bucket_ns,
            max: MAX_BUCKETS,
        });
    }
    let counts = Counts::of(&sel, &mut g, (start, bucket_ns), buckets as usize);
    let mut shares = counts.shares_table(&g, &Weight::of(profile), top_n);
    shares.notes = sel.notes(filter);
    doc.push_table(shares);
    doc.push_table(counts.peaks_table(&g, group_by, top_n, sel.total));
    Ok(doc)
}

/// The selected samples counted per group, per bucket and overall.
struct Counts {
    start: u64,
    bucket_ns: u64,
    /// The profile's time origin.
    t0: u64,
    per_bucket: Vec<HashMap<u32, Acc>>,
    bucket_total: Vec<Acc>,
    overall: Vec<Acc>,
    /// Group ids by overall weight, then samples, then name.
    by_total: Vec<u32>,
}

impl Counts {
    fn of(
        sel: &Selection,
        g: &mut Grouper,
        (start, bucket_ns): (u64, u64),
        buckets: usize,
    ) -> Counts {
        let mut per_bucket: Vec<HashMap<u32, Acc>> = vec![HashMap::default(); buckets];
        let mut bucket_total = vec![Acc::default(); buckets];
        let mut overall: Vec<Acc> = Vec::new();
        for s in &sel.samples {
            let b = ((s.time_ns - start) / bucket_ns) as usize;
            let id = g.self_group(s);
            overall.resize(g.len(), Acc::default());
            overall[id as usize].add(s);
            per_bucket[b].entry(id).or_default().add(s);
            bucket_total[b].add(s);
        }
        let mut by_total: Vec<u32> = (0..g.len() as u32).collect();
        by_total.sort_by(|&a, &b| {
            let (oa, ob) = (overall[a as usize], overall[b as usize]);
            ob.weight
                .cmp(&oa.weight)
                .then(ob.samples.cmp(&oa.samples))
                .then_with(|| g.key(a).cmp(g.key(b)))
        });
        Counts {
            start,
            bucket_ns,
            t0: sel.t0,
            per_bucket,
            bucket_total,
            overall,
            by_total,
        }
    }

    /// Start of bucket `b` in ms from the profile's first sample.
    fn ms(&self, b: usize) -> f64 {
        (self.start + b as u64 * self.bucket_ns - self.t0) as f64 / 1e6
    }

    /// Table 1: per bucket, samples, total and the share of each of the top groups.
    fn shares_table(&self, g: &Grouper, w: &Weight, top_n: usize) -> Table {
        let top: Vec<u32> = self.by_total.iter().copied().take(top_n).collect();
        let mut cols = vec![
            Column::right("Start").with_unit("ms"),
            Column::right("Samples"),
            Column::right(w.total_label()),
        ];
        cols.extend(
            unique_names(top.iter().map(|&id| g.key(id).name()))
                .into_iter()
                .map(Column::right),
        );
        cols.push(Column::right(OTHER));
        let mut shares = Table::new(cols).with_title(format!(
            "Shares per bucket of {:.3} ms (top {} by {})",
            self.bucket_ns as f64 / 1e6,
            top.len(),
            w.total_label()
        ));
        for (b, map) in self.per_bucket.iter().enumerate() {
            let tot = self.bucket_total[b];
            let mut row = vec![
                Cell::float(self.ms(b), 3),
                Cell::UInt(tot.samples),
                w.cell(tot.weight),
            ];
            if tot.samples == 0 {
                row.extend(std::iter::repeat_n(Cell::Empty, top.len() + 1));
            } else {
                let mut in_top = Acc::default();
                for id in &top {
                    let a = map.get(id).copied().unwrap_or_default();
                    in_top.samples += a.samples;
                    in_top.weight += a.weight;
                    row.push(Cell::Percent(share(a, tot)));
                }
                let other = Acc {
                    samples: tot.samples - in_top.samples,
                    weight: tot.weight.saturating_sub(in_top.weight),
                };
                row.push(Cell::Percent(share(other, tot)));
            }
            shares.push_row(row);
        }
        shares
    }

    /// Per group: (id, overall share, peak share, peak bucket, peak / overall), in the
    /// order of `by_total`. Iterating buckets in order and replacing only on a strictly
    /// higher share makes the earliest bucket win ties.
    fn peaks(&self, groups: usize, total: Acc) -> Vec<(u32, f64, f64, usize, f64)> {
        let mut peak: Vec<(f64, usize)> = vec![(0.0, 0); groups];
        for (b, map) in self.per_bucket.iter().enumerate() {
            for (&id, &a) in map {
                let s = share(a, self.bucket_total[b]);
                let p = &mut peak[id as usize];
                if s > p.0 || (s == p.0 && b < p.1) {
                    *p = (s, b);
                }
            }
        }
        self.by_total
            .iter()
            .map(|&id| {
                let o = share(self.overall[id as usize], total);
                let (p, b) = peak[id as usize];
                (id, o, p, b, if o > 0.0 { p / o } else { 0.0 })
            })
            .collect()
    }

    /// Table 2: the groups by peak share / overall share.
    fn peaks_table(&self, g: &Grouper, group_by: GroupBy, top_n: usize, total: Acc) -> Table {
        let rows = self.peaks(g.len(), total);
        let mut order: Vec<usize> = (0..rows.len()).collect();
        // Compare at the printed precision so that ulp-level noise between two groups that
        // both ran in a single burst cannot decide their order; then peak share, then name.
        let q = |v: f64, scale: f64| (v * scale).round() as i64;
        order.sort_by(|&x, &y| {
            let (a, b) = (&rows[x], &rows[y]);
            q(b.4, 100.0)
                .cmp(&q(a.4, 100.0))
                .then(q(b.2, 1e4).cmp(&q(a.2, 1e4)))
                .then_with(|| g.key(a.0).cmp(g.key(b.0)))
        });
        let mut cols = group_by.label_columns();
        cols.extend([
            Column::right("Samples"),
            Column::right("Overall %"),
            Column::right("Peak %"),
            Column::right("Peak at").with_unit("ms"),
            Column::right("Peak / overall"),
        ]);
        let mut peaks = Table::new(cols).with_title("Peaks: groups by peak share / overall share");
        for &i in order.iter().take(top_n) {
            let (id, o, p, b, ratio) = rows[i];
            let mut row = g.key(id).cells();
            row.extend([
                Cell::UInt(self.overall[id as usize].samples),
                Cell::Percent(o),
                Cell::Percent(p),
                Cell::float(self.ms(b), 3),
                Cell::float(ratio, 2),
            ]);
            peaks.push_row(row);
        }
        if rows.len() > top_n {
            peaks.push_note(format!("Showing {} of {} groups.", top_n, rows.len()));
        }
        peaks.push_note("A group that ran in one burst has a ratio near the number of buckets; a steady one near 1.");
        peaks
    }
}

/// Column names must be unique (they are JSON keys): repeated names get ` #2`, ` #3`.
fn unique_names(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::default();
    names
        .map(|n| {
            let c = seen.entry(n.clone()).or_insert(0);
            *c += 1;
            if *c == 1 && n != OTHER {
                n
            } else {
                format!("{n} #{c}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Builder, MS};
    use kairos_report::Block;

    fn table(d: &Document, i: usize) -> &Table {
        match &d.blocks[i] {
            Block::Table(t) => t,
            Block::Section(_) => unreachable!(),
        }
    }

    /// 100 ms of `steady`, with `burst` running 3 ms once around 50 ms, and `blip` once.
    fn bursty() -> Profile {
        let mut b = Builder::new();
        let t = b.thread(1, 1, "app");
        for i in 0..100u64 {
            let name = match i {
                50..=52 => "burst",
                80 => "blip",
                _ => "steady",
            };
            b.sample(1_000_000_000 + i * MS, t, &["main", name]);
        }
        b.build()
    }

    #[test]
    fn intermittent_function_floats_up() {
        let d =
            timeline(&bursty(), &Filter::default(), 10 * MS, GroupBy::Function, 2).expect("runs");
        let shares = table(&d, 0);
        assert_eq!(shares.rows.len(), 10);
        let names: Vec<&str> = shares.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "Start",
                "Samples",
                "CPU time",
                "steady (app)",
                "burst (app)",
                "[other]"
            ]
        );
        assert_eq!(shares.rows[5][4], Cell::Percent(30.0));
        assert_eq!(shares.rows[5][0], Cell::float(50.0, 3));
        let peaks = table(&d, 1);
        assert_eq!(peaks.rows[0][0], Cell::text("burst"));
        assert_eq!(peaks.rows[0][5], Cell::float(50.0, 3));
        assert_eq!(peaks.rows[1][0], Cell::text("blip")); // same ratio, lower peak
        assert_eq!(peaks.rows.len(), 2);
    }

    #[test]
    fn rejects_bad_buckets_and_handles_empty() {
        let p = bursty();
        assert_eq!(
            timeline(&p, &Filter::default(), 0, GroupBy::Function, 3).err(),
            Some(Error::ZeroBucket)
        );
        assert!(matches!(
            timeline(&p, &Filter::default(), 1, GroupBy::Function, 3),
            Err(Error::TooManyBuckets { .. })
        ));
        let d = timeline(
            &Profile::default(),
            &Filter::default(),
            MS,
            GroupBy::Thread,
            3,
        )
        .expect("runs");
        assert!(table(&d, 0).rows.is_empty());
        let f = Filter {
            time_range: Some((200 * MS, 300 * MS)),
            ..Filter::default()
        };
        assert!(
            table(&timeline(&p, &f, MS, GroupBy::Cpu, 3).expect("runs"), 0)
                .rows
                .is_empty()
        );
    }

    #[test]
    fn grid_starts_at_filter_range() {
        let f = Filter {
            time_range: Some((45 * MS, 60 * MS)),
            ..Filter::default()
        };
        let d = timeline(&bursty(), &f, 5 * MS, GroupBy::Function, 0).expect("runs");
        let t = table(&d, 0);
        let starts: Vec<&Cell> = t.rows.iter().map(|r| &r[0]).collect();
        assert_eq!(
            starts,
            [
                &Cell::float(45.0, 3),
                &Cell::float(50.0, 3),
                &Cell::float(55.0, 3)
            ]
        );
        assert_eq!(t.rows[1][3], Cell::Percent(100.0)); // top 0: [other] is everything
    }

    #[test]
    fn duplicate_names_are_made_unique() {
        assert_eq!(
            unique_names(["a", "a", "[other]"].map(String::from).into_iter()),
            ["a", "a #2", "[other] #1"]
        );
    }
}
