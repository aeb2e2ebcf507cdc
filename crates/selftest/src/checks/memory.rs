//! Address sampling and watchpoints, held against the programs' own truth: perf has no
//! address sampling without a PMU (`perf mem` needs PEBS or IBS), and no way to watch an
//! address that exists only once the program runs (its breakpoint events take a fixed
//! address). `three_arrays` measures how its time splits over three arrays and prints
//! where they are; `false_sharing` prints each thread's counter offset.

use kairos_analysis_memory_access::Source;
use kairos_platform::names;

use crate::context::{table_rows, Ctx, Step};
use crate::programs::{self, Range, Worker};
use crate::verdict::{share_tolerance, Figure, Line, Tolerance, Unit};

pub(crate) const ADDRESS_SAMPLING: &str = "address-sampling";
pub(crate) const WATCHPOINTS: &str = "watchpoints";

const ARRAYS_SECONDS: &str = "1";
/// The least tolerance of an array's share, points.
const ARRAY_FLOOR: f64 = 3.0;
/// 1.5 G increments (about 1 s here): long enough for sampling to find the shared line
/// and for the watchpoints armed on it to be hit (at 300 M the program could end first).
const FS_ARGS: [&str; 2] = ["2", "1500000000"];

/// Each range's share (percent) of the addresses that fell in any of them, and how many did.
pub(crate) fn shares(addrs: impl Iterator<Item = u64>, ranges: &[Range]) -> (Vec<f64>, u64) {
    let mut n = vec![0u64; ranges.len()];
    for a in addrs {
        if let Some(i) = programs::range_of(ranges, a) {
            n[i] += 1;
        }
    }
    let total: u64 = n.iter().sum();
    let s = n
        .iter()
        .map(|&c| {
            if total == 0 {
                0.0
            } else {
                100.0 * c as f64 / total as f64
            }
        })
        .collect();
    (s, total)
}

pub(crate) fn array_figures(
    ranges: &[Range],
    kairos: &[f64],
    n: u64,
    truth: &[(String, f64)],
) -> Vec<Figure> {
    ranges
        .iter()
        .zip(kairos)
        .map(|(r, &k)| {
            let t = truth
                .iter()
                .find(|(name, _)| *name == r.name)
                .map(|(_, v)| *v);
            Figure::new(
                format!("{} share", r.name),
                Unit::Percent,
                // No address in any array: no share to hold against the program's.
                (n > 0).then_some(k),
                t,
                share_tolerance(t.unwrap_or(k), n, 0, ARRAY_FLOOR),
            )
        })
        .collect()
}

pub(crate) fn address_sampling(ctx: &mut Ctx) -> Line {
    let against = format!("three_arrays {ARRAYS_SECONDS}'s own measurement of its time per array (perf has no address sampling without a PMU)");
    let run = || -> Step<Line> {
        let na = |why: String| Line::not_available(ADDRESS_SAMPLING, why);
        ctx.capability(names::ADDRESS_SAMPLING)
            .map_err(|why| na(format!("kairos: {why}")))?;
        let prog = ctx.sample("three_arrays").map_err(na)?;
        let dir = ctx.path(ADDRESS_SAMPLING);
        let knobs = [
            "source=registers",
            "sampling-interval-us=50",
            "numa=off",
            "track-allocations=off",
        ];
        let o = ctx
            .collect("memory-access", &dir, &knobs, &prog, &[ARRAYS_SECONDS])
            .map_err(|e| Line::disagrees(ADDRESS_SAMPLING, &against, e))?;
        let (Some(ranges), Some(truth)) = (
            programs::three_arrays_ranges(&o.stdout),
            programs::three_arrays_shares(&o.stdout),
        ) else {
            return Err(na(format!(
                "three_arrays did not print its arrays and shares: {}",
                o.stdout.trim()
            )));
        };
        let built =
            kairos_analysis_memory_access::tables::read(&dir.join("tables")).map_err(|e| {
                Line::disagrees(
                    ADDRESS_SAMPLING,
                    &against,
                    format!("kairos's accesses cannot be read: {e}"),
                )
            })?;
        let (k, n) = shares(
            built
                .samples
                .iter()
                .filter(|s| s.source == Source::Registers)
                .map(|s| s.addr),
            &ranges,
        );
        Ok(Line::judged(
            ADDRESS_SAMPLING,
            &against,
            format!("each array's share of the {n} sampled addresses in the arrays, within {ARRAY_FLOOR} points or 3 standard deviations"),
            array_figures(&ranges, &k, n, &truth),
        ))
    };
    run().unwrap_or_else(|l| l)
}

