//! The reports of a latency result, as documents (text, CSV and JSON alike): `summary`,
//! `requests` (the distribution, a histogram and the slowest requests with their causes)
//! and `slow-vs-normal` (what slow requests do that normal ones do not, ranked by the
//! extra time each explains). The threshold of slow is stated in each.

use rustc_hash::FxHashMap as HashMap;

use kairos_report::{Cell, Column, Document, Section, Table};

use kairos_report::thousands;

use crate::cause::us;
use crate::model::{LatencyResult, Parts, Request};

const PERCENTILES: [(&str, f64); 4] =
    [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9)];

fn overview(r: &LatencyResult) -> Section {
    let slow = r
        .aggregate
        .as_ref()
        .map_or(r.requests.iter().filter(|q| q.slow).count() as u64, |a| {
            a.slow
        });
    let mut s = Section::new("Requests");
    s.push("Boundaries", Cell::text(&r.source));
    s.push("Requests", Cell::UInt(r.count()));
    if let Some(a) = &r.aggregate {
        s.push(
            "Kept in detail",
            Cell::text(format!(
                "{} requests of {} windows: {}",
                r.requests.len(),
                a.windows.iter().filter(|w| w.dir.is_some()).count(),
                a.bound
            )),
        );
    }
    s.push(
        "Slow",
        Cell::text(format!(
            "{} above {} ({})",
            thousands(slow),
            us(r.threshold_ns),
            r.threshold_how
        )),
    );
    if !r.unfinished.is_empty() {
        s.push("Never ended", Cell::UInt(r.unfinished.len() as u64));
    }
    if r.ends_without_begin > 0 {
        s.push("Ends without a begin", Cell::UInt(r.ends_without_begin));
    }
    if r.lost_boundaries > 0 || r.lost_records > 0 {
        s.push(
            "Records lost",
            Cell::text(format!(
                "{} boundaries, {} other records",
                r.lost_boundaries, r.lost_records
            )),
        );
    }
    s
}

fn distribution(r: &LatencyResult) -> Section {
    let mut s = Section::new("Duration");
    for (name, p) in PERCENTILES {
        s.push(name, Cell::ns(r.percentile(p)));
    }
    s.push("max", Cell::ns(r.max_ns()));
    s.push("mean", Cell::ns(r.mean_ns()));
    s
}

/// Power-of-two buckets of duration (1-2 us, 2-4 us, ...), from the shortest to the
/// longest request.
pub fn histogram(r: &LatencyResult) -> Vec<(u64, u64, u64)> {
    let d = r.durations();
    let (Some(&(lo, _)), Some(&(hi, _))) = (d.first(), d.last()) else {
        return Vec::new();
    };
    let bucket = |ns: u64| 63 - (ns.max(1000) / 1000).leading_zeros() as u64;
    let mut out: Vec<(u64, u64, u64)> = (bucket(lo)..=bucket(hi))
        .map(|b| ((1u64 << b) * 1000, (1u64 << (b + 1)) * 1000, 0))
        .collect();
    let first = bucket(lo);
    for (ns, n) in d {
        if let Some(x) = out.get_mut((bucket(ns) - first) as usize) {
            x.2 += n;
        }
    }
    out
}

fn histogram_table(r: &LatencyResult) -> Table {
    let h = histogram(r);
    let most = h.iter().map(|x| x.2).max().unwrap_or(1).max(1);
    let mut t = Table::new(vec![
        Column::right("From").with_unit("ns"),
        Column::right("To").with_unit("ns"),
        Column::right("Requests"),
        Column::left("Bar"),
    ])
    .with_title("Histogram");
    for (from, to, n) in h {
        let bar = "#".repeat(((n * 40).div_ceil(most)) as usize);
        let slow = if from >= r.threshold_ns { " slow" } else { "" };
        t.push_row(vec![
            Cell::ns(from),
            Cell::ns(to),
            Cell::UInt(n),
            Cell::text(format!("{bar}{slow}")),
        ]);
    }
    t
}

fn slowest_table(r: &LatencyResult, limit: usize) -> Table {
    let mut order: Vec<&Request> = r.requests.iter().collect();
    order.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.id.cmp(&b.id)));
    let mut t = Table::new(vec![
        Column::right("Request"),
        Column::right("Thread"),
        Column::right("Start").with_unit("s"),
        Column::right("Duration"),
        Column::right("On CPU"),
        Column::right("Off CPU"),
        Column::left("Main part"),
        Column::sentence("Cause"),
    ])
    .with_title("Slowest requests");
    for q in order.into_iter().take(limit) {
        let p = q.parts;
        t.push_row(vec![
            Cell::UInt(q.id),
            Cell::UInt(q.tid as u64),
            Cell::float(q.start_ns.saturating_sub(r.first_ns) as f64 / 1e9, 6),
            Cell::ns(q.duration_ns),
            Cell::ns(p.cpu_ns + p.fault_ns + p.syscall_ns + p.irq_ns),
            Cell::ns(p.blocked_ns + p.runnable_ns),
            Cell::text(&q.cause_kind),
            Cell::text(&q.cause),
        ]);
    }
    if r.requests.len() > limit {
        t.push_note(format!(
            "{} of {} requests; --limit N shows more",
            limit,
            r.requests.len()
        ));
    }
    t
}

