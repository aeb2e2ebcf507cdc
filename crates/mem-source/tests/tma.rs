//! Memory_Bound and its split from Intel's perfmon metric files (shared/fixtures/perfmon),
//! through kairos-metrics. The fixtures hold formulas only, no recorded counts: the counts
//! below are made-up inputs (not measurements), and every expected value is worked out by
//! hand from the formula printed in the file.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;
use std::path::PathBuf;

use kairos_mem_source::tma::{memory_bound, memory_bound_events, metrics_file_for, Part, TmaError};
use kairos_mem_source::CpuId;
use kairos_metrics::{load_perfmon, PerfmonMetric};

fn perfmon() -> PathBuf {
    let dir = std::env::var_os("KAIROS_PERFMON_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/perfmon")
        });
    assert!(
        dir.join("mapfile.csv").is_file(),
        "perfmon fixtures not found in {}: set KAIROS_PERFMON_FIXTURES",
        dir.display()
    );
    dir
}

/// The metric file of a CPU, found through mapfile.csv as a product would.
fn metrics(cpuid: &str) -> Vec<PerfmonMetric> {
    let dir = perfmon();
    let map = std::fs::read_to_string(dir.join("mapfile.csv")).unwrap();
    let file = metrics_file_for(&map, &CpuId::from_perf_cpuid(cpuid).unwrap()).unwrap();
    load_perfmon(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
}

fn map(v: &[(&str, f64)]) -> HashMap<String, f64> {
    v.iter().map(|(k, x)| (k.to_string(), *x)).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn mapfile_lookup() {
    let map = std::fs::read_to_string(perfmon().join("mapfile.csv")).unwrap();
    let file = |s| metrics_file_for(&map, &CpuId::from_perf_cpuid(s).unwrap());
    assert_eq!(
        file("GenuineIntel,6,85,4").as_deref(),
        Some("SKX/metrics/skylakex_metrics.json")
    );
    assert_eq!(
        file("GenuineIntel,6,85,7").as_deref(),
        Some("CLX/metrics/cascadelakex_metrics.json")
    );
    assert_eq!(
        file("GenuineIntel,6,143,8").as_deref(),
        Some("SPR/metrics/sapphirerapids_metrics.json")
    );
    assert_eq!(
        file("GenuineIntel,6,106,6").as_deref(),
        Some("ICX/metrics/icelakex_metrics.json")
    );
    assert_eq!(file("AuthenticAMD,25,17,1"), None);
}

#[test]
fn skylake_sp_by_hand() {
    let m = metrics("GenuineIntel,6,85,4");
    let counts = map(&[
        ("CPU_CLK_UNHALTED.THREAD", 1e9),
        ("CPU_CLK_UNHALTED.THREAD_ANY", 2e9),
        ("CYCLE_ACTIVITY.STALLS_MEM_ANY", 300e6),
        ("EXE_ACTIVITY.BOUND_ON_STORES", 50e6),
        ("CYCLE_ACTIVITY.STALLS_TOTAL", 400e6),
        ("EXE_ACTIVITY.1_PORTS_UTIL", 100e6),
        ("EXE_ACTIVITY.2_PORTS_UTIL", 100e6),
        ("UOPS_RETIRED.RETIRE_SLOTS", 2e9),
        ("IDQ_UOPS_NOT_DELIVERED.CORE", 400e6),
        ("UOPS_ISSUED.ANY", 2.2e9),
        ("INT_MISC.RECOVERY_CYCLES", 50e6),
        ("INT_MISC.RECOVERY_CYCLES_ANY", 100e6),
        ("CYCLE_ACTIVITY.STALLS_L1D_MISS", 200e6),
        ("CYCLE_ACTIVITY.STALLS_L2_MISS", 120e6),
        ("CYCLE_ACTIVITY.STALLS_L3_MISS", 70e6),
        ("MEM_LOAD_RETIRED.L2_HIT", 1e6),
        ("MEM_LOAD_RETIRED.FB_HIT", 0.5e6),
        ("MEM_LOAD_RETIRED.L1_MISS", 2e6),
        ("L1D_PEND_MISS.FB_FULL:c1", 1.25e6),
    ]);
    // SMT off: slots = 4 * clk = 4e9; retiring = 2e9 / 4e9 = 0.5;
    // backend = 1 - 0.4e9/4e9 - (2.2e9 + 4 * 50e6)/4e9 = 0.3;
    // memory = (300 + 50) / (400 + (100 + 0.5 * 100) + 50) * 0.3 = 350/600 * 0.3 = 0.175.
    let r = memory_bound(
        &m,
        &counts,
        &map(&[("HYPERTHREADING_ON", 0.0), ("THREADS_PER_CORE", 1.0)]),
    )
    .unwrap();
    assert!(close(r.memory_bound, 17.5), "{r:?}");
    // L1: (300 - 200)/1000 = 10%. L2: 1e6 * (1 + 0.25) / (1.25e6 + 1.25e6) * (200 - 120)/1000 = 4%.
    // L3: (120 - 70)/1000 = 5%. DRAM: 70/1000 + 80/1000 - 0.04 = 11%. Store: 50/1000 = 5%.
    for (part, want) in [
        (Part::L1, 10.0),
        (Part::L2, 4.0),
        (Part::L3, 5.0),
        (Part::Dram, 11.0),
        (Part::Store, 5.0),
    ] {
        assert!(
            r.part(part).is_some_and(|v| close(v, want)),
            "{part:?}: {:?}",
            r.part(part)
        );
    }
    assert_eq!(r.split.len(), 5);
    // SMT on: the per-core clocks are THREAD_ANY / 2 = 1e9, the same here, and recovery
    // cycles ANY / 2 = 50e6: the same result, through the other branch of each 'if'.
    let on = memory_bound(&m, &counts, &map(&[("HYPERTHREADING_ON", 1.0)])).unwrap();
    assert!(close(on.memory_bound, 17.5), "{on:?}");
    let ev = memory_bound_events(&m);
    assert!(
        ev.contains(&"L1D_PEND_MISS.FB_FULL:c1".to_string()) && ev.len() == 19,
        "{ev:?}"
    );
    let mut less = counts.clone();
    less.remove("CYCLE_ACTIVITY.STALLS_L3_MISS");
    let e = memory_bound(&m, &less, &map(&[("HYPERTHREADING_ON", 0.0)])).unwrap_err();
    assert!(
        matches!(&e, TmaError::Metric { metric, error: kairos_metrics::Error::MissingEvent(n) } if metric == "L3_Bound" && n == "CYCLE_ACTIVITY.STALLS_L3_MISS"),
        "{e}"
    );
}

#[test]
fn sapphire_rapids_by_hand() {
    let m = metrics("GenuineIntel,6,143,8");
    let counts = map(&[
        ("PERF_METRICS.MEMORY_BOUND", 30.0),
        ("PERF_METRICS.FRONTEND_BOUND", 20.0),
        ("PERF_METRICS.BAD_SPECULATION", 10.0),
        ("PERF_METRICS.RETIRING", 40.0),
        ("PERF_METRICS.BACKEND_BOUND", 30.0),
        ("CPU_CLK_UNHALTED.THREAD", 1e9),
        ("EXE_ACTIVITY.BOUND_ON_LOADS", 300e6),
        ("EXE_ACTIVITY.BOUND_ON_STORES", 50e6),
        ("MEMORY_ACTIVITY.STALLS_L1D_MISS", 200e6),
        ("MEMORY_ACTIVITY.STALLS_L2_MISS", 120e6),
        ("MEMORY_ACTIVITY.STALLS_L3_MISS", 70e6),
    ]);
    let r = memory_bound(&m, &counts, &HashMap::new()).unwrap();
    // 30 / (20 + 10 + 40 + 30) = 30%; L1 (300 - 200)/1000; L2 (200 - 120)/1000;
    // L3 (120 - 70)/1000; DRAM (L3_Miss_Bound) 70/1000; store 50/1000.
    assert!(close(r.memory_bound, 30.0), "{r:?}");
    for (part, want) in [
        (Part::L1, 10.0),
        (Part::L2, 8.0),
        (Part::L3, 5.0),
        (Part::Dram, 7.0),
        (Part::Store, 5.0),
    ] {
        assert!(
            r.part(part).is_some_and(|v| close(v, want)),
            "{part:?}: {:?}",
            r.part(part)
        );
    }
}

#[test]
fn every_memory_bound_formula_of_the_fixtures_parses() {
    let dir = perfmon();
    for f in [
        "SKX/metrics/skylakex_metrics.json",
        "ICX/metrics/icelakex_metrics.json",
        "SPR/metrics/sapphirerapids_metrics.json",
    ] {
        let m = load_perfmon(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
        // Every formula of the file parses (the TMA tree and the rest).
        for x in &m {
            kairos_metrics::parse(&x.formula).unwrap_or_else(|e| panic!("{f}: {}: {e}", x.name));
        }
        let ev = memory_bound_events(&m);
        assert!(ev.len() >= 5, "{f}: {ev:?}");
    }
}

/// Every event Memory_Bound needs on the three fixture CPUs has an encoding, and the
/// groups respect the counters: slots leads the topdown fractions, cycles leads the rest,
/// at most 4 general-purpose events per group, every group carries cycles.
#[test]
fn counter_groups_of_the_fixture_cpus() {
    use kairos_mem_source::perfmon_events::{Kind, PerfmonEvents};
    use kairos_mem_source::tma::{events_file_for, plan, CYCLES};
    let dir = perfmon();
    let map = std::fs::read_to_string(dir.join("mapfile.csv")).unwrap();
    for (cpuid, topdown) in [
        ("GenuineIntel,6,85,4", false),
        ("GenuineIntel,6,106,6", true),
        ("GenuineIntel,6,143,8", true),
    ] {
        let cpu = CpuId::from_perf_cpuid(cpuid).unwrap();
        let file = events_file_for(&map, &cpu).unwrap();
        let events =
            PerfmonEvents::load(&std::fs::read_to_string(dir.join(&file)).unwrap()).unwrap();
        let m = metrics(cpuid);
        let groups = plan(&m, &events, 4).unwrap_or_else(|e| panic!("{cpuid}: {e}"));
        let mut counted: Vec<String> = groups
            .iter()
            .flat_map(|g| std::iter::once(&g.leader).chain(&g.members))
            .map(|e| e.name.clone())
            .collect();
        for need in memory_bound_events(&m) {
            assert!(counted.contains(&need), "{cpuid}: {need} is counted");
        }
        assert_eq!(
            groups.iter().any(|g| g.leader.kind == Kind::Slots),
            topdown,
            "{cpuid}"
        );
        for g in &groups {
            let gp = g
                .members
                .iter()
                .chain([&g.leader])
                .filter(|e| e.kind == Kind::Raw)
                .count();
            assert!(gp <= 4, "{cpuid}: {gp} general-purpose events in one group");
            assert!(
                g.leader.name == CYCLES || g.members.iter().any(|e| e.name == CYCLES),
                "{cpuid}: cycles in every group"
            );
            assert!(
                g.members.iter().all(|e| e.kind != Kind::Slots),
                "{cpuid}: slots only leads"
            );
            if g.members.iter().any(|e| e.kind == Kind::Metric) {
                assert_eq!(
                    g.leader.kind,
                    Kind::Slots,
                    "{cpuid}: topdown fractions only under slots"
                );
            }
        }
        counted.sort();
        counted.dedup();
    }
}