/// `0..7` -> (0, 7).
fn offsets(s: &str) -> Option<(i64, i64)> {
    let (a, b) = s.split_once("..")?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// From `report cache-lines --format json`: whether a line shared by the threads is
/// confirmed false sharing; how many of the workers had hits; the share of hits that are
/// on the hitting thread's own 8-byte counter.
pub(crate) fn watch_figures(doc: &serde_json::Value, workers: &[Worker]) -> Vec<Figure> {
    let confirmed = table_rows(doc, "Cache lines").iter().any(|r| {
        r["Verdict"] == "false sharing"
            && r["Confirmed"] == "yes"
            && r["Threads"].as_u64().unwrap_or(0) >= 2
    });
    let mut hits_total = 0u64;
    let mut own = 0u64;
    let mut threads = std::collections::BTreeSet::new();
    for r in table_rows(doc, "Watchpoint hits by thread") {
        let n = r["Write hits"].as_u64().unwrap_or(0) + r["Other hits"].as_u64().unwrap_or(0);
        hits_total += n;
        let tid = r["Thread"].as_u64();
        let Some(w) = workers.iter().find(|w| Some(w.tid) == tid) else {
            continue;
        };
        threads.insert(w.tid);
        let at = r["Offsets"].as_str().and_then(offsets);
        if at == Some((w.offset as i64, w.offset as i64 + 7)) {
            own += n;
        }
    }
    let exact = Tolerance::Absolute(0.0);
    vec![
        Figure::new(
            "counters' line confirmed false sharing",
            Unit::Flag,
            Some(confirmed as u8 as f64),
            Some(1.0),
            exact,
        ),
        Figure::new(
            "threads with hits",
            Unit::Count,
            Some(threads.len() as f64),
            Some(workers.len() as f64),
            exact,
        ),
        Figure::new(
            "hits on the thread's own counter",
            Unit::Percent,
            (hits_total > 0).then(|| 100.0 * own as f64 / hits_total as f64),
            Some(100.0),
            exact,
        ),
    ]
}

pub(crate) fn watchpoints(ctx: &mut Ctx) -> Line {
    let against = format!(
        "false_sharing {}'s own threads and counter offsets (perf has no watchpoint on an address known only at run time)",
        FS_ARGS.join(" ")
    );
    let run = || -> Step<Line> {
        let na = |why: String| Line::not_available(WATCHPOINTS, why);
        ctx.capability(names::WATCHPOINTS)
            .map_err(|why| na(format!("kairos: {why}")))?;
        // The candidate lines come from address sampling (or the PMU's addresses).
        if ctx.capability(names::ADDRESS_SAMPLING).is_err()
            && ctx.capability(names::PEBS).is_err()
            && ctx.capability(names::IBS).is_err()
        {
            return Err(na("kairos: watchpoints are armed on lines that sampled addresses found shared, and this machine samples no addresses".into()));
        }
        let prog = ctx.sample("false_sharing").map_err(na)?;
        let dir = ctx.path(WATCHPOINTS);
        let o = ctx
            .collect(
                "memory-access",
                &dir,
                &["watchpoints=on", "sampling-interval-us=200", "numa=off"],
                &prog,
                &FS_ARGS,
            )
            .map_err(|e| Line::disagrees(WATCHPOINTS, &against, e))?;
        let Some((workers, mode)) = programs::false_sharing(&o.stdout) else {
            return Err(na(format!(
                "false_sharing did not print its threads: {}",
                o.stdout.trim()
            )));
        };
        let doc = ctx
            .report_json("cache-lines", &dir)
            .map_err(|e| Line::disagrees(WATCHPOINTS, &against, e))?;
        Ok(Line::judged(
            WATCHPOINTS,
            &against,
            format!("{} threads on 8-byte counters of one line ({mode}): the line confirmed, every thread's hits, each at its own counter, exactly", workers.len()),
            watch_figures(&doc, &workers),
        ))
    };
    run().unwrap_or_else(|l| l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Verdict;

    fn ranges() -> Vec<Range> {
        vec![
            Range {
                name: "heap_array".into(),
                start: 0x1000,
                len: 0x100,
            },
            Range {
                name: "bss_array".into(),
                start: 0x2000,
                len: 0x100,
            },
            Range {
                name: "data_array".into(),
                start: 0x3000,
                len: 0x100,
            },
        ]
    }

    #[test]
    fn array_shares_against_the_programs_measurement() {
        // This VM: 2,045 addresses in the arrays, split 50.7 / 29.0 / 20.1; the program
        // measured 49.8 / 30.1 / 20.0.
        let addrs = std::iter::repeat_n(0x1010, 1039)
            .chain(std::iter::repeat_n(0x20f8, 595))
            .chain(std::iter::repeat_n(0x3000, 411))
            .chain([0x9999, 0x0]);
        let (k, n) = shares(addrs, &ranges());
        assert_eq!(n, 2045);
        assert!((k[0] - 50.8).abs() < 0.1, "{k:?}");
        let truth = vec![
            ("heap_array".to_string(), 49.8),
            ("bss_array".to_string(), 30.1),
            ("data_array".to_string(), 20.0),
        ];
        let l = Line::judged(
            ADDRESS_SAMPLING,
            "program",
            "x",
            array_figures(&ranges(), &k, n, &truth),
        );
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        // Addresses that miss the arrays (a wrong register decoded): the shares move.
        let addrs = std::iter::repeat_n(0x1010, 1039).chain(std::iter::repeat_n(0x3000, 1000));
        let (k, n) = shares(addrs, &ranges());
        let l = Line::judged(
            ADDRESS_SAMPLING,
            "program",
            "x",
            array_figures(&ranges(), &k, n, &truth),
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
        // No address in the arrays at all.
        let (k, n) = shares(std::iter::empty(), &ranges());
        let l = Line::judged(
            ADDRESS_SAMPLING,
            "program",
            "x",
            array_figures(&ranges(), &k, n, &truth),
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
    }

    fn cache_lines(confirmed: &str, hits: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"title": null, "blocks": [
            {"kind": "table", "title": "Cache lines", "notes": [], "rows": [
                {"Line": "0x560d8855c280", "Verdict": "false sharing", "Threads": 2, "Confirmed": confirmed},
                {"Line": "0x7f2727c03c00", "Verdict": "none", "Threads": 1, "Confirmed": "—"}
            ]},
            {"kind": "table", "title": "Watchpoint hits by thread", "notes": [], "rows": hits}
        ]})
    }

    fn workers() -> Vec<Worker> {
        vec![
            Worker {
                tid: 9228,
                offset: 0,
            },
            Worker {
                tid: 9229,
                offset: 8,
            },
        ]
    }

    #[test]
    fn watch_hits_against_the_programs_threads() {
        // This VM's report of false_sharing 2 300000000.
        let doc = cache_lines(
            "yes",
            serde_json::json!([
                {"Line": "0x560d8855c280", "Offsets": "0..7", "Thread": 9228, "Write hits": 403, "Other hits": 0},
                {"Line": "0x560d8855c280", "Offsets": "8..15", "Thread": 9229, "Write hits": 703, "Other hits": 0}
            ]),
        );
        let l = Line::judged(WATCHPOINTS, "program", "x", watch_figures(&doc, &workers()));
        assert_eq!(l.verdict, Verdict::Agrees, "{}", l.figures_text());
        // A hit put on the other thread's counter.
        let doc = cache_lines(
            "yes",
            serde_json::json!([
                {"Line": "0x560d8855c280", "Offsets": "0..7", "Thread": 9228, "Write hits": 403, "Other hits": 0},
                {"Line": "0x560d8855c280", "Offsets": "0..7", "Thread": 9229, "Write hits": 3, "Other hits": 0}
            ]),
        );
        let l = Line::judged(WATCHPOINTS, "program", "x", watch_figures(&doc, &workers()));
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert!(
            l.figures_text()
                .starts_with("hits on the thread's own counter 99.3% vs 100.0%"),
            "{}",
            l.figures_text()
        );
        // No watchpoint ever hit: not confirmed, no thread, no share.
        let l = Line::judged(
            WATCHPOINTS,
            "program",
            "x",
            watch_figures(&cache_lines("—", serde_json::json!([])), &workers()),
        );
        assert_eq!(l.verdict, Verdict::Disagrees);
        assert_eq!(
            l.figures.iter().filter(|f| !f.agrees()).count(),
            3,
            "{}",
            l.figures_text()
        );
    }
}