pub fn requests(r: &LatencyResult, limit: Option<usize>) -> Document {
    let mut d = Document::new("Requests");
    d.push_section(overview(r));
    d.push_section(distribution(r));
    d.push_table(histogram_table(r));
    d.push_table(slowest_table(r, limit.unwrap_or(20)));
    if !r.unfinished.is_empty() {
        let mut t = Table::new(vec![
            Column::right("Request"),
            Column::right("Thread"),
            Column::sentence("Why"),
        ])
        .with_title("Requests that never ended");
        for u in r.unfinished.iter().take(limit.unwrap_or(20)) {
            t.push_row(vec![
                Cell::UInt(u.id),
                Cell::UInt(u.tid as u64),
                Cell::text(&u.why),
            ]);
        }
        d.push_table(t);
    }
    d
}

pub fn summary(r: &LatencyResult) -> Document {
    let mut d = Document::new("Request latency");
    d.push_section(overview(r));
    d.push_section(distribution(r));
    d.push_table(parts_table(r));
    d.push_table(slowest_table(r, 5));
    d
}

/// Means of a value over slow and normal requests.
fn means(r: &LatencyResult, f: impl Fn(&Request) -> u64) -> (f64, f64) {
    let (mut s, mut n, mut cs, mut cn) = (0u64, 0u64, 0u64, 0u64);
    for q in &r.requests {
        if q.slow {
            s += f(q);
            cs += 1;
        } else {
            n += f(q);
            cn += 1;
        }
    }
    (s as f64 / cs.max(1) as f64, n as f64 / cn.max(1) as f64)
}

fn parts_table(r: &LatencyResult) -> Table {
    let (ds, dn) = means(r, |q| q.duration_ns);
    let extra = (ds - dn).max(1.0);
    let mut t = Table::new(vec![
        Column::left("Part"),
        Column::right("Slow mean"),
        Column::right("Normal mean"),
        Column::right("Extra").with_unit("ns"),
        Column::right("Explains"),
    ])
    .with_title("Where the time goes, slow against normal requests");
    for (i, name) in Parts::NAMES.iter().enumerate() {
        let (s, n) = means(r, |q| q.parts.values()[i]);
        t.push_row(vec![
            Cell::text(*name),
            Cell::ns(s as u64),
            Cell::ns(n as u64),
            Cell::Int((s - n) as i64),
            Cell::Percent(100.0 * (s - n) / extra),
        ]);
    }
    t.push_row(vec![
        Cell::text("whole request"),
        Cell::ns(ds as u64),
        Cell::ns(dn as u64),
        Cell::Int((ds - dn) as i64),
        Cell::Percent(100.0),
    ]);
    t
}

/// One thing slow requests do: its kind, name, and per request its time.
/// A detail's kind and name, and its time in each request (by index) that has it.
type Detail = ((&'static str, String), HashMap<usize, u64>);

fn details(r: &LatencyResult) -> Vec<Detail> {
    let mut by: HashMap<(&'static str, String), HashMap<usize, u64>> = HashMap::default();
    for (i, q) in r.requests.iter().enumerate() {
        let mut add = |k: &'static str, name: String, ns: u64| {
            *by.entry((k, name)).or_default().entry(i).or_default() += ns
        };
        for &(f, ns) in &q.functions {
            add("function", r.function(f).to_string(), ns);
        }
        for w in &q.waits {
            let holder = if w.waker_tid > 0 {
                format!(
                    ", woken by a thread running {}",
                    if w.waker_function.is_empty() {
                        "?"
                    } else {
                        &w.waker_function
                    }
                )
            } else {
                ", woken from outside".into()
            };
            add(
                "blocked",
                format!("{} ({}){holder}", w.call, w.caller),
                w.ns,
            );
        }
        for p in &q.preemptions {
            add(
                "preempted by",
                format!(
                    "{} ({})",
                    if p.by_function.is_empty() {
                        "?"
                    } else {
                        &p.by_function
                    },
                    p.by_name
                ),
                p.ns,
            );
        }
        for s in &q.fault_sites {
            add("page faults", s.name.clone(), s.ns);
        }
        for s in &q.syscalls {
            add("system call", s.name.clone(), s.ns);
        }
        if q.parts.irq_ns > 0 {
            add("interrupts", "on its CPU".into(), q.parts.irq_ns);
        }
    }
    by.into_iter().collect()
}

/// Functions that most sampled normal requests run too (main, the request loop, the
/// common work): on a slow request's stacks as on every other, so they explain nothing.
fn shared_functions(r: &LatencyResult) -> Vec<String> {
    let sampled: Vec<&Request> = r
        .requests
        .iter()
        .filter(|q| !q.slow && q.samples > 0)
        .collect();
    let mut count: HashMap<u32, usize> = HashMap::default();
    for q in &sampled {
        for &(f, _) in &q.functions {
            *count.entry(f).or_default() += 1;
        }
    }
    let mut v: Vec<String> = count
        .into_iter()
        .filter(|&(_, n)| sampled.len() >= 10 && n * 2 > sampled.len())
        .map(|(f, _)| r.function(f).to_string())
        .collect();
    v.sort();
    v
}

pub fn slow_vs_normal(r: &LatencyResult, limit: Option<usize>) -> Document {
    let mut d = Document::new("Slow against normal requests");
    let slow: Vec<usize> = (0..r.requests.len())
        .filter(|&i| r.requests[i].slow)
        .collect();
    let (ns, nn) = (
        slow.len().max(1) as f64,
        (r.requests.len() - slow.len()).max(1) as f64,
    );
    let mut s = overview(r);
    let (ds, dn) = means(r, |q| q.duration_ns);
    s.push(
        "Extra time of a slow request",
        Cell::ns((ds - dn).max(0.0) as u64),
    );
    d.push_section(s);
    d.push_table(parts_table(r));
    let extra = (ds - dn).max(1.0);
    let shared = shared_functions(r);
    let mut rows: Vec<(f64, Vec<Cell>)> = details(r)
        .into_iter()
        .filter(|((kind, name), _)| !(*kind == "function" && shared.contains(name)))
        .filter_map(|((kind, name), per)| {
            let (mut s_ns, mut n_ns, mut s_in, mut n_in) = (0u64, 0u64, 0u64, 0u64);
            for (&i, &v) in &per {
                if r.requests[i].slow {
                    s_ns += v;
                    s_in += 1;
                } else {
                    n_ns += v;
                    n_in += 1;
                }
            }
            let (ms, mn) = (s_ns as f64 / ns, n_ns as f64 / nn);
            let more = ms - mn;
            (more > 0.0).then(|| {
                (
                    more,
                    vec![
                        Cell::text(kind),
                        Cell::text(name),
                        Cell::ns(ms as u64),
                        Cell::ns(mn as u64),
                        Cell::ns(more as u64),
                        Cell::Percent(100.0 * s_in as f64 / ns),
                        Cell::Percent(100.0 * n_in as f64 / nn),
                        Cell::Percent(100.0 * more / extra),
                    ],
                )
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| format!("{:?}", a.1).cmp(&format!("{:?}", b.1)))
    });
    let mut t = Table::new(vec![
        Column::left("Kind"),
        Column::left("What"),
        Column::right("Slow mean"),
        Column::right("Normal mean"),
        Column::right("Extra"),
        Column::right("In slow"),
        Column::right("In normal"),
        Column::right("Explains"),
    ])
    .with_title("What slow requests do more, by the extra time per slow request");
    let total = rows.len();
    let limit = limit.unwrap_or(25);
    for (_, row) in rows.into_iter().take(limit) {
        t.push_row(row);
    }
    t.push_note("Functions are sampled (inclusive: a function counts the time of what it calls, so a caller and its callee explain the same time); the other kinds are measured.");
    if !shared.is_empty() {
        t.push_note(format!(
            "Left out, as most sampled normal requests run them too: {}.",
            shared.join(", ")
        ));
    }
    if total > limit {
        t.push_note(format!("{limit} of {total} rows; --limit N shows more"));
    }
    d.push_table(t);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_has_power_of_two_buckets_covering_every_request() {
        let mut r = LatencyResult::default();
        for (i, d) in [1_500u64, 3_000, 3_500, 40_000].into_iter().enumerate() {
            r.requests.push(Request {
                id: i as u64,
                duration_ns: d,
                ..Request::default()
            });
        }
        let h = histogram(&r);
        assert_eq!(h.first().map(|x| (x.0, x.1, x.2)), Some((1_000, 2_000, 1)));
        assert_eq!(h.iter().map(|x| x.2).sum::<u64>(), 4);
        assert_eq!(h.last().map(|x| (x.0, x.2)), Some((32_000, 1)));
    }
}
